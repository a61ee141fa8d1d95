//! The webhook receiver's core: every check and decision, as pure functions over plain data.
//!
//! This crate decides; it does not act. It performs no I/O, reads no clock, no environment and
//! no randomness: callers pass the request, the configuration ([`receive::Policy`]) and `now`,
//! and get back decisions and requests to make ([`receive::Step`], [`put_item::StoreRequest`]).
//! It is `#![no_std]` with `alloc`, so the same code runs in the Cloudflare Worker (Wasm), in
//! the native stream worker, and in headless Chromium under test.
//!
//! The request path: [`receive::route`], then [`receive::receive`] (size, media type,
//! [`auth`], [`envelope`], [`key`], [`fingerprint`], [`receipt`], [`put_item`]), then the
//! store's answer through [`store::classify_put`] and [`receive::PendingPut::finish`] to a
//! [`decision::Outcome`], whose [`decision::Outcome::response`] is the decision table.
//! Downstream, [`lead`] maps receipts to leads and [`default_fields`] leads to a CRM's standard
//! fields and notes; [`log`] is the one log record per request.

#![no_std]
#![warn(missing_docs)]
#![warn(clippy::alloc_instead_of_core, clippy::std_instead_of_alloc, clippy::std_instead_of_core)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod auth;
pub mod backoff;
pub mod config;
pub mod decimal;
pub mod decision;
pub mod default_fields;
pub mod dynamo;
pub mod envelope;
pub mod field_map;
pub mod fingerprint;
pub mod form;
pub mod headers;
pub mod hex;
pub mod hmac_scheme;
pub mod json;
pub mod key;
pub mod lead;
pub mod log;
pub mod mapping;
pub mod metrics;
pub mod profile;
pub mod put_item;
pub mod receipt;
pub mod receive;
pub mod secret;
pub mod store;
pub mod stream;
pub mod time;
pub mod typed;

#[cfg(all(test, target_arch = "wasm32"))]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
