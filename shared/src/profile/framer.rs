//! The `framer` profile: Framer forms' webhooks
//! (<https://www.framer.com/help/articles/framer-form-webhook-setup/>).
//!
//! - Authentication: `Framer-Signature: sha256=<hex>`, the HMAC-SHA256 "of the form data and
//!   submission ID" under the webhook's secret (at least 32 characters; its text is the key):
//!   the raw body followed by the `Framer-Webhook-Submission-Id` header's value, with nothing
//!   between. Framer's page describes it in those words; the order is what receivers written
//!   for Framer compute (not quoted from Framer). No timestamp: a captured delivery can be
//!   replayed, and its receipt makes the replay a duplicate.
//! - Identity: `Framer-Webhook-Submission-Id` (a UUID in Framer's example; any 1 to 1,024
//!   bytes without a control character).
//! - Body: one JSON object, each input's name to its value.
//! - Fingerprint: that object, canonical.
//! - Lead: its fields by their common labels ([`crate::lead::object_lead`]).

use alloc::string::String;

use crate::auth::{Covers, Encoding, HmacScheme};
use crate::envelope::{is_valid_submission_id, parse_object, Envelope, Refusal};
use crate::fingerprint::fingerprint;
use crate::headers::Headers;
use crate::json::Json;
use crate::key::KeyError;
use crate::lead::{object_lead, Lead, LeadError};
use crate::mapping::LeadMapping;
use crate::profile::sender::{Sender, SenderAuth};
use crate::profile::Profile;
use crate::receipt::Receipt;

/// The header that carries the signature.
pub use crate::profile::FRAMER_SIGNATURE_HEADER as SIGNATURE_HEADER;
/// The header that carries the submission's ID.
pub use crate::profile::FRAMER_SUBMISSION_HEADER as SUBMISSION_HEADER;

/// Reads a delivery: its identity from [`SUBMISSION_HEADER`], the body as one JSON object.
pub fn read(headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
    let id = headers.get(SUBMISSION_HEADER).ok_or(Refusal::Key(KeyError::Missing))?;
    if !is_valid_submission_id(id) {
        return Err(Refusal::Key(KeyError::Invalid));
    }
    let body = parse_object(body).map_err(Refusal::Envelope)?;
    let fingerprint = fingerprint(Some(&body));
    Ok(Envelope { profile: Profile::Framer, submission_id: String::from(id), event: String::new(), body, fingerprint })
}

/// The lead of a `framer` receipt.
pub fn lead(receipt: &Receipt) -> Result<Lead, LeadError> {
    match &receipt.payload {
        Json::Object(fields) => Ok(object_lead(receipt.key.clone(), fields, &[])),
        _ => Err(LeadError::FormDataNotObject),
    }
}

/// The `framer` profile.
pub struct Framer;

impl Sender for Framer {
    fn profile(&self) -> Profile {
        Profile::Framer
    }

    fn auth(&self) -> SenderAuth {
        let scheme = HmacScheme::body(SIGNATURE_HEADER, "sha256=", Encoding::Hex);
        let scheme = HmacScheme { covers: Covers::BodyThenHeader(SUBMISSION_HEADER), ..scheme };
        SenderAuth::BodySigned { scheme, variable: "FRAMER_SECRETS", header_variable: None }
    }

    fn read(&self, headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        read(headers, body)
    }

    fn lead(&self, receipt: &Receipt, _mapping: &LeadMapping) -> Result<Lead, LeadError> {
        lead(receipt)
    }

    /// Inputs named as a Framer form names them (`tests/fixtures/framer.json`), the message
    /// `answer`, the submission `id` in its header.
    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> crate::profile::sender::Example {
        use crate::profile::sender::substitute;
        let body = include_str!("../../tests/fixtures/framer.json");
        let body = substitute(body, "\"Hello from Framer\"", answer);
        let lead = ("Mary Jackson", "mary@example.com");
        crate::profile::sender::Example::json(body, id.into(), Profile::Framer.key(id), lead)
            .header("Framer-Webhook-Submission-Id", id.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AuthError, AuthMethod};
    use crate::envelope::EnvelopeError;
    use crate::profile::sender::Signed;
    use wasm_bindgen_test::wasm_bindgen_test;

    const EXAMPLE: &str = include_str!("../../tests/fixtures/framer.json");
    const ID: &str = "0fbbb90e-564b-4870-ac8b-78f9bc4e44a6";

    fn headers(id: &str) -> Headers {
        Headers::new([(SUBMISSION_HEADER, id)])
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn an_example_delivery() {
        let envelope = read(&headers(ID), EXAMPLE.as_bytes()).unwrap();
        assert_eq!(envelope.submission_id, ID);
        let receipt = Receipt::new(&envelope, Profile::Framer.key(ID), "r", 0, 1);
        let lead = lead(&receipt).unwrap();
        assert_eq!(lead.external_id, "framer:0fbbb90e-564b-4870-ac8b-78f9bc4e44a6");
        assert_eq!(
            (lead.name.as_str(), lead.email.as_str(), lead.message.as_str()),
            ("Mary Jackson", "mary@example.com", "Hello from Framer")
        );
        assert_eq!(Json::Object(lead.extra).to_text(), r#"{"Company":"Langley Research"}"#);
        // The inputs' order and spacing are not content.
        let reordered = r#"{ "Company": "Langley Research", "Message": "Hello from Framer", "Email": "mary@example.com", "Name": "Mary Jackson" }"#;
        assert_eq!(read(&headers(ID), reordered.as_bytes()).unwrap().fingerprint, envelope.fingerprint);
        assert_ne!(read(&headers(ID), EXAMPLE.replace("Hello", "Hi").as_bytes()).unwrap().fingerprint, envelope.fingerprint);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_signature_covers_the_body_then_the_submission_id() {
        // `"sha256=" + hmac.new(secret, body + submission_id, "sha256").hexdigest()` in Python.
        let good = "sha256=f44d11ead998f1abc2504005d51504137eaa5bdf7cab082d10df73c854e155ac";
        let signer = Signed::new(&Framer, "framer-secret-of-at-least-32-characters");
        let signed = signer.headers(&[(SUBMISSION_HEADER, ID)], EXAMPLE.as_bytes(), 0);
        assert_eq!(signed, [(String::from(SIGNATURE_HEADER), String::from(good))]);
        let check = |pairs: &[(&str, &str)]| signer.check(pairs, EXAMPLE.as_bytes(), 0);
        assert_eq!(check(&[("Framer-Signature", good), ("Framer-Webhook-Submission-Id", ID)]), Ok(AuthMethod::BodySignature));
        // Another submission's ID under the same body: the tag no longer matches.
        let other = "1fbbb90e-564b-4870-ac8b-78f9bc4e44a6";
        assert_eq!(check(&[("Framer-Signature", good), ("Framer-Webhook-Submission-Id", other)]), Err(AuthError::BadSignature));
        assert_eq!(check(&[("Framer-Signature", good)]), Err(AuthError::MalformedSignatureHeaders));
        assert_eq!(check(&[("Framer-Signature", &good[7..]), ("Framer-Webhook-Submission-Id", ID)]), Err(AuthError::BadSignature));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn refusals() {
        assert_eq!(read(&Headers::default(), b"{}"), Err(Refusal::Key(KeyError::Missing)));
        assert_eq!(read(&headers("a\u{1}"), b"{}"), Err(Refusal::Key(KeyError::Invalid)));
        assert_eq!(read(&headers(ID), b"[1]"), Err(Refusal::Envelope(EnvelopeError::NotAnObject)));
        assert!(read(&headers(ID), b"{}").is_ok());
    }
}
