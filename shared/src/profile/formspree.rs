//! The `formspree` profile: Formspree's form webhooks
//! (<https://help.formspree.io/articles/advanced-features/verify-webhook-signatures>).
//!
//! - Authentication: `Formspree-Signature: t=<unix seconds>,v1=<hex>`, the HMAC-SHA256 of
//!   `{t}.{raw body}` under the secret Formspree shows (its text is the key); `t` within five
//!   minutes, the tolerance of Formspree's own example.
//! - Identity: Formspree sends no submission ID, so the form carries one: a hidden input named
//!   `submissionId` (Formspree reserves names that start with `_`), filled per submission by
//!   the page (`crypto.randomUUID()`). A delivery without it is refused (400,
//!   `missing_submission_id_field`) and never given an ID made from its content: two visitors
//!   who type the same words are two leads.
//! - Body: `{"form": .., "submission": {fields}, "keys": [..]}`, as receivers written for
//!   Formspree read it (Formspree publishes no example); a body without `submission` is taken
//!   as the fields themselves.
//! - Fingerprint: the submission's fields, canonical.
//! - Lead: the fields by their common labels ([`crate::lead::object_lead`]).

use alloc::string::String;

use crate::auth::{Covers, Encoding, HmacScheme};
use crate::envelope::{identity_or_number, parse_object, Envelope, EnvelopeError, Refusal};
use crate::fingerprint::fingerprint;
use crate::headers::Headers;
use crate::json::Json;
use crate::lead::{object_lead, Lead, LeadError};
use crate::mapping::LeadMapping;
use crate::profile::sender::{Sender, SenderAuth};
use crate::profile::Profile;
use crate::receipt::Receipt;

/// The header that carries the signature.
pub use crate::profile::FORMSPREE_SIGNATURE_HEADER as SIGNATURE_HEADER;
/// The hidden input that names the submission.
pub const SUBMISSION_FIELD: &str = "submissionId";

/// Reads a delivery's body.
pub fn read(body: &[u8]) -> Result<Envelope, EnvelopeError> {
    let body = parse_object(body)?;
    let fields = submission(&body).ok_or(EnvelopeError::FormDataNotObject)?;
    let submission_id = match fields.get(SUBMISSION_FIELD) {
        None | Some(Json::Null) => return Err(EnvelopeError::MissingSubmissionIdField),
        Some(Json::String(id)) if id.is_empty() => return Err(EnvelopeError::MissingSubmissionIdField),
        id => identity_or_number(id)?,
    };
    let event = String::new();
    let fingerprint = fingerprint(Some(fields));
    Ok(Envelope { profile: Profile::Formspree, submission_id, event, body, fingerprint })
}

/// The submission's fields (an object): `submission`, or the body when it has none.
fn submission(body: &Json) -> Option<&Json> {
    let fields = body.get("submission").unwrap_or(body);
    matches!(fields, Json::Object(_)).then_some(fields)
}

/// The lead of a `formspree` receipt.
pub fn lead(receipt: &Receipt) -> Result<Lead, LeadError> {
    match submission(&receipt.payload) {
        Some(Json::Object(fields)) => Ok(object_lead(receipt.key.clone(), fields, &[SUBMISSION_FIELD])),
        _ => Err(LeadError::FormDataNotObject),
    }
}

/// The `formspree` profile.
pub struct Formspree;

impl Sender for Formspree {
    fn profile(&self) -> Profile {
        Profile::Formspree
    }

    fn auth(&self) -> SenderAuth {
        let scheme = HmacScheme::body(SIGNATURE_HEADER, "", Encoding::Hex);
        let scheme = HmacScheme { covers: Covers::InlineSecondsDotBody, ..scheme };
        SenderAuth::BodySigned { scheme, variable: "FORMSPREE_SECRETS", header_variable: None }
    }

    fn read(&self, _headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        read(body).map_err(Refusal::Envelope)
    }

    fn lead(&self, receipt: &Receipt, _mapping: &LeadMapping) -> Result<Lead, LeadError> {
        lead(receipt)
    }

    /// A submission with the hidden `submissionId` input `id` (`tests/fixtures/formspree.json`),
    /// the message `answer`.
    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> crate::profile::sender::Example {
        use crate::profile::sender::substitute;
        let body = include_str!("../../tests/fixtures/formspree.json");
        let body = substitute(&substitute(body, "\"submissionId\": \"5d7c1f0e-9b1a-4c2e-8a63-2f4b7c9d0e11\"", id), "\"Hello from Formspree\"", answer);
        crate::profile::sender::Example::json(body, id.into(), Profile::Formspree.key(id), ("Grace Hopper", "grace@example.com"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AuthError, AuthMethod};
    use crate::decision::Outcome;
    use crate::profile::sender::Signed;
    use wasm_bindgen_test::wasm_bindgen_test;

    const EXAMPLE: &str = include_str!("../../tests/fixtures/formspree.json");

    #[wasm_bindgen_test(unsupported = test)]
    fn a_submission_with_its_hidden_id() {
        let envelope = read(EXAMPLE.as_bytes()).unwrap();
        assert_eq!(envelope.submission_id, "5d7c1f0e-9b1a-4c2e-8a63-2f4b7c9d0e11");
        let receipt = Receipt::new(&envelope, Profile::Formspree.key(&envelope.submission_id), "r", 0, 1);
        let lead = lead(&receipt).unwrap();
        assert_eq!(lead.external_id, "formspree:5d7c1f0e-9b1a-4c2e-8a63-2f4b7c9d0e11");
        assert_eq!(
            (lead.name.as_str(), lead.email.as_str(), lead.message.as_str()),
            ("Grace Hopper", "grace@example.com", "Hello from Formspree")
        );
        assert_eq!(Json::Object(lead.extra).to_text(), r#"{"_date":"2026-11-30T06:21:53.123Z"}"#);
        // The fields alone, without Formspree's wrapping, are read the same.
        let bare = read(br#"{"submissionId":"s-1","email":"a@b"}"#).unwrap();
        assert_eq!(bare.submission_id, "s-1");
        assert_eq!(read(EXAMPLE.replace("\"keys\": [\"submissionId\", ", "\"keys\": [").as_bytes()).unwrap().fingerprint, envelope.fingerprint);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn no_hidden_id_is_refused_by_name_never_invented() {
        for body in [
            r#"{"form":"x","submission":{"email":"a@b"}}"#,
            r#"{"form":"x","submission":{"submissionId":"","email":"a@b"}}"#,
            r#"{"form":"x","submission":{"submissionId":null}}"#,
            r#"{"email":"a@b"}"#,
        ] {
            assert_eq!(read(body.as_bytes()).map(|_| ()), Err(EnvelopeError::MissingSubmissionIdField), "{body}");
        }
        let response = Outcome::InvalidEnvelope(EnvelopeError::MissingSubmissionIdField).response();
        assert_eq!(response.status, 400);
        assert!(response.body.contains("submissionId"), "{}", response.body);
        assert_eq!(read(br#"{"submission":[]}"#).map(|_| ()), Err(EnvelopeError::FormDataNotObject));
        assert_eq!(read(br#"{"submission":{"submissionId":"a\u0001"}}"#).map(|_| ()), Err(EnvelopeError::InvalidSubmissionId));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_signature_as_formspree_documents_it() {
        // `hmac.new(b"formspree-secret", b"1796019713." + body, "sha256").hexdigest()` in Python.
        let body = br#"{"form":"x","submission":{"submissionId":"s-1"}}"#;
        let tag = "6437e0b30d08f11aabffa9c4bba0b5d223e7e967ee66e21235fc4aa0b742465e";
        let signer = Signed::new(&Formspree, "formspree-secret");
        let good = alloc::format!("t=1796019713,v1={tag}");
        assert_eq!(signer.headers(&[], body, 1_796_019_713_000), [(String::from(SIGNATURE_HEADER), good.clone())]);
        let check = |value: &str, now: i64| signer.check(&[("Formspree-Signature", value)], body, now);
        assert_eq!(check(&good, 1_796_019_713), Ok(AuthMethod::BodySignature));
        assert_eq!(check(&alloc::format!("v1=00, t=1796019713, v1={tag}"), 1_796_019_713), Ok(AuthMethod::BodySignature));
        assert_eq!(check(&alloc::format!("t=1796019713,v0=ab,v1={tag}"), 1_796_019_713 + 300), Ok(AuthMethod::BodySignature));
        assert_eq!(check(&good, 1_796_019_713 + 301), Err(AuthError::SignatureTimestampOutOfRange));
        assert_eq!(check(&alloc::format!("t=1796019714,v1={tag}"), 1_796_019_713), Err(AuthError::BadSignature));
        for malformed in [alloc::format!("v1={tag}"), alloc::format!("t=x,v1={tag}"), alloc::format!("t=1,t=1796019713,v1={tag}")] {
            assert_eq!(check(&malformed, 1_796_019_713), Err(AuthError::MalformedSignatureHeaders), "{malformed}");
        }
        assert_eq!(check("t=1796019713", 1_796_019_713), Err(AuthError::BadSignature));
    }
}
