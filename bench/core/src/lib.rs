//! The edge's core path as a benchmark workload: the same functions the Worker calls, with the
//! same configuration, on a Static Forms delivery of a given size. `benches/core.rs` times it
//! natively with criterion; in Wasm, `bench/core/run.mjs` times the exports below from Node,
//! built with the Worker's release profile (`make bench`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use edge::config::Config;
use edge::sigv4::Signer;
use shared::headers::Headers;
use shared::put_item::StoreRequest;
use shared::receive::{receive, Delivery, Step};
use wasm_bindgen::prelude::wasm_bindgen;

/// The bearer token the workload's deliveries carry.
const TOKEN: &str = "bench-token-0123456789abcdef";
/// A fixed clock: 2026-11-30T00:00:00Z.
const NOW_MILLIS: u64 = 1_796_083_200_000;

/// One delivery and what the Worker holds while it handles it.
pub struct Case {
    config: Config,
    signer: Signer,
    headers: Headers,
    body: Vec<u8>,
}

impl Case {
    /// A delivery of about `size` bytes (its message padded), checked by the Worker's config.
    pub fn new(size: usize) -> Case {
        let vars = [
            ("RECEIPTS_TABLE", "receipts"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            ("WEBHOOK_BEARER_TOKENS", TOKEN),
        ];
        let config = Config::load(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
            .expect("the workload's configuration is valid");
        let signer = Signer::new(&config.endpoint, &config.region, config.credentials.clone());
        let id = "bench-submission-000001";
        let head = format!(
            r#"{{"event":"form.submitted","timestamp":1796083200,"data":{{"submissionId":"{id}","formData":{{"name":"Bench Visitor","email":"visitor@example.com","message":""#
        );
        let tail = r#""},"apiKey":"sf_bench_key","recipientEmail":"owner@example.com","attachments":[]}}"#;
        let pad = size.saturating_sub(head.len() + tail.len());
        let body = format!("{head}{}{tail}", "x".repeat(pad)).into_bytes();
        let headers = Headers::new([
            ("authorization".to_owned(), format!("Bearer {TOKEN}")),
            ("content-type".to_owned(), "application/json".to_owned()),
            ("idempotency-key".to_owned(), format!("staticforms:form.submitted:{id}")),
        ]);
        Case { config, signer, headers, body }
    }

    /// Everything the core decides for a new delivery: size and media type, authentication,
    /// envelope, idempotency key, fingerprint, receipt and the PutItem body. The request to sign.
    pub fn receive(&self) -> StoreRequest {
        let delivery = Delivery {
            profile: shared::profile::Profile::StaticForms,
            headers: &self.headers,
            body: &self.body,
            request_id: "bench-request",
            now_millis: NOW_MILLIS,
        };
        match receive(&self.config.policy, &delivery) {
            Step::Store(pending) => pending.request,
            Step::Respond(outcome, _) => panic!("the workload's delivery is refused: {outcome:?}"),
        }
    }

    /// Signs a request as the Worker does (the day's signing key cached, as in the Worker).
    pub fn sign(&self, request: &StoreRequest) -> usize {
        self.signer.sign(request, NOW_MILLIS).len()
    }

    /// The JSON parse alone (part of [`Case::receive`]).
    pub fn parse(&self) -> bool {
        shared::json::parse(&self.body).is_ok()
    }

    /// The body's size in bytes.
    pub fn body_len(&self) -> usize {
        self.body.len()
    }
}

thread_local! {
    static CASE: std::cell::RefCell<Option<Case>> = const { std::cell::RefCell::new(None) };
}

/// Wasm: prepares the delivery of about `size` bytes; returns its exact size.
#[wasm_bindgen]
pub fn prepare(size: usize) -> usize {
    let case = Case::new(size);
    let len = case.body_len();
    CASE.with(|c| *c.borrow_mut() = Some(case));
    len
}

/// Wasm: runs `step` (`"receive"`, `"sign"`, `"parse"` or `"path"`: receive then sign)
/// `iterations` times on the prepared delivery; returns a checksum so nothing is optimised away.
#[wasm_bindgen]
pub fn run(step: &str, iterations: u32) -> usize {
    CASE.with(|c| {
        let case = c.borrow();
        let case = case.as_ref().expect("prepare first");
        let request = case.receive();
        let mut sum = 0;
        for _ in 0..iterations {
            sum += match step {
                "receive" => case.receive().body.len(),
                "sign" => case.sign(&request),
                "parse" => usize::from(case.parse()),
                _ => case.sign(&case.receive()),
            };
        }
        sum
    })
}
