//! Every row of the decision table.

use super::*;
use crate::json::{parse, Json};
use crate::store::{PermanentStoreError as P, RetryableStoreError as R};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use wasm_bindgen_test::wasm_bindgen_test;

fn summary() -> ReceiptSummary {
    ReceiptSummary {
        submission_id: "sub_1".into(),
        status: ReceiptStatus::Completed,
        received_at: "2026-11-30T06:21:53.123Z".into(),
    }
}

/// A name and value expected in a response header or body member.
type Pair = Option<(&'static str, &'static str)>;

/// `(outcome, status, code, extra header, extra body member)`.
fn rows() -> Vec<(Outcome, u16, &'static str, Pair, Pair)> {
    vec![
        (Outcome::Health, 200, "ok", None, None),
        (Outcome::NotFound, 404, "not_found", None, None),
        (Outcome::MethodNotAllowed("POST"), 405, "method_not_allowed", Some(("Allow", "POST")), None),
        (Outcome::UnsupportedMediaType, 415, "unsupported_media_type", None, None),
        (Outcome::PayloadTooLarge(TooLarge::Body), 413, "payload_too_large", None, Some(("reason", "body_too_large"))),
        (Outcome::PayloadTooLarge(TooLarge::Item), 413, "payload_too_large", None, Some(("reason", "item_too_large"))),
        (Outcome::BodyUnreadable, 400, "body_unreadable", None, None),
        (Outcome::ConfigInvalid("RECEIPTS_TABLE"), 503, "config_invalid", Some(("Retry-After", "5")), None),
        (
            Outcome::Unauthenticated(AuthError::BadSignature, "Bearer realm=\"webhooks\"".into()),
            401,
            "unauthenticated",
            Some(("WWW-Authenticate", "Bearer realm=\"webhooks\"")),
            None,
        ),
        (
            Outcome::Unhealthy(HealthProblem::ConfigInvalid("AWS_REGION")),
            503,
            "config_invalid",
            None,
            Some(("variable", "AWS_REGION")),
        ),
        (Outcome::Unhealthy(HealthProblem::AuthNotConfigured), 503, "auth_not_configured", None, None),
        (Outcome::AuthNotConfigured, 503, "auth_not_configured", Some(("Retry-After", "5")), None),
        (
            Outcome::InvalidEnvelope(EnvelopeError::InvalidJson(JsonError::TooDeep)),
            400,
            "invalid_json",
            None,
            Some(("reason", "too_deep")),
        ),
        (
            Outcome::InvalidEnvelope(EnvelopeError::MissingSubmissionId),
            400,
            "invalid_envelope",
            None,
            Some(("reason", "missing_submission_id")),
        ),
        (
            Outcome::InvalidKey(KeyError::Mismatch),
            400,
            "invalid_idempotency_key",
            None,
            Some(("reason", "idempotency_key_mismatch")),
        ),
        (Outcome::KeyReused, 422, "idempotency_key_reused", None, None),
        (Outcome::Stored(summary(), Acknowledgement::Accepted), 202, "stored", None, Some(("submissionId", "sub_1"))),
        (Outcome::Stored(summary(), Acknowledgement::Ok), 200, "stored", None, Some(("submissionId", "sub_1"))),
        (
            Outcome::Duplicate(summary()),
            200,
            "duplicate",
            Some(("Idempotent-Replayed", "true")),
            Some(("status", "COMPLETED")),
        ),
        (Outcome::StoreUnavailable(R::Timeout), 503, "store_unavailable", Some(("Retry-After", "5")), None),
        (Outcome::StoreUnavailable(R::UnreadableDuplicate), 503, "store_unavailable", Some(("Retry-After", "5")), None),
        (Outcome::StoreMisconfigured(P::AccessDenied), 503, "store_misconfigured", Some(("Retry-After", "5")), None),
        (Outcome::StoreMisconfigured(P::TableNotFound), 503, "store_misconfigured", Some(("Retry-After", "5")), None),
        (Outcome::StoreMisconfigured(P::InvalidRequest), 503, "store_misconfigured", Some(("Retry-After", "5")), None),
        (Outcome::StoreMisconfigured(P::UnknownError), 503, "store_misconfigured", Some(("Retry-After", "5")), None),
    ]
}

#[wasm_bindgen_test(unsupported = test)]
fn every_outcome_has_its_row() {
    for (outcome, status, code, header, member) in rows() {
        let response = outcome.response();
        assert_eq!((response.status, response.code), (status, code), "{outcome:?}");
        let body = parse(response.body.as_bytes()).unwrap();
        assert_eq!(body.get("code").and_then(Json::as_str), Some(code));
        assert!(body.get("message").and_then(Json::as_str).is_some_and(|m| !m.is_empty()));
        if let Some((name, value)) = header {
            assert!(response.headers.iter().any(|(n, v)| *n == name && v == value), "{outcome:?}");
        }
        if let Some((name, value)) = member {
            assert_eq!(body.get(name).and_then(Json::as_str), Some(value), "{outcome:?}");
        }
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn receipts_say_whether_they_are_duplicates() {
    let stored = parse(Outcome::Stored(summary(), Acknowledgement::Accepted).response().body.as_bytes()).unwrap();
    let duplicate = parse(Outcome::Duplicate(summary()).response().body.as_bytes()).unwrap();
    assert_eq!(stored.get("duplicate"), Some(&Json::Bool(false)));
    assert_eq!(duplicate.get("duplicate"), Some(&Json::Bool(true)));
    assert_eq!(duplicate.get("receivedAt").and_then(Json::as_str), Some("2026-11-30T06:21:53.123Z"));
    assert!(Outcome::Stored(summary(), Acknowledgement::Accepted).response().headers.is_empty());
}

#[wasm_bindgen_test(unsupported = test)]
fn server_errors_carry_no_detail() {
    for (outcome, status, ..) in rows() {
        let response = outcome.response();
        if status >= 500 {
            let body = parse(response.body.as_bytes()).unwrap();
            let Json::Object(members) = body else { panic!() };
            let keys: Vec<&str> = members.keys().map(String::as_str).collect();
            // `/healthz` names the variable at fault, and nothing else does.
            let expected: &[&str] = if matches!(outcome, Outcome::Unhealthy(HealthProblem::ConfigInvalid(_))) {
                &["code", "message", "variable"]
            } else {
                &["code", "message"]
            };
            assert_eq!(keys, expected, "{outcome:?}");
            assert!(!response.body.contains("RECEIPTS_TABLE") && !response.body.contains("access"));
        }
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn codes_are_unique_per_status() {
    // Every code has one status (a configuration fault is 503 on a delivery and on `/healthz`;
    // a new receipt is the 2xx its sender counts as success: 202, or 200 for Webflow).
    let mut seen: Vec<(&str, u16)> = rows()
        .iter()
        .filter(|r| !matches!(r.0, Outcome::Unhealthy(_) | Outcome::Stored(_, Acknowledgement::Ok)))
        .map(|r| (r.2, r.1))
        .collect();
    seen.sort();
    seen.dedup();
    let mut codes: Vec<&str> = seen.iter().map(|s| s.0).collect();
    codes.dedup();
    assert_eq!(codes.len(), seen.len(), "a code maps to one status");
}

#[wasm_bindgen_test(unsupported = test)]
fn every_failure_an_operator_can_fix_keeps_senders_retrying() {
    // `../shared/SENDER.md`: Typeform retries 503 for 10 hours and any other failure five
    // times; Static Forms retries 5xx. No outcome answers 500, and every 503 says when to
    // come back, so no sender gives a delivery up while an operator mends the receiver.
    for (outcome, status, ..) in rows() {
        let response = outcome.response();
        assert_eq!(response.status, status, "{outcome:?}");
        assert_ne!(response.status, 500, "{outcome:?}");
        let unhealthy = matches!(outcome, Outcome::Unhealthy(_));
        if status == 503 && !unhealthy {
            assert!(response.headers.iter().any(|(n, v)| *n == "Retry-After" && v == "5"), "{outcome:?}");
        }
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn reasons_for_the_log() {
    assert_eq!(Outcome::PayloadTooLarge(TooLarge::Item).reason(), Some("item_too_large"));
    assert_eq!(Outcome::PayloadTooLarge(TooLarge::Body).reason(), Some("body_too_large"));
    assert_eq!(Outcome::Unhealthy(HealthProblem::ConfigInvalid("AWS_REGION")).reason(), Some("AWS_REGION"));
    assert_eq!(Outcome::Unhealthy(HealthProblem::AuthNotConfigured).reason(), Some("auth_not_configured"));
    assert_eq!(Outcome::Unauthenticated(AuthError::BadSignature, String::new()).reason(), Some("bad_signature"));
    assert_eq!(Outcome::StoreUnavailable(R::UnreadableDuplicate).reason(), Some("store_unreadable_duplicate"));
    assert_eq!(Outcome::Health.reason(), None);
    assert_eq!(Outcome::ConfigInvalid("RECEIPTS_TABLE").reason(), Some("RECEIPTS_TABLE"));
    assert_eq!(Outcome::InvalidEnvelope(EnvelopeError::MissingSubmissionId).reason(), Some("missing_submission_id"));
    assert_eq!(Outcome::InvalidKey(KeyError::Mismatch).reason(), Some("idempotency_key_mismatch"));
    assert_eq!(Outcome::StoreMisconfigured(P::TableNotFound).reason(), Some("store_table_not_found"));
}
