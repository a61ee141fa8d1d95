//! The `typeform` profile: Typeform's `form_response` webhooks
//! (<https://www.typeform.com/developers/webhooks/>).
//!
//! - Authentication: `Typeform-Signature: sha256=<base64>`, the HMAC-SHA256 of the raw body
//!   under the webhook's secret (the secret's text is the key; "Secure your webhooks").
//! - Identity: `form_response.form_id` (without `:`) and `form_response.token` (the
//!   response's ID), as `<form_id>:<token>`. Typeform documents neither whether `event_id` survives a retry nor
//!   that tokens are unique across forms; a response's token within its form is its identity.
//! - Body: `event_type` is `form_response`; partial responses (`form_response_partial`, which a
//!   webhook may subscribe to) are refused with 400, since a 2xx needs a stored receipt and this
//!   profile stores complete responses only; `answers`, when present, is an array.
//! - Fingerprint: the canonical `answers` and `hidden` (what the respondent gave); the form's
//!   `definition` may change between a delivery and a retry without the response changing.
//! - Lead: the first `email` answer, the first `long_text` answer as the message, the first
//!   `short_text` answer whose question's title or ref says "name"; every other answer in
//!   `extra` under its field's `ref` (from the answer or the form's `definition`, else the
//!   field's `id`), its value as Typeform sends it, and the hidden fields under `hidden`.

use alloc::collections::BTreeMap;
use alloc::string::String;

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
pub use crate::profile::TYPEFORM_SIGNATURE_HEADER as SIGNATURE_HEADER;
/// What precedes the base64 signature.
pub const SIGNATURE_PREFIX: &str = "sha256=";
/// The one event accepted.
pub const FORM_RESPONSE: &str = "form_response";

/// Reads a delivery's body.
pub fn read(body: &[u8]) -> Result<Envelope, EnvelopeError> {
    let body = parse_object(body)?;
    let event = expect_event(&body, "event_type", FORM_RESPONSE)?;
    let response =
        body.get("form_response").filter(|r| matches!(r, Json::Object(_))).ok_or(EnvelopeError::MissingData)?;
    // The key joins the two with `:`, so the form ID (letters and digits at Typeform) may not
    // hold one: `a:b` + `c` and `a` + `b:c` would be one key.
    let form = identity(response.get("form_id"))?;
    if form.contains(':') {
        return Err(EnvelopeError::InvalidSubmissionId);
    }
    let token = identity(response.get("token"))?;
    let submission_id = alloc::format!("{form}:{token}");
    if !crate::envelope::is_valid_submission_id(&submission_id) {
        return Err(EnvelopeError::InvalidSubmissionId);
    }
    if response.get("answers").is_some_and(|a| !matches!(a, Json::Array(_))) {
        return Err(EnvelopeError::AnswersNotArray);
    }
    let fingerprint = fingerprint(Some(&content(response)));
    Ok(Envelope { profile: Profile::Typeform, submission_id, event, body, fingerprint })
}

/// What the fingerprint covers: `{"answers": .., "hidden": ..}` (`null` for an absent one).
fn content(response: &Json) -> Json {
    let member = |name: &str| response.get(name).cloned().unwrap_or(Json::Null);
    Json::Object(BTreeMap::from([
        (String::from("answers"), member("answers")),
        (String::from("hidden"), member("hidden")),
    ]))
}

/// The lead of a `typeform` receipt.
pub fn lead(receipt: &Receipt) -> Result<Lead, LeadError> {
    let response = receipt.payload.get("form_response");
    let answers = match response.and_then(|r| r.get("answers")) {
        None | Some(Json::Null) => &[][..],
        Some(Json::Array(answers)) => answers.as_slice(),
        Some(_) => return Err(LeadError::AnswersNotArray),
    };
    // The questions, by field ID: (title, ref). Answers carry the ID, and not always the ref.
    let questions: BTreeMap<&str, (&str, Option<&str>)> = match response.and_then(|r| r.pointer("/definition/fields")) {
        Some(Json::Array(fields)) => fields
            .iter()
            .filter_map(|f| {
                let text = |name: &str| f.get(name).and_then(Json::as_str);
                Some((text("id")?, (text("title").unwrap_or_default(), text("ref"))))
            })
            .collect(),
        _ => BTreeMap::new(),
    };
    let mut lead = Fields::new(receipt.key.clone());
    lead.form(response.and_then(|r| r.get("form_id")).and_then(Json::as_str));
    for answer in answers {
        let field = answer.get("field");
        let text = |name: &str| field.and_then(|f| f.get(name)).and_then(Json::as_str);
        let id = text("id").unwrap_or_default();
        let (title, defined_ref) = questions.get(id).copied().unwrap_or_default();
        let reference = text("ref").or(defined_ref).filter(|r| !r.is_empty());
        let value =
            answer.get("type").and_then(Json::as_str).and_then(|t| answer.get(t)).cloned().unwrap_or(Json::Null);
        let says_name = |s: &str| s.to_lowercase().contains("name");
        let role = match (answer.get("type").and_then(Json::as_str), text("type")) {
            (Some("phone_number"), _) => Some(Role::Phone),
            (_, Some("short_text")) => role_of_label(title).or_else(|| reference.and_then(role_of_label)),
            _ => None,
        };
        let candidates: &[Named] = match (answer.get("type").and_then(Json::as_str), text("type")) {
            (Some("email"), _) => &[Named::Email],
            (_, Some("long_text")) => &[Named::Message],
            (_, Some("short_text")) if role.is_none() && (reference.is_some_and(says_name) || says_name(title)) => {
                &[Named::Name]
            }
            _ => &[],
        };
        if let Some(value) = lead.fill(candidates, value) {
            lead.keep(reference.unwrap_or(id), value, role);
        }
    }
    if let Some(hidden) = response.and_then(|r| r.get("hidden")).filter(|h| !matches!(h, Json::Null)) {
        lead.extra().insert(String::from("hidden"), hidden.clone());
    }
    Ok(lead.finish())
}

/// The `typeform` profile.
pub struct Typeform;

impl Sender for Typeform {
    fn profile(&self) -> Profile {
        Profile::Typeform
    }

    fn auth(&self) -> SenderAuth {
        SenderAuth::BodySigned {
            scheme: HmacScheme::body(SIGNATURE_HEADER, SIGNATURE_PREFIX, Encoding::Base64),
            variable: "TYPEFORM_SECRETS",
            header_variable: None,
        }
    }

    fn read(&self, _headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        read(body).map_err(Refusal::Envelope)
    }

    fn lead(&self, receipt: &Receipt, _mapping: &LeadMapping) -> Result<Lead, LeadError> {
        lead(receipt)
    }

    /// Typeform's documented example (`tests/fixtures/typeform.json`, form `lT4Z3j`), the
    /// response token `id`, the first text answer `answer`.
    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> crate::profile::sender::Example {
        use crate::profile::sender::substitute;
        let body = include_str!("../../tests/fixtures/typeform.json");
        let body = substitute(body, "\"a3a12ec67a1365927098a606107fac15\"", id);
        let first_answer = "\"It's cold right now! I live in an older medium-sized city with a university. Geographically, the area is hilly.\"";
        let identity = alloc::format!("lT4Z3j:{id}");
        let external_id = Profile::Typeform.key(&identity);
        let body = substitute(&body, first_answer, answer);
        crate::profile::sender::Example::json(body, identity, external_id, ("Laura", "laura@example.com"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// Typeform's documented example payload, trimmed to three questions
    /// (<https://www.typeform.com/developers/webhooks/example-payload/>).
    const EXAMPLE: &str = include_str!("../../tests/fixtures/typeform.json");

    fn receipt(body: &str) -> Receipt {
        let envelope = read(body.as_bytes()).unwrap();
        Receipt::new(&envelope, Profile::Typeform.key(&envelope.submission_id), "r", 0, 1)
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_documented_example() {
        let envelope = read(EXAMPLE.as_bytes()).unwrap();
        assert_eq!(envelope.submission_id, "lT4Z3j:a3a12ec67a1365927098a606107fac15");
        assert_eq!(envelope.event, "form_response");
        let lead = lead(&receipt(EXAMPLE)).unwrap();
        assert_eq!(lead.external_id, "typeform:lT4Z3j:a3a12ec67a1365927098a606107fac15");
        assert_eq!(lead.form, "lT4Z3j", "the form, for its own mapping");
        assert_eq!(lead.email, "laura@example.com");
        assert_eq!(lead.name, "Laura");
        assert!(lead.message.starts_with("It's cold right now!"), "{}", lead.message);
        assert_eq!(
            Json::Object(lead.extra).to_text(),
            r#"{"hidden":{"user_id":"abc123456"},"readable_ref_multiple_choice":{"label":"London"}}"#
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_fingerprint_covers_answers_and_hidden_fields_only() {
        let of = |body: &str| read(body.as_bytes()).unwrap().fingerprint;
        let base = of(EXAMPLE);
        assert_eq!(of(&EXAMPLE.replace("Webhooks example", "Renamed form")), base);
        assert_eq!(of(&EXAMPLE.replace("LtWXD3crgy", "another-event")), base);
        assert_ne!(of(&EXAMPLE.replace("laura@example.com", "laura@example.org")), base);
        assert_ne!(of(&EXAMPLE.replace("abc123456", "abc1234567")), base);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn refusals() {
        let check = |body: &str, error| assert_eq!(read(body.as_bytes()).map(|_| ()), Err(error), "{body}");
        check("[]", EnvelopeError::NotAnObject);
        check(r#"{"form_response":{}}"#, EnvelopeError::MissingEvent);
        check(r#"{"event_type":"form_response_partial","form_response":{}}"#, EnvelopeError::UnsupportedEvent);
        check(r#"{"event_type":"form_response"}"#, EnvelopeError::MissingData);
        check(r#"{"event_type":"form_response","form_response":{"token":"t"}}"#, EnvelopeError::MissingSubmissionId);
        check(r#"{"event_type":"form_response","form_response":{"form_id":"f"}}"#, EnvelopeError::MissingSubmissionId);
        check(
            r#"{"event_type":"form_response","form_response":{"form_id":"f","token":""}}"#,
            EnvelopeError::InvalidSubmissionId,
        );
        check(
            r#"{"event_type":"form_response","form_response":{"form_id":"a:b","token":"c"}}"#,
            EnvelopeError::InvalidSubmissionId,
        );
        assert!(read(br#"{"event_type":"form_response","form_response":{"form_id":"a","token":"b:c"}}"#).is_ok());
        let long = alloc::format!(
            r#"{{"event_type":"form_response","form_response":{{"form_id":"f","token":"{}"}}}}"#,
            "t".repeat(1023)
        );
        check(&long, EnvelopeError::InvalidSubmissionId);
        check(
            r#"{"event_type":"form_response","form_response":{"form_id":"f","token":"t","answers":{}}}"#,
            EnvelopeError::AnswersNotArray,
        );
        assert!(read(br#"{"event_type":"form_response","form_response":{"form_id":"f","token":"t"}}"#).is_ok());
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_first_of_each_named_field_wins_and_only_a_question_about_a_name_is_the_name() {
        let body = r#"{"event_type":"form_response","form_response":{"form_id":"f","token":"t","answers":[
            {"type":"text","text":"Acme","field":{"id":"c","type":"short_text","ref":"company"}},
            {"type":"text","text":"first note","field":{"id":"m1","type":"long_text"}},
            {"type":"email","email":"first@x","field":{"id":"e1","type":"email"}},
            {"type":"text","text":"Ada","field":{"id":"n1","type":"short_text","ref":"your_name"}},
            {"type":"text","text":"second note","field":{"id":"m2","type":"long_text"}},
            {"type":"email","email":"second@x","field":{"id":"e2","type":"email"}},
            {"type":"text","text":"Grace","field":{"id":"n2","type":"short_text","ref":"other_name"}}]}}"#;
        let lead = lead(&receipt(body)).unwrap();
        assert_eq!((lead.name.as_str(), lead.email.as_str(), lead.message.as_str()), ("Ada", "first@x", "first note"));
        assert_eq!(
            Json::Object(lead.extra).to_text(),
            r#"{"company":"Acme","e2":"second@x","m2":"second note","other_name":"Grace"}"#
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn name_parts_phone_and_company_take_their_roles_by_title_ref_or_type() {
        let body = r#"{"event_type":"form_response","form_response":{"form_id":"f","token":"t",
            "definition":{"fields":[{"id":"f1","title":"First name"},{"id":"l1","title":"Your surname?","ref":"ln"}]},
            "answers":[
            {"type":"text","text":"Ada","field":{"id":"f1","type":"short_text","ref":"01HX"}},
            {"type":"text","text":"Lovelace","field":{"id":"l1","type":"short_text","ref":"last_name"}},
            {"type":"phone_number","phone_number":"+442079460000","field":{"id":"p","type":"phone_number","ref":"p"}},
            {"type":"text","text":"Acme","field":{"id":"c","type":"short_text","ref":"company"}}]}}"#;
        let lead = lead(&receipt(body)).unwrap();
        assert_eq!(lead.name, "Ada Lovelace");
        let roles = lead.role_keys();
        assert_eq!(
            roles,
            [(Role::FirstName, "01HX"), (Role::LastName, "last_name"), (Role::Company, "company"), (Role::Phone, "p")]
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn odd_answers_never_fail_the_lead() {
        let body = r#"{"event_type":"form_response","form_response":{"form_id":"f","token":"t","answers":[
            7, {"type":"number"}, {"type":"email","email":"a@x","field":{"id":"e1"}},
            {"type":"email","email":"b@x","field":{"id":"e2","ref":"second"}},
            {"type":"text","text":"Grace","field":{"id":"n","type":"short_text","ref":"full_name"}},
            {"type":"boolean","boolean":true,"field":{"id":"b","ref":""}}]}}"#;
        let lead = lead(&receipt(body)).unwrap();
        assert_eq!((lead.name.as_str(), lead.email.as_str(), lead.message.as_str()), ("Grace", "a@x", ""));
        assert_eq!(Json::Object(lead.extra).to_text(), r#"{"":null,"b":true,"second":"b@x"}"#);
    }
}
