//! Deliveries as Static Forms sends them, and the credentials tests configure.

use serde_json::json;

pub const BEARER: &str = "it-bearer-token-7f3a";
pub const BASIC_USER: &str = "forms";
pub const BASIC_PASSWORD: &str = "it-basic-pass:9c1e";
pub const HEADER_NAME: &str = "X-Forms-Secret";
pub const HEADER_VALUE: &str = "it-header-value-2b8d";
/// Raw key of the Standard Webhooks signing secret.
pub const SIGNING_KEY: &[u8] = b"it-signing-key-4e5f-0123456789ab";

/// Distinctive form contents, so a test can search logs for them.
pub const VISITOR_NAME: &str = "Ada Integration-Lovelace";
pub const VISITOR_EMAIL: &str = "ada.integration@example.com";
pub const VISITOR_MESSAGE: &str = "please call me about the analytical engine";
pub const API_KEY: &str = "sf_live_it_api_key_91d2";

/// The body of a `form.submitted` delivery for `submission_id`.
pub fn body(submission_id: &str, message: &str, timestamp: u64) -> Vec<u8> {
    json!({
        "event": "form.submitted",
        "timestamp": timestamp,
        "data": {
            "submissionId": submission_id,
            "formData": {"name": VISITOR_NAME, "email": VISITOR_EMAIL, "message": message, "plan": "pro"},
            "apiKey": API_KEY,
            "recipientEmail": "owner@example.com",
            "replyTo": VISITOR_EMAIL,
            "attachments": []
        }
    })
    .to_string()
    .into_bytes()
}

/// The idempotency key Static Forms sends for `submission_id`.
pub fn key(submission_id: &str) -> String {
    format!("staticforms:form.submitted:{submission_id}")
}

/// `Basic <base64(user:password)>`.
pub fn basic_header(user: &str, password: &str) -> String {
    use base64::Engine as _;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

/// The `whsec_` text of the test signing key.
pub fn signing_secret() -> String {
    whsec(SIGNING_KEY)
}

/// A signing secret's text as Standard Webhooks writes it: `whsec_` and the raw key in
/// base64, written here independently of the core's own encoder.
pub fn whsec(key: &[u8]) -> String {
    use base64::Engine as _;
    format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(key))
}

/// Standard Webhooks headers for `body`, signed with `key` at `timestamp` by the Standard
/// Webhooks reference library (`standardwebhooks`), not by the core that checks them.
pub fn signature_headers(key: &[u8], id: &str, timestamp: u64, body: &[u8]) -> [(String, String); 3] {
    let signer = standardwebhooks::Webhook::new(&whsec(key)).expect("a valid secret");
    let ts = i64::try_from(timestamp).expect("a timestamp in range");
    let signature = signer.sign(id, ts, body).expect("signed");
    [
        ("webhook-id".into(), id.into()),
        ("webhook-timestamp".into(), ts.to_string()),
        ("webhook-signature".into(), signature),
    ]
}

/// Seconds since the epoch, from this machine's clock (the Worker reads the same clock).
pub fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// A lead row as the SQL sinks' tests read it (`external_id`, `email`, `upsert_count`): the
/// visitor of [`body`] upserted `count` times.
pub fn lead(id: &str, count: i64) -> (String, String, i64) {
    (id.to_owned(), VISITOR_EMAIL.to_owned(), count)
}
