//! Helpers for the integration suite: real servers on 127.0.0.1 and ephemeral ports, each
//! stopped by its own PID when its handle drops, plus builders for deliveries.
//!
//! Every helper panics with a message that says what is missing (a built Worker, an installed
//! tool): a test that cannot reach its real parts fails, it never skips.

#![allow(clippy::unwrap_used, missing_docs)]

pub mod aws;
pub mod browser;
pub mod crm;
pub mod delivery;
pub mod edge;
pub mod forms;
pub mod http;
pub mod ministack;
pub mod policies;
pub mod postgres;
pub mod process;
pub mod proxy;
pub mod senders;
pub mod soak;
pub mod stack;
pub mod streams_standin;
pub mod stub_http;
pub mod template;
mod tidy;
pub mod worker;

pub use process::{free_port, now_millis, repo_root, stream_worker_binary, wait_until, TempDir};
