//! The `tally` profile: Tally's `FORM_RESPONSE` webhooks (<https://tally.so/help/webhooks>).
//!
//! - Authentication: `Tally-Signature: <base64>`, the HMAC-SHA256 of the payload under the
//!   webhook's signing secret (its text is the key). Tally's example signs
//!   `JSON.stringify(payload)` of the parsed body; the raw body is what is checked here, which is
//!   the same bytes when Tally sends `JSON.stringify`'s output (likely, not documented).
//! - Identity: `data.responseId`. Tally does not document whether `eventId` survives a retry;
//!   the response is what must become one lead.
//! - Body: `eventType` is `FORM_RESPONSE`; `data.fields`, when present, is an array.
//! - Fingerprint: each field's `key` and `value` (what the respondent gave), canonical; labels
//!   and option texts belong to the form and may change between a delivery and a retry.
//! - Lead: the first `INPUT_EMAIL` field, the first `TEXTAREA` as the message, the first
//!   `INPUT_TEXT` whose label says "name"; every other field in `extra` under its label (its
//!   `key` when the label is taken or empty), choice fields as their options' texts.

use alloc::vec::Vec;

use crate::auth::{Encoding, HmacScheme};
use crate::envelope::{expect_event, identity, parse_object};
use crate::envelope::{Envelope, EnvelopeError, Refusal};
use crate::fingerprint::fingerprint;
use crate::headers::Headers;
use crate::json::Json;
use crate::lead::{role_of_label, Fields, Lead, LeadError, Named, Role};
use crate::mapping::LeadMapping;
use crate::profile::sender::{Sender, SenderAuth};
use crate::profile::Profile;
use crate::receipt::Receipt;

/// The header that carries the signature.
pub use crate::profile::TALLY_SIGNATURE_HEADER as SIGNATURE_HEADER;
/// The one event accepted.
pub const FORM_RESPONSE: &str = "FORM_RESPONSE";

/// Reads a delivery's body.
pub fn read(body: &[u8]) -> Result<Envelope, EnvelopeError> {
    let body = parse_object(body)?;
    let event = expect_event(&body, "eventType", FORM_RESPONSE)?;
    let data = body.get("data").filter(|d| matches!(d, Json::Object(_))).ok_or(EnvelopeError::MissingData)?;
    let submission_id = identity(data.get("responseId"))?;
    let fields = data.get("fields");
    if fields.is_some_and(|f| !matches!(f, Json::Array(_))) {
        return Err(EnvelopeError::AnswersNotArray);
    }
    let fingerprint = fingerprint(Some(&answers(fields)));
    Ok(Envelope { profile: Profile::Tally, submission_id, event, body, fingerprint })
}

/// What the fingerprint covers: `[[key, value], ...]` of the fields (`null` when absent).
fn answers(fields: Option<&Json>) -> Json {
    let Some(Json::Array(fields)) = fields else { return Json::Null };
    let pair = |f: &Json| {
        let member = |name: &str| f.get(name).cloned().unwrap_or(Json::Null);
        Json::Array(alloc::vec![member("key"), member("value")])
    };
    Json::Array(fields.iter().map(pair).collect())
}

/// The lead of a `tally` receipt.
pub fn lead(receipt: &Receipt) -> Result<Lead, LeadError> {
    let fields = match receipt.payload.pointer("/data/fields") {
        None | Some(Json::Null) => &[][..],
        Some(Json::Array(fields)) => fields.as_slice(),
        Some(_) => return Err(LeadError::AnswersNotArray),
    };
    let mut lead = Fields::new(receipt.key.clone());
    lead.form(receipt.payload.pointer("/data/formId").and_then(Json::as_str));
    for field in fields {
        let text = |name: &str| field.get(name).and_then(Json::as_str).unwrap_or_default();
        let label = text("label");
        let value = with_option_texts(field);
        let role = match text("type") {
            "INPUT_PHONE_NUMBER" => Some(Role::Phone),
            "INPUT_TEXT" => role_of_label(label),
            _ => None,
        };
        let candidates: &[Named] = match text("type") {
            "INPUT_EMAIL" => &[Named::Email],
            "TEXTAREA" => &[Named::Message],
            "INPUT_TEXT" if role.is_none() && label.to_lowercase().contains("name") => &[Named::Name],
            _ => &[],
        };
        if let Some(value) = lead.fill(candidates, value) {
            let key = if label.is_empty() || lead.extra().contains_key(label) { text("key") } else { label };
            lead.keep(key, value, role);
        }
    }
    Ok(lead.finish())
}

/// A field's value, with a choice field's option IDs replaced by their texts (an ID without an
/// option stays as it is).
fn with_option_texts(field: &Json) -> Json {
    let value = field.get("value").cloned().unwrap_or(Json::Null);
    let (Json::Array(ids), Some(Json::Array(options))) = (&value, field.get("options")) else { return value };
    let text_of = |id: &Json| {
        options
            .iter()
            .find(|o| o.get("id") == Some(id))
            .and_then(|o| o.get("text"))
            .cloned()
            .unwrap_or_else(|| id.clone())
    };
    Json::Array(ids.iter().map(text_of).collect::<Vec<_>>())
}

/// The `tally` profile.
pub struct Tally;

impl Sender for Tally {
    fn profile(&self) -> Profile {
        Profile::Tally
    }

    fn auth(&self) -> SenderAuth {
        SenderAuth::BodySigned {
            scheme: HmacScheme::body(SIGNATURE_HEADER, "", Encoding::Base64),
            variable: "TALLY_SECRETS",
            header_variable: None,
        }
    }

    fn read(&self, _headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        read(body).map_err(Refusal::Envelope)
    }

    fn lead(&self, receipt: &Receipt, _mapping: &LeadMapping) -> Result<Lead, LeadError> {
        lead(receipt)
    }

    /// Tally's documented example (`tests/fixtures/tally.json`), the response ID `id` (the
    /// submission ID stays the example's: the identity is the response), the long-text answer
    /// `answer`.
    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> crate::profile::sender::Example {
        use crate::profile::sender::substitute;
        let body = include_str!("../../tests/fixtures/tally.json");
        let body = substitute(&substitute(body, "\"responseId\": \"2wgx4n\"", id), "\"Hello world\"", answer);
        crate::profile::sender::Example::json(body, id.into(), Profile::Tally.key(id), ("", "alice@example.com"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// Tally's documented example event, trimmed to six fields (<https://tally.so/help/webhooks>).
    const EXAMPLE: &str = include_str!("../../tests/fixtures/tally.json");

    fn receipt(body: &str) -> Receipt {
        let envelope = read(body.as_bytes()).unwrap();
        Receipt::new(&envelope, Profile::Tally.key(&envelope.submission_id), "r", 0, 1)
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_documented_example() {
        let envelope = read(EXAMPLE.as_bytes()).unwrap();
        assert_eq!((envelope.submission_id.as_str(), envelope.event.as_str()), ("2wgx4n", "FORM_RESPONSE"));
        let lead = lead(&receipt(EXAMPLE)).unwrap();
        assert_eq!(lead.external_id, "tally:2wgx4n");
        assert_eq!(lead.form, "VwbNEw", "the form, for its own mapping");
        assert_eq!(
            (lead.name.as_str(), lead.email.as_str(), lead.message.as_str()),
            ("", "alice@example.com", "Hello world")
        );
        assert_eq!(
            Json::Object(lead.extra).to_text(),
            r#"{"Multiple choice":["In progress"],"Phone number":"+32491223344","Text":"Hello","utm_campaign":"newsletter"}"#
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_fingerprint_covers_the_fields_only() {
        let of = |body: &str| read(body.as_bytes()).unwrap().fingerprint;
        let base = of(EXAMPLE);
        assert_eq!(of(&EXAMPLE.replace("a4cb511e-d513-4fa5-baee-b815d718dfd1", "another-event")), base);
        assert_eq!(of(&EXAMPLE.replace("Webhook payload", "Renamed")), base);
        // The form's labels and option texts are not the respondent's answer.
        assert_eq!(of(&EXAMPLE.replace("\"Long text\"", "\"Your message\"").replace("In progress", "Doing")), base);
        assert_ne!(of(&EXAMPLE.replace("Hello world", "Hello, world")), base);
        assert_ne!(of(&EXAMPLE.replace("question_3Nrpl3", "question_3Nrpl4")), base);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn refusals() {
        let check = |body: &str, error| assert_eq!(read(body.as_bytes()).map(|_| ()), Err(error), "{body}");
        check("7", EnvelopeError::NotAnObject);
        check(r#"{"data":{}}"#, EnvelopeError::MissingEvent);
        check(r#"{"eventType":"FORM_DELETED","data":{}}"#, EnvelopeError::UnsupportedEvent);
        check(r#"{"eventType":"FORM_RESPONSE","data":[]}"#, EnvelopeError::MissingData);
        check(r#"{"eventType":"FORM_RESPONSE","data":{"responseId":1}}"#, EnvelopeError::MissingSubmissionId);
        check(r#"{"eventType":"FORM_RESPONSE","data":{"responseId":"a\u0000"}}"#, EnvelopeError::InvalidSubmissionId);
        check(r#"{"eventType":"FORM_RESPONSE","data":{"responseId":"r","fields":{}}}"#, EnvelopeError::AnswersNotArray);
        assert!(read(br#"{"eventType":"FORM_RESPONSE","data":{"responseId":"r"}}"#).is_ok());
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_first_of_each_named_field_wins() {
        let body = r#"{"eventType":"FORM_RESPONSE","data":{"responseId":"r","fields":[
            {"key":"a","type":"INPUT_EMAIL","label":"Email","value":"first@x"},
            {"key":"b","type":"TEXTAREA","label":"Message","value":"first note"},
            {"key":"c","type":"INPUT_EMAIL","label":"Work email","value":"second@x"},
            {"key":"d","type":"TEXTAREA","label":"More","value":"second note"}]}}"#;
        let lead = lead(&receipt(body)).unwrap();
        assert_eq!((lead.email.as_str(), lead.message.as_str()), ("first@x", "first note"));
        assert_eq!(Json::Object(lead.extra).to_text(), r#"{"More":"second note","Work email":"second@x"}"#);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn name_parts_phone_and_company_take_their_roles() {
        let body = r#"{"eventType":"FORM_RESPONSE","data":{"responseId":"r","fields":[
            {"key":"a","type":"INPUT_TEXT","label":"First name","value":"Ada"},
            {"key":"b","type":"INPUT_TEXT","label":"Last name","value":"Lovelace"},
            {"key":"c","type":"INPUT_PHONE_NUMBER","label":"How can we call you?","value":"+44 20 7946 0000"},
            {"key":"d","type":"INPUT_TEXT","label":"Company","value":"Analytical Engines"},
            {"key":"e","type":"INPUT_TEXT","label":"Last name","value":"Second"}]}}"#;
        let lead = lead(&receipt(body)).unwrap();
        assert_eq!(lead.name, "Ada Lovelace", "the parts joined, never the first name alone");
        let roles = lead.role_keys();
        assert_eq!(
            roles,
            [
                (Role::FirstName, "First name"),
                (Role::LastName, "Last name"),
                (Role::Company, "Company"),
                (Role::Phone, "How can we call you?")
            ]
        );
        assert_eq!(lead.extra.get("e"), Some(&Json::String("Second".into())), "a second last name keeps its key");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn odd_fields_never_fail_the_lead() {
        let body = r#"{"eventType":"FORM_RESPONSE","data":{"responseId":"r","fields":[
            1, {"type":"INPUT_TEXT","label":"Full Name","value":"Grace"},
            {"type":"INPUT_TEXT","label":"Name","key":"k2","value":"Second"},
            {"label":"Name","key":"k3","value":null},
            {"type":"CHECKBOXES","label":"","key":"k4","value":["x"],"options":[{"id":"y","text":"Y"}]}]}}"#;
        let lead = lead(&receipt(body)).unwrap();
        assert_eq!(lead.name, "Grace");
        assert_eq!(Json::Object(lead.extra).to_text(), r#"{"":null,"Name":"Second","k3":null,"k4":["x"]}"#);
    }
}
