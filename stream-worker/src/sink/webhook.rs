//! The generic sink: POST the lead as JSON to a URL, with the receipt's key as `Idempotency-Key`,
//! signed per Standard Webhooks so the receiver can tell this worker from anyone else.

use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderValue;
use shared::auth::signature_header;
use shared::lead::Lead;
use shared::secret::SigningSecret;

use super::contract::{LeadSink, SinkError};
use super::http::send;

/// POSTs leads to one URL.
pub struct Webhook {
    client: reqwest::Client,
    url: String,
    secret: SigningSecret,
}

impl Webhook {
    pub fn new(client: reqwest::Client, url: &str, secret: SigningSecret) -> Webhook {
        Webhook { client, url: url.to_owned(), secret }
    }
}

/// The `webhook-id` of a submission's lead: `msg_` and the hex SHA-256 of the submission ID.
/// Stable across attempts, and plain ASCII without `.` as the specification asks of message
/// IDs (the signed content is `id.timestamp.body`; a sender-chosen ID could hold anything).
pub fn message_id(submission_id: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("msg_{}", shared::hex::encode(&Sha256::digest(submission_id.as_bytes())))
}

impl LeadSink for Webhook {
    async fn upsert(&self, lead: &Lead, receipt_key: &str) -> Result<(), SinkError> {
        // The key holds the submission ID, which may be any text without controls: sent as its
        // UTF-8 bytes. Should a value ever be refused, that is this lead's problem (FAILED),
        // not an unreachable sink retried forever.
        let unsendable = |_| SinkError::Permanent { reason: "sink_unsendable_key" };
        let key = HeaderValue::from_bytes(receipt_key.as_bytes()).map_err(unsendable)?;
        // Standard Webhooks: `webhook-id` is the same on every attempt for one submission, so the
        // receiver can deduplicate by it; the signature covers id, timestamp and body.
        let id = message_id(&lead.external_id);
        let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()).to_string();
        let body = lead.to_json().to_text();
        let signature = signature_header(&self.secret, &id, &timestamp, body.as_bytes());
        let request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp)
            .header("webhook-signature", signature)
            .body(body);
        send(request).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_stable_plain_and_distinct() {
        // printf 'sub_wh' | sha256sum
        assert_eq!(message_id("sub_wh"), "msg_8b730cec2b942d6afc7592a68695c0697d2734bf647b26df62f3e153d8ae0f9a");
        assert_eq!(message_id("a.b/é"), message_id("a.b/é"));
        assert_ne!(message_id("a"), message_id("b"));
        assert!(message_id("a.b/é").bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    }
}
