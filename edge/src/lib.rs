//! The edge receiver: a Cloudflare Worker that stores one receipt per webhook delivery.
//!
//! A thin shell around `shared`: it reads the configuration, collects the request, lets the
//! core decide, signs and sends the one conditional `PutItem` the core asks for, and renders
//! the core's decision with one log line. It makes no decision of its own, and it never uses
//! `respond_with_errors`, so no internal error text can reach a response.

#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod config;
#[cfg(feature = "runtime")]
pub mod dynamodb;
#[cfg(feature = "runtime")]
mod fetch;
#[cfg(feature = "runtime")]
pub mod isolate;
pub mod sigv4;

#[cfg(all(test, target_arch = "wasm32"))]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
