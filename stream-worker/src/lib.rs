//! The stream worker: turns receipts from the DynamoDB stream into exactly one lead each.
//!
//! It reads receipts (through Lambda's DynamoDB stream events, or through its own poller in
//! local mode), upserts each `RECEIVED` receipt's lead into a sink keyed by the submission ID,
//! then marks the receipt `COMPLETED` with a conditional update. Decisions come from `shared`
//! (`shared::stream::decide`, `shared::lead`); this crate does the I/O. It never deletes or
//! creates receipts, and it never writes a lead except through the sink's upsert.

pub mod backoff;
pub mod cli;
pub mod config;
pub mod console;
pub mod handler;
pub mod inventory;
pub mod listing;
pub mod mapping;
pub mod metrics;
pub mod operate;
pub mod poll;
pub mod profiles;
pub mod receipts;
pub mod secrets;
pub mod sink;
