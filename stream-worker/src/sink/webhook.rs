//! The generic sink: POST the lead as JSON to a URL, with the receipt's key as `Idempotency-Key`.

use shared::lead::Lead;

use super::http::send;
use super::{LeadSink, SinkError};

/// POSTs leads to one URL.
pub struct Webhook {
    client: reqwest::Client,
    url: String,
}

impl Webhook {
    pub fn new(client: reqwest::Client, url: &str) -> Webhook {
        Webhook { client, url: url.to_owned() }
    }
}

impl LeadSink for Webhook {
    async fn upsert(&self, lead: &Lead, receipt_key: &str) -> Result<(), SinkError> {
        // The key holds the submission ID, which may be any text without controls: sent as its
        // UTF-8 bytes. Should a value ever be refused, that is this lead's problem (FAILED),
        // not an unreachable sink retried forever.
        let key = reqwest::header::HeaderValue::from_bytes(receipt_key.as_bytes())
            .map_err(|_| SinkError::Permanent { reason: "sink_unsendable_key" })?;
        let request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(lead.to_json().to_text());
        send(request).await.map(|_| ())
    }
}
