//! The decision table: every outcome of a request, its HTTP status, stable code and body.
//!
//! One total `match`, no wildcard: adding an outcome does not compile until it has a row.
//! Bodies are JSON with `code` and a human `message`; 5xx bodies never carry internal text
//! (the one addition: `/healthz`'s 503 names the configuration variable at fault, never its
//! value, so a deploy can be checked).
//!
//! No outcome is a 500: every failure of the receiver's own (its configuration, its
//! credential, the store's table or policy) is one an operator can fix, so it answers 503 with
//! `Retry-After` and every sender keeps the delivery (`../shared/SENDER.md`, "Other senders'
//! retry rules"). A 500 comes only from the runtime, for a panic.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use crate::auth::AuthError;
use crate::envelope::EnvelopeError;
use crate::json::{write_string, JsonError};
use crate::key::KeyError;
use crate::profile::Acknowledgement;
use crate::receipt::ReceiptStatus;
use crate::store::{PermanentStoreError, RetryableStoreError};

/// Seconds a sender is asked to wait before retrying after a 503.
pub const RETRY_AFTER_SECS: u32 = 5;

/// What became of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `GET /healthz`.
    Health,
    /// No route has this path.
    NotFound,
    /// The path exists but not for this method; the value is the `Allow` header.
    MethodNotAllowed(&'static str),
    /// The body is not `application/json` (nor, for a sender that posts forms,
    /// `application/x-www-form-urlencoded`).
    UnsupportedMediaType,
    /// The body, or the receipt it would become, is larger than this receiver stores.
    PayloadTooLarge(TooLarge),
    /// The body could not be read (the client went away mid-body).
    BodyUnreadable,
    /// The receiver's configuration is broken; the value names what is wrong, for the log.
    ConfigInvalid(&'static str),
    /// `GET /healthz` while the configuration would refuse every delivery.
    Unhealthy(HealthProblem),
    /// The sender is not authenticated; the text is the `WWW-Authenticate` challenge naming the
    /// configured methods ([`crate::auth::AuthPolicy::challenge`]).
    Unauthenticated(AuthError, String),
    /// No authentication method is configured, so nothing is accepted.
    AuthNotConfigured,
    /// The body is not a valid envelope.
    InvalidEnvelope(EnvelopeError),
    /// The idempotency key is missing or does not match the envelope.
    InvalidKey(KeyError),
    /// A receipt with this key exists with a different payload fingerprint.
    KeyReused,
    /// The receipt was stored now; answered with the 2xx the profile's sender counts as success.
    Stored(ReceiptSummary, Acknowledgement),
    /// A receipt already existed for this key and payload.
    Duplicate(ReceiptSummary),
    /// The store could not prove durability; the sender should retry.
    StoreUnavailable(RetryableStoreError),
    /// The store refused the request in a way only a configuration change fixes.
    StoreMisconfigured(PermanentStoreError),
}

/// What is too large for a 413.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TooLarge {
    /// The body is over `MAX_BODY_BYTES`.
    Body,
    /// The receipt item would be over DynamoDB's item size (the body is within the limit, but
    /// with the receipt's other attributes it would not fit): it could never be stored.
    Item,
}

impl TooLarge {
    /// The `reason` in the 413 body.
    pub fn reason(self) -> &'static str {
        match self {
            TooLarge::Body => "body_too_large",
            TooLarge::Item => "item_too_large",
        }
    }
}

/// Why `/healthz` answers 503: deliveries would be refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthProblem {
    /// This configuration variable is missing or malformed (its name, never its value).
    ConfigInvalid(&'static str),
    /// No sender authentication method is configured.
    AuthNotConfigured,
}

/// What a 2xx tells the sender about its receipt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiptSummary {
    /// The submission ID.
    pub submission_id: String,
    /// The receipt's status (for a duplicate: the original receipt's).
    pub status: ReceiptStatus,
    /// When the receipt was first stored.
    pub received_at: String,
}

/// The HTTP response the shell renders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Stable machine-readable code, also in the body.
    pub code: &'static str,
    /// Extra headers (`Content-Type` is always `application/json`).
    pub headers: Vec<(&'static str, String)>,
    /// JSON body.
    pub body: String,
}

impl Outcome {
    /// The detail behind the code, for the log line: which check failed and why.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            Outcome::ConfigInvalid(what) => Some(what),
            Outcome::Unhealthy(HealthProblem::ConfigInvalid(what)) => Some(what),
            Outcome::Unhealthy(HealthProblem::AuthNotConfigured) => Some("auth_not_configured"),
            Outcome::PayloadTooLarge(what) => Some(what.reason()),
            Outcome::Unauthenticated(e, _) => Some(e.reason()),
            Outcome::InvalidEnvelope(e) => Some(e.reason()),
            Outcome::InvalidKey(e) => Some(e.reason()),
            Outcome::StoreUnavailable(e) => Some(crate::store::StoreError::Retryable(*e).reason()),
            Outcome::StoreMisconfigured(e) => Some(crate::store::StoreError::Permanent(*e).reason()),
            _ => None,
        }
    }

    /// The response for this outcome.
    pub fn response(&self) -> Response {
        use Extra as X;
        let (status, code, message, extra) = match self {
            Outcome::Health => (200, "ok", "healthy", X::Nothing),
            Outcome::NotFound => (404, "not_found", "no such endpoint", X::Nothing),
            Outcome::MethodNotAllowed(allow) => {
                (405, "method_not_allowed", "method not allowed on this endpoint", X::Allow(allow))
            }
            Outcome::UnsupportedMediaType => {
                let message = "the body must be application/json (or form-encoded where the sender posts forms)";
                (415, "unsupported_media_type", message, X::Nothing)
            }
            Outcome::PayloadTooLarge(TooLarge::Body) => (
                413,
                "payload_too_large",
                "the body is larger than this receiver accepts",
                X::Reason(TooLarge::Body.reason()),
            ),
            Outcome::PayloadTooLarge(TooLarge::Item) => (
                413,
                "payload_too_large",
                "the receipt for this body would be larger than the store accepts",
                X::Reason(TooLarge::Item.reason()),
            ),
            Outcome::BodyUnreadable => (400, "body_unreadable", "the body could not be read", X::Nothing),
            // An operator can fix each of these, and each may clear: 503 with `Retry-After` keeps
            // every sender retrying as long as it will (Typeform gives up on a 500 after five
            // tries over about 3.6 hours, and retries a 503 for 10 hours).
            Outcome::ConfigInvalid(_) => {
                (503, "config_invalid", "the receiver is misconfigured; retry later", X::RetryAfter)
            }
            Outcome::Unhealthy(HealthProblem::ConfigInvalid(variable)) => (
                503,
                "config_invalid",
                "the receiver is misconfigured and would refuse deliveries",
                X::Variable(variable),
            ),
            Outcome::Unhealthy(HealthProblem::AuthNotConfigured) => (
                503,
                "auth_not_configured",
                "the receiver has no sender authentication configured and would refuse deliveries",
                X::Nothing,
            ),
            Outcome::Unauthenticated(_, challenge) => {
                (401, "unauthenticated", "the sender is not authenticated", X::Challenge(challenge))
            }
            Outcome::AuthNotConfigured => (
                503,
                "auth_not_configured",
                "the receiver has no sender authentication configured; retry later",
                X::RetryAfter,
            ),
            Outcome::InvalidEnvelope(EnvelopeError::InvalidJson(e)) => {
                (400, "invalid_json", "the body is not valid JSON", X::Reason(json_reason(*e)))
            }
            Outcome::InvalidEnvelope(EnvelopeError::MissingSubmissionIdField) => (
                400,
                "invalid_envelope",
                "the form must carry a hidden input named submissionId with a new ID per submission",
                X::Reason(EnvelopeError::MissingSubmissionIdField.reason()),
            ),
            Outcome::InvalidEnvelope(e) => {
                (400, "invalid_envelope", "the body is not a valid delivery for this endpoint", X::Reason(e.reason()))
            }
            Outcome::InvalidKey(KeyError::Invalid) => (
                400,
                "invalid_idempotency_key",
                "the submission ID header (webhook-id, Framer-Webhook-Submission-Id) must be 1 to 1024 bytes without control characters",
                X::Reason(KeyError::Invalid.reason()),
            ),
            Outcome::InvalidKey(e) => (
                400,
                "invalid_idempotency_key",
                "Idempotency-Key must be staticforms:form.submitted:<submissionId>",
                X::Reason(e.reason()),
            ),
            Outcome::KeyReused => (
                422,
                "idempotency_key_reused",
                "this idempotency key was already used with different form content",
                X::Nothing,
            ),
            Outcome::Stored(summary, acknowledgement) => {
                (acknowledgement.status(), "stored", "receipt stored", X::Receipt(summary, false))
            }
            Outcome::Duplicate(summary) => {
                (200, "duplicate", "receipt already stored; nothing new was written", X::Receipt(summary, true))
            }
            Outcome::StoreUnavailable(_) => {
                (503, "store_unavailable", "the receipt could not be stored; retry later", X::RetryAfter)
            }
            Outcome::StoreMisconfigured(_) => {
                (503, "store_misconfigured", "the receipt could not be stored; retry later", X::RetryAfter)
            }
        };
        let mut body = String::from("{\"code\":");
        write_string(code, &mut body);
        body.push_str(",\"message\":");
        write_string(message, &mut body);
        let mut headers = Vec::new();
        match extra {
            X::Nothing => {}
            X::Allow(allow) => headers.push(("Allow", String::from(allow))),
            X::RetryAfter => headers.push(("Retry-After", alloc::format!("{RETRY_AFTER_SECS}"))),
            X::Challenge(challenge) => headers.push(("WWW-Authenticate", challenge.clone())),
            X::Variable(variable) => {
                body.push_str(",\"variable\":");
                write_string(variable, &mut body);
            }
            X::Reason(reason) => {
                body.push_str(",\"reason\":");
                write_string(reason, &mut body);
            }
            X::Receipt(summary, duplicate) => {
                write_summary(&mut body, summary, duplicate);
                if duplicate {
                    headers.push(("Idempotent-Replayed", String::from("true")));
                }
            }
        }
        body.push('}');
        Response { status, code, headers, body }
    }
}

/// What a response carries beyond `code` and `message`.
enum Extra<'a> {
    Nothing,
    /// The `Allow` header.
    Allow(&'a str),
    /// The `Retry-After` header.
    RetryAfter,
    /// The `WWW-Authenticate` header.
    Challenge(&'a String),
    /// A `variable` field naming a configuration variable (never its value).
    Variable(&'static str),
    /// A stable `reason` field naming the failed check.
    Reason(&'static str),
    /// The receipt's summary, and whether it is a duplicate.
    Receipt(&'a ReceiptSummary, bool),
}

fn json_reason(error: JsonError) -> &'static str {
    match error {
        JsonError::NotUtf8 => "not_utf8",
        JsonError::Syntax { .. } => "syntax",
        JsonError::TooDeep => "too_deep",
        JsonError::DuplicateKey => "duplicate_key",
    }
}

fn write_summary(body: &mut String, summary: &ReceiptSummary, duplicate: bool) {
    body.push_str(",\"submissionId\":");
    write_string(&summary.submission_id, body);
    body.push_str(",\"status\":");
    write_string(summary.status.as_str(), body);
    body.push_str(",\"receivedAt\":");
    write_string(&summary.received_at, body);
    let _ = write!(body, ",\"duplicate\":{duplicate}");
}

#[cfg(test)]
mod tests;
