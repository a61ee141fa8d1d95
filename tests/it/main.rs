//! The integration suite: one binary, one module per part of the path.

mod edge_receiver;
