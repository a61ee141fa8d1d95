//! The `basin` profile: Basin's form webhooks (<https://docs.usebasin.com/integrations/webhooks>).
//!
//! - Authentication: `X-Basin-Signature: sha256=<hex>`, the HMAC-SHA256 of the raw body under
//!   the webhook's signing secret (its text is the key; Basin's changelog 58). No timestamp: a
//!   captured delivery can be replayed, and its receipt makes the replay a duplicate.
//! - Body: Basin's "JSON" format (the submission's fields and its `id`), its "Data wrapped
//!   JSON" (the same under `data`), or "Form URL encoded" (the fields, form-encoded; or, as
//!   Basin's page shows it, that text as a JSON string under `data`).
//! - Identity: the submission's `id` (a string, or a whole number as written).
//! - Fingerprint: the submission's fields, canonical (so the format, field order and escaping
//!   do not change it).
//! - Lead: the fields by their common labels ([`crate::lead::object_lead`]), `id` left out.

use alloc::borrow::Cow;

use crate::auth::{Encoding, HmacScheme};
use crate::envelope::{identity_or_number, parse_object_or_form, Envelope, EnvelopeError, Refusal};
use crate::fingerprint::fingerprint;
use crate::headers::{is_form_media_type, Headers};
use crate::json::Json;
use crate::lead::{object_lead, Lead, LeadError};
use crate::mapping::LeadMapping;
use crate::profile::sender::{Sender, SenderAuth};
use crate::profile::Profile;
use crate::receipt::Receipt;

/// The header that carries the signature.
pub use crate::profile::BASIN_SIGNATURE_HEADER as SIGNATURE_HEADER;

/// Reads a delivery's body, JSON or form-encoded as its `Content-Type` says.
pub fn read(headers: &Headers, body: &[u8]) -> Result<Envelope, EnvelopeError> {
    let body = parse_object_or_form(body, is_form_media_type(headers.get("content-type")))?;
    let fields = submission(&body).ok_or(EnvelopeError::FormDataNotObject)?;
    let submission_id = identity_or_number(fields.get("id"))?;
    let fingerprint = fingerprint(Some(&fields));
    Ok(Envelope { profile: Profile::Basin, submission_id, event: alloc::string::String::new(), body, fingerprint })
}

/// The submission's fields (an object): the body, `data` when Basin wraps them, or `data`'s
/// form-encoded text read as fields (Basin's page shows its "Form URL encoded" format so).
fn submission(body: &Json) -> Option<Cow<'_, Json>> {
    match (body.get("data"), body.get("id")) {
        (Some(data @ Json::Object(_)), None) => Some(Cow::Borrowed(data)),
        (Some(Json::String(encoded)), None) => Some(Cow::Owned(Json::Object(crate::form::parse(encoded.as_bytes())))),
        _ => matches!(body, Json::Object(_)).then_some(Cow::Borrowed(body)),
    }
}

/// The lead of a `basin` receipt.
pub fn lead(receipt: &Receipt) -> Result<Lead, LeadError> {
    match submission(&receipt.payload).as_deref() {
        Some(Json::Object(fields)) => Ok(object_lead(receipt.key.clone(), fields, &["id"])),
        _ => Err(LeadError::FormDataNotObject),
    }
}

/// The `basin` profile.
pub struct Basin;

impl Sender for Basin {
    fn profile(&self) -> Profile {
        Profile::Basin
    }

    fn auth(&self) -> SenderAuth {
        let scheme = HmacScheme::body(SIGNATURE_HEADER, "sha256=", Encoding::Hex);
        SenderAuth::BodySigned { scheme, variable: "BASIN_SECRETS", header_variable: None }
    }

    fn takes_form_bodies(&self) -> bool {
        true
    }

    fn read(&self, headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        read(headers, body).map_err(Refusal::Envelope)
    }

    fn lead(&self, receipt: &Receipt, _mapping: &LeadMapping) -> Result<Lead, LeadError> {
        lead(receipt)
    }

    /// Basin's documented JSON example (`tests/fixtures/basin.json`, with a `message` field
    /// added), the submission `id`, the message `answer`.
    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> crate::profile::sender::Example {
        use crate::profile::sender::substitute;
        let body = include_str!("../../tests/fixtures/basin.json");
        let body = substitute(&substitute(body, "\"id\": \"submission_id\"", id), "\"Hello from Basin\"", answer);
        let lead = ("Example Name", "example@example.com");
        crate::profile::sender::Example::json(body, id.into(), Profile::Basin.key(id), lead)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AuthError, AuthMethod};
    use crate::profile::sender::Signed;
    use wasm_bindgen_test::wasm_bindgen_test;

    const EXAMPLE: &str = include_str!("../../tests/fixtures/basin.json");

    fn json(body: &str) -> Result<Envelope, EnvelopeError> {
        read(&Headers::new([("content-type", "application/json")]), body.as_bytes())
    }

    fn form(body: &str) -> Result<Envelope, EnvelopeError> {
        read(&Headers::new([("content-type", "application/x-www-form-urlencoded")]), body.as_bytes())
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_documented_formats_are_one_submission() {
        let plain = json(EXAMPLE).unwrap();
        assert_eq!(plain.submission_id, "submission_id");
        let wrapped = json(&alloc::format!(r#"{{"data":{EXAMPLE}}}"#)).unwrap();
        assert_eq!((wrapped.submission_id.as_str(), wrapped.fingerprint.as_str()), ("submission_id", plain.fingerprint.as_str()));
        let encoded = form("email=example%40example.com&name=Example+Name&id=submission_id").unwrap();
        let as_json = json(r#"{"id":"submission_id","name":"Example Name","email":"example@example.com"}"#).unwrap();
        assert_eq!(encoded.fingerprint, as_json.fingerprint, "the format is not content");
        let receipt = Receipt::new(&plain, Profile::Basin.key("submission_id"), "r", 0, 1);
        let lead = lead(&receipt).unwrap();
        assert_eq!(lead.external_id, "basin:submission_id");
        assert_eq!(
            (lead.name.as_str(), lead.email.as_str(), lead.message.as_str()),
            ("Example Name", "example@example.com", "Hello from Basin")
        );
        assert_eq!(
            Json::Object(lead.extra).to_text(),
            r#"{"attachments":[{"attachment_proxy_url":"proxy_url","public_url":"public_url"}]}"#
        );
        // The form-encoded format as Basin's page shows it: the encoded text under `data`.
        let shown = json(r#"{"data":"email=example@example.com&name=Example+Name&id=submission_id"}"#).unwrap();
        assert_eq!((shown.submission_id.as_str(), shown.fingerprint.as_str()), ("submission_id", encoded.fingerprint.as_str()));
        let receipt = Receipt::new(&shown, Profile::Basin.key("submission_id"), "r", 0, 1);
        assert_eq!(super::lead(&receipt).map(|l| l.email), Ok("example@example.com".into()));
        let receipt = Receipt::new(&encoded, Profile::Basin.key("submission_id"), "r", 0, 1);
        assert_eq!(super::lead(&receipt).map(|l| l.name), Ok("Example Name".into()));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_signature_is_of_the_raw_body() {
        // `"sha256=" + hmac.new(b"basin-secret", body, "sha256").hexdigest()` in Python.
        let good = "sha256=656f50cf0a7978efd433eb2fad5b6fecc1399695c2e8e0e87f2172b0ebd98d9d";
        let signer = Signed::new(&Basin, "basin-secret");
        let check = |value: &str, body: &str| signer.check(&[("X-Basin-Signature", value)], body.as_bytes(), 0);
        assert_eq!(check(good, EXAMPLE), Ok(AuthMethod::BodySignature));
        assert_eq!(check(good, &EXAMPLE.replace("Hello", "Hallo")), Err(AuthError::BadSignature));
        assert_eq!(check(&good[7..], EXAMPLE), Err(AuthError::BadSignature), "the prefix is required");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn refusals() {
        assert_eq!(json("[]").map(|_| ()), Err(EnvelopeError::NotAnObject));
        assert_eq!(json(r#"{"email":"a@b"}"#).map(|_| ()), Err(EnvelopeError::MissingSubmissionId));
        assert_eq!(json(r#"{"data":{"email":"a@b"}}"#).map(|_| ()), Err(EnvelopeError::MissingSubmissionId));
        assert_eq!(json(r#"{"id":77}"#).map(|e| e.submission_id), Ok("77".into()));
        assert_eq!(form("id=1&name=%zz").map(|e| e.submission_id), Ok("1".into()));
        assert_eq!(form(EXAMPLE).map(|_| ()), Err(EnvelopeError::JsonDeclaredForm));
        assert_eq!(json("id=1&name=x").map(|_| ()), Err(EnvelopeError::FormDeclaredJson));
        assert_eq!(form("name=x").map(|_| ()), Err(EnvelopeError::MissingSubmissionId));
    }
}
