//! The integration suite: one binary, one module per part of the path.

#![allow(clippy::unwrap_used)]

mod answers;
mod console;
mod cost;
mod crm_batches;
mod crm_rules;
mod deploy_edge;
mod deployed;
mod edge_hostile;
mod edge_logs;
mod edge_promises;
mod edge_receiver;
mod lambda_mode;
mod listing;
mod log_hygiene;
mod mapped;
mod mapped_hubspot;
mod operate;
mod operate_faults;
mod profiles;
mod sinks;
mod sql_batches;
mod stream_worker;
mod whole_path;
