//! The `webflow` profile: Webflow's `form_submission` webhooks
//! (<https://developers.webflow.com/data/docs/working-with-webhooks>). Only webhooks created
//! through Webflow's Data API are signed; one made in the dashboard cannot be accepted.
//!
//! - Authentication: `x-webflow-signature`, the hex HMAC-SHA256 of
//!   `{x-webflow-timestamp}:{raw body}` under the webhook's secret (its text is the key), the
//!   timestamp in milliseconds and within the five minutes Webflow advises.
//! - Identity: `payload.id`, the form submission's ID (a string, or a whole number as written;
//!   Webflow's v1 reference calls the same value, `6321ca84df3949bfc6752327` in both examples,
//!   "the id of the form submission").
//! - Body: `triggerType` is `form_submission`; `payload.data`, when present, is an object.
//! - Fingerprint: `payload.data`, canonical: what the visitor submitted.
//! - Acknowledgement: 200, for a new receipt too: Webflow counts any other answer as a failure
//!   and sends the delivery again.
//! - Lead: `payload.data`'s fields by their common labels ([`crate::lead::object_lead`]).


use crate::auth::{Covers, Encoding, HmacScheme};
use crate::envelope::{expect_event, identity_or_number, parse_object};
use crate::envelope::{Envelope, EnvelopeError, Refusal};
use crate::fingerprint::fingerprint;
use crate::headers::Headers;
use crate::json::Json;
use crate::lead::{object_lead, Lead, LeadError};
use crate::mapping::LeadMapping;
use crate::profile::sender::{Sender, SenderAuth};
use crate::profile::{Acknowledgement, Profile};
use crate::receipt::Receipt;

/// The header that carries the signature.
pub use crate::profile::WEBFLOW_SIGNATURE_HEADER as SIGNATURE_HEADER;
/// The header that carries the signature's timestamp, in milliseconds.
pub use crate::profile::WEBFLOW_TIMESTAMP_HEADER as TIMESTAMP_HEADER;
/// The one event accepted.
pub const FORM_SUBMISSION: &str = "form_submission";

/// Reads a delivery's body.
pub fn read(body: &[u8]) -> Result<Envelope, EnvelopeError> {
    let body = parse_object(body)?;
    let event = expect_event(&body, "triggerType", FORM_SUBMISSION)?;
    let payload = body.get("payload").filter(|p| matches!(p, Json::Object(_))).ok_or(EnvelopeError::MissingData)?;
    let submission_id = identity_or_number(payload.get("id"))?;
    let data = payload.get("data");
    if data.is_some_and(|d| !matches!(d, Json::Object(_) | Json::Null)) {
        return Err(EnvelopeError::FormDataNotObject);
    }
    let fingerprint = fingerprint(data);
    Ok(Envelope { profile: Profile::Webflow, submission_id, event, body, fingerprint })
}

/// The lead of a `webflow` receipt.
pub fn lead(receipt: &Receipt) -> Result<Lead, LeadError> {
    match receipt.payload.pointer("/payload/data") {
        None | Some(Json::Null) => Ok(object_lead(receipt.key.clone(), &Default::default(), &[])),
        Some(Json::Object(fields)) => Ok(object_lead(receipt.key.clone(), fields, &[])),
        Some(_) => Err(LeadError::FormDataNotObject),
    }
}

/// The `webflow` profile.
pub struct Webflow;

impl Sender for Webflow {
    fn profile(&self) -> Profile {
        Profile::Webflow
    }

    fn auth(&self) -> SenderAuth {
        let scheme = HmacScheme::body(SIGNATURE_HEADER, "", Encoding::Hex);
        let scheme = HmacScheme { covers: Covers::MillisHeaderColonBody(TIMESTAMP_HEADER), ..scheme };
        SenderAuth::BodySigned { scheme, variable: "WEBFLOW_SECRETS", header_variable: None }
    }

    fn acknowledgement(&self) -> Acknowledgement {
        Acknowledgement::Ok
    }

    fn read(&self, _headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        read(body).map_err(Refusal::Envelope)
    }

    fn lead(&self, receipt: &Receipt, _mapping: &LeadMapping) -> Result<Lead, LeadError> {
        lead(receipt)
    }

    /// Webflow's documented example (`tests/fixtures/webflow.json`, with a `Message` field
    /// added), the event ID `id`, the message `answer`.
    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> crate::profile::sender::Example {
        use crate::profile::sender::substitute;
        let body = include_str!("../../tests/fixtures/webflow.json");
        let body = substitute(&substitute(body, "\"id\": \"6321ca84df3949bfc6752327\"", id), "\"Don't panic\"", answer);
        let lead = ("Zaphod Beeblebrox", "zaphod@heartofgold.ai");
        crate::profile::sender::Example::json(body, id.into(), Profile::Webflow.key(id), lead)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AuthError, AuthMethod};
    use crate::profile::sender::Signed;
    use alloc::string::String;
    use alloc::vec::Vec;
    use wasm_bindgen_test::wasm_bindgen_test;

    const EXAMPLE: &str = include_str!("../../tests/fixtures/webflow.json");

    fn receipt(body: &str) -> Receipt {
        let envelope = read(body.as_bytes()).unwrap();
        Receipt::new(&envelope, Profile::Webflow.key(&envelope.submission_id), "r", 0, 1)
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_documented_example() {
        let envelope = read(EXAMPLE.as_bytes()).unwrap();
        assert_eq!((envelope.submission_id.as_str(), envelope.event.as_str()), ("6321ca84df3949bfc6752327", "form_submission"));
        let lead = lead(&receipt(EXAMPLE)).unwrap();
        assert_eq!(lead.external_id, "webflow:6321ca84df3949bfc6752327");
        assert_eq!(
            (lead.name.as_str(), lead.email.as_str(), lead.message.as_str()),
            ("Zaphod Beeblebrox", "zaphod@heartofgold.ai", "Don't panic")
        );
        assert_eq!(
            Json::Object(lead.extra).to_text(),
            r#"{"First Name":"Zaphod","Last Name":"Beeblebrox","Phone Number":15550000000}"#
        );
        assert_eq!(Webflow.acknowledgement().status(), 200, "Webflow retries any answer but 200");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_signature_as_webflow_documents_it() {
        // Webflow's documented check: HMAC-SHA256 of `${timestamp}:${body}`, hex; the vector
        // computed with Python's hmac (`hmac.new(b"webflow-secret", b"1663849649733:" + body,
        // "sha256").hexdigest()`).
        let body = br#"{"triggerType":"form_submission","payload":{"id":"6321ca84df3949bfc6752327"}}"#;
        let signer = Signed::new(&Webflow, "webflow-secret");
        let tag = "c6eba7f1fa1308e4581c44a05e9fa03a812c5ff637fbeeb17b23caee40e4b367";
        let (ts, now) = ("1663849649733", 1_663_849_649);
        let signed = [(SIGNATURE_HEADER, tag), (TIMESTAMP_HEADER, ts)];
        let written: Vec<(&str, &str)> = signed.iter().map(|&(n, v)| (n, v)).collect();
        let ours = signer.headers(&[], body, 1_663_849_649_733);
        assert_eq!(ours.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect::<Vec<_>>(), written);
        let upper = tag.to_uppercase();
        assert_eq!(signer.check(&[(SIGNATURE_HEADER, &upper), (TIMESTAMP_HEADER, ts)], body, now), Ok(AuthMethod::BodySignature), "hex in either case");
        assert_eq!(signer.check(&signed, body, now), Ok(AuthMethod::BodySignature));
        // Five minutes either way, by the millisecond timestamp's seconds.
        assert_eq!(signer.check(&signed, body, now + 300), Ok(AuthMethod::BodySignature));
        assert_eq!(signer.check(&signed, body, now + 301), Err(AuthError::SignatureTimestampOutOfRange));
        assert_eq!(signer.check(&signed, body, now - 301), Err(AuthError::SignatureTimestampOutOfRange));
        // The timestamp is part of what is signed; seconds instead of milliseconds are out of range.
        let moved = [(SIGNATURE_HEADER, tag), (TIMESTAMP_HEADER, "1663849649734")];
        assert_eq!(signer.check(&moved, body, now), Err(AuthError::BadSignature));
        let seconds = [(SIGNATURE_HEADER, tag), (TIMESTAMP_HEADER, "1663849649")];
        assert_eq!(signer.check(&seconds, body, now), Err(AuthError::SignatureTimestampOutOfRange));
        assert_eq!(signer.check(&[(SIGNATURE_HEADER, tag)], body, now), Err(AuthError::MalformedSignatureHeaders));
        assert_eq!(signer.check(&signed, &body[1..], now), Err(AuthError::BadSignature));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_fingerprint_covers_the_answers_only() {
        let of = |body: &str| read(body.as_bytes()).unwrap().fingerprint;
        let base = of(EXAMPLE);
        assert_eq!(of(&EXAMPLE.replace("2022-09-14T12:35:16.117Z", "2022-09-14T12:45:16.117Z")), base);
        assert_eq!(of(&EXAMPLE.replace("\"Contact Us\"", "\"Contact\"")), base);
        assert_ne!(of(&EXAMPLE.replace("Zaphod\"", "Arthur\"")), base);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn refusals() {
        let check = |body: &str, error| assert_eq!(read(body.as_bytes()).map(|_| ()), Err(error), "{body}");
        check("[]", EnvelopeError::NotAnObject);
        check(r#"{"payload":{}}"#, EnvelopeError::MissingEvent);
        check(r#"{"triggerType":"site_publish","payload":{}}"#, EnvelopeError::UnsupportedEvent);
        check(r#"{"triggerType":"form_submission"}"#, EnvelopeError::MissingData);
        check(r#"{"triggerType":"form_submission","payload":{}}"#, EnvelopeError::MissingSubmissionId);
        check(r#"{"triggerType":"form_submission","payload":{"id":1.5}}"#, EnvelopeError::MissingSubmissionId);
        check(r#"{"triggerType":"form_submission","payload":{"id":""}}"#, EnvelopeError::InvalidSubmissionId);
        check(r#"{"triggerType":"form_submission","payload":{"id":"i","data":[]}}"#, EnvelopeError::FormDataNotObject);
        let numbered = read(br#"{"triggerType":"form_submission","payload":{"id":1234,"data":null}}"#).unwrap();
        assert_eq!(numbered.submission_id, "1234");
        assert_eq!(lead(&receipt(r#"{"triggerType":"form_submission","payload":{"id":"i"}}"#)).map(|l| l.name), Ok(String::new()));
    }
}
