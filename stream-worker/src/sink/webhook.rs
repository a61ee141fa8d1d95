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
        let request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("idempotency-key", receipt_key)
            .body(lead.to_json().to_text());
        send(request).await.map(|_| ())
    }
}
