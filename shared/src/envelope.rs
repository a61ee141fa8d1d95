//! The delivery envelope: the checks a raw body must pass before anything is stored.

use alloc::string::String;

use crate::fingerprint::fingerprint;
use crate::json::{self, Json, JsonError};
use crate::key::KeyError;
use crate::profile::Profile;

/// The only event this receiver accepts.
pub const FORM_SUBMITTED: &str = "form.submitted";
/// The longest submission ID accepted, in bytes of UTF-8. The receipt's key is the ID behind a
/// 27-byte prefix, and DynamoDB's partition keys hold at most 2,048 bytes.
pub const MAX_SUBMISSION_ID_LEN: usize = 1024;

/// A body that passed every envelope check of its sender's profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The sender's profile.
    pub profile: Profile,
    /// The identity of the delivery: `data.submissionId` for Static Forms (each profile
    /// documents its own), unique within the profile.
    pub submission_id: String,
    /// The event it reports (`form.submitted` for Static Forms).
    pub event: String,
    /// The whole body, as parsed.
    pub body: Json,
    /// The fingerprint of the content a retry must repeat ([`crate::fingerprint`]).
    pub fingerprint: String,
}

/// Why a body is not a valid delivery envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvelopeError {
    /// The body is not UTF-8, not JSON, nests too deeply or repeats a key.
    InvalidJson(JsonError),
    /// The body is JSON but not an object.
    NotAnObject,
    /// `event` is missing or not a string.
    MissingEvent,
    /// `event` is a string other than `form.submitted`.
    UnsupportedEvent,
    /// `data` is missing or not an object.
    MissingData,
    /// `data.submissionId` is missing or not a string.
    MissingSubmissionId,
    /// `data.submissionId` is empty, longer than 1,024 bytes, or holds a control character.
    InvalidSubmissionId,
    /// `data.formData` is present but not an object.
    FormDataNotObject,
    /// The answers or fields a form backend sends (Typeform's `form_response.answers`, Tally's
    /// `data.fields`) are present but not an array.
    AnswersNotArray,
    /// The body is declared form-encoded but is a JSON document (a sender set to post JSON, or
    /// the reverse, with the other content type).
    JsonDeclaredForm,
    /// The body is declared JSON but is form-encoded.
    FormDeclaredJson,
    /// A Formspree delivery whose form carries no hidden `submissionId` input: Formspree sends
    /// no submission ID of its own, and one is never invented from the content.
    MissingSubmissionIdField,
}

impl EnvelopeError {
    /// A stable name for responses and logs.
    pub fn reason(self) -> &'static str {
        match self {
            EnvelopeError::InvalidJson(_) => "invalid_json",
            EnvelopeError::NotAnObject => "body_not_object",
            EnvelopeError::MissingEvent => "missing_event",
            EnvelopeError::UnsupportedEvent => "unsupported_event",
            EnvelopeError::MissingData => "missing_data",
            EnvelopeError::MissingSubmissionId => "missing_submission_id",
            EnvelopeError::InvalidSubmissionId => "invalid_submission_id",
            EnvelopeError::FormDataNotObject => "form_data_not_object",
            EnvelopeError::AnswersNotArray => "answers_not_array",
            EnvelopeError::JsonDeclaredForm => "json_body_declared_form",
            EnvelopeError::FormDeclaredJson => "form_body_declared_json",
            EnvelopeError::MissingSubmissionIdField => "missing_submission_id_field",
        }
    }
}

/// Checks a raw body and returns the envelope it holds.
pub fn parse_envelope(body: &[u8]) -> Result<Envelope, EnvelopeError> {
    let body = json::parse(body).map_err(EnvelopeError::InvalidJson)?;
    if !matches!(body, Json::Object(_)) {
        return Err(EnvelopeError::NotAnObject);
    }
    match body.get("event").and_then(Json::as_str) {
        None => return Err(EnvelopeError::MissingEvent),
        Some(event) if event != FORM_SUBMITTED => return Err(EnvelopeError::UnsupportedEvent),
        Some(_) => {}
    }
    let data = body.get("data").filter(|d| matches!(d, Json::Object(_))).ok_or(EnvelopeError::MissingData)?;
    let id = data.get("submissionId").and_then(Json::as_str).ok_or(EnvelopeError::MissingSubmissionId)?;
    if !is_valid_submission_id(id) {
        return Err(EnvelopeError::InvalidSubmissionId);
    }
    if data.get("formData").is_some_and(|f| !matches!(f, Json::Object(_))) {
        return Err(EnvelopeError::FormDataNotObject);
    }
    let submission_id = String::from(id);
    let fingerprint = fingerprint(data.get("formData"));
    Ok(Envelope {
        profile: Profile::StaticForms,
        submission_id,
        event: String::from(FORM_SUBMITTED),
        body,
        fingerprint,
    })
}

/// Non-empty, at most 1,024 bytes of UTF-8, and no control character (`Cc`: U+0000..U+001F,
/// U+007F..U+009F). The sender does not document the ID's format, and a 400 loses the
/// submission for good, so nothing else is refused: every use escapes or encodes the ID
/// (JSON in logs and bodies, percent-encoding in URL paths).
pub fn is_valid_submission_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_SUBMISSION_ID_LEN && !id.chars().any(char::is_control)
}

/// What a delivery's body and headers failed on, by check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The body is not this profile's envelope.
    Envelope(EnvelopeError),
    /// The identity the headers carry is missing or not acceptable (400, by the key's rules).
    Key(KeyError),
}

/// Parses a body that must be a JSON object.
pub(crate) fn parse_object(body: &[u8]) -> Result<Json, EnvelopeError> {
    let body = json::parse(body).map_err(EnvelopeError::InvalidJson)?;
    match body {
        Json::Object(_) => Ok(body),
        _ => Err(EnvelopeError::NotAnObject),
    }
}

/// A body that is a JSON object or, when `form` (its content type says so), form-encoded
/// fields as an object of strings ([`crate::form::parse`]). A body sent with the other format's
/// content type is refused by name.
pub(crate) fn parse_object_or_form(body: &[u8], form: bool) -> Result<Json, EnvelopeError> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if form {
        if first == Some(&b'{') {
            return Err(EnvelopeError::JsonDeclaredForm);
        }
        return Ok(Json::Object(crate::form::parse(body)));
    }
    parse_object(body).map_err(|error| match error {
        EnvelopeError::InvalidJson(_) if first.is_some_and(|b| b.is_ascii_alphanumeric()) && body.contains(&b'=') => {
            EnvelopeError::FormDeclaredJson
        }
        other => other,
    })
}

/// The identity at `value`: a string that [`is_valid_submission_id`] accepts, or a whole
/// number as it is written (some senders' IDs are numbers), held to the same length.
pub(crate) fn identity_or_number(value: Option<&Json>) -> Result<String, EnvelopeError> {
    match value {
        Some(Json::Number(n)) if n.as_str().bytes().all(|b| b.is_ascii_digit()) => {
            let id = n.as_str();
            is_valid_submission_id(id).then(|| String::from(id)).ok_or(EnvelopeError::InvalidSubmissionId)
        }
        other => identity(other),
    }
}

/// The identity at `value`: a string that [`is_valid_submission_id`] accepts.
pub(crate) fn identity(value: Option<&Json>) -> Result<String, EnvelopeError> {
    let id = value.and_then(Json::as_str).ok_or(EnvelopeError::MissingSubmissionId)?;
    if !is_valid_submission_id(id) {
        return Err(EnvelopeError::InvalidSubmissionId);
    }
    Ok(String::from(id))
}

/// Requires the body's event type at `field` to be `expected`.
pub(crate) fn expect_event(body: &Json, field: &str, expected: &str) -> Result<String, EnvelopeError> {
    match body.get(field).and_then(Json::as_str) {
        None => Err(EnvelopeError::MissingEvent),
        Some(event) if event != expected => Err(EnvelopeError::UnsupportedEvent),
        Some(event) => Ok(String::from(event)),
    }
}

impl Envelope {
    /// `data.formData`, if the body has one.
    pub fn form_data(&self) -> Option<&Json> {
        self.body.get("data").and_then(|d| d.get("formData"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn check(body: &str, expected: Result<&str, EnvelopeError>) {
        let got = parse_envelope(body.as_bytes());
        assert_eq!(got.as_ref().map(|e| e.submission_id.as_str()).map_err(|e| *e), expected, "{body}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn accepts_the_documented_example() {
        let body = include_str!("../tests/fixtures/delivery.json");
        let envelope = parse_envelope(body.as_bytes()).unwrap();
        assert_eq!(envelope.submission_id, "sub_8fK2qLw9Xc");
        assert_eq!(envelope.form_data().and_then(|f| f.get("name")).and_then(Json::as_str), Some("Ada Lovelace"));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_numeric_identity_is_held_to_an_identity_s_length() {
        let id = |text: &str| identity_or_number(Some(&json::parse(text.as_bytes()).unwrap()));
        assert_eq!(id("1500878955"), Ok("1500878955".into()));
        assert_eq!(id("12345678901234567890123456789012345678901234567890"), Ok("1234567890".repeat(5)));
        assert_eq!(id(&"7".repeat(MAX_SUBMISSION_ID_LEN)), Ok("7".repeat(MAX_SUBMISSION_ID_LEN)));
        // Past 1,024 digits the key would pass DynamoDB's 2,048-byte partition key: refused now,
        // never a store error on every retry.
        assert_eq!(id(&"7".repeat(MAX_SUBMISSION_ID_LEN + 1)), Err(EnvelopeError::InvalidSubmissionId));
        for not_whole in ["-1", "1.5", "1e3", "null", "true", "[]"] {
            assert_eq!(id(not_whole), Err(EnvelopeError::MissingSubmissionId), "{not_whole}");
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_body_in_the_other_format_is_named() {
        let read = |body: &str, form: bool| parse_object_or_form(body.as_bytes(), form).map(|b| b.to_text());
        assert_eq!(read("a=1&b=%41", true), Ok(r#"{"a":"1","b":"A"}"#.into()));
        assert_eq!(read(r#" {"a":1}"#, true), Err(EnvelopeError::JsonDeclaredForm));
        assert_eq!(read("a=1&b=2", false), Err(EnvelopeError::FormDeclaredJson));
        assert_eq!(read("UniqueID=1", false), Err(EnvelopeError::FormDeclaredJson));
        // Not JSON, and not a form either: the JSON error, as before.
        assert_eq!(read("{", false), Err(EnvelopeError::InvalidJson(JsonError::Syntax { offset: 1 })));
        assert_eq!(read("abc", false), Err(EnvelopeError::InvalidJson(JsonError::Syntax { offset: 0 })));
        assert_eq!(read("[=]", false).map_err(|e| e.reason()), Err("invalid_json"));
        assert_eq!(read("[1]", false), Err(EnvelopeError::NotAnObject));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn every_failure_is_distinct() {
        use EnvelopeError::*;
        check(r#"{"event":"form.submitted","data":{"submissionId":"s1"}}"#, Ok("s1"));
        check(r#"{"event":"form.submitted","data":{"submissionId":"a:b.c-d_9"}}"#, Ok("a:b.c-d_9"));
        check("{", Err(InvalidJson(JsonError::Syntax { offset: 1 })));
        check("\u{feff}{}", Err(InvalidJson(JsonError::Syntax { offset: 0 })));
        check("[]", Err(NotAnObject));
        check(r#"{"data":{}}"#, Err(MissingEvent));
        check(r#"{"event":7,"data":{}}"#, Err(MissingEvent));
        check(r#"{"event":"form.deleted","data":{}}"#, Err(UnsupportedEvent));
        check(r#"{"event":"form.submitted"}"#, Err(MissingData));
        check(r#"{"event":"form.submitted","data":[]}"#, Err(MissingData));
        check(r#"{"event":"form.submitted","data":{}}"#, Err(MissingSubmissionId));
        check(r#"{"event":"form.submitted","data":{"submissionId":42}}"#, Err(MissingSubmissionId));
        check(r#"{"event":"form.submitted","data":{"submissionId":""}}"#, Err(InvalidSubmissionId));
        for odd in ["a b", "é", "sub/8fK2", "a+b=", "😀", "\\\"'<>", " lead", "\u{fffd}", "x\u{a0}y"] {
            let id_json = {
                let mut s = alloc::string::String::new();
                crate::json::write_string(odd, &mut s);
                s
            };
            check(&format!(r#"{{"event":"form.submitted","data":{{"submissionId":{id_json}}}}}"#), Ok(odd));
        }
        for control in ["a\\u0000", "\\n", "a\\tb", "\\u001f", "\\u007f", "\\u0085", "\\u009f"] {
            check(
                &format!(r#"{{"event":"form.submitted","data":{{"submissionId":"{control}"}}}}"#),
                Err(InvalidSubmissionId),
            );
        }
        let longest = "é".repeat(MAX_SUBMISSION_ID_LEN / 2);
        check(&format!(r#"{{"event":"form.submitted","data":{{"submissionId":"{longest}"}}}}"#), Ok(&longest));
        let long = "x".repeat(MAX_SUBMISSION_ID_LEN + 1);
        check(&format!(r#"{{"event":"form.submitted","data":{{"submissionId":"{long}"}}}}"#), Err(InvalidSubmissionId));
        let long = "é".repeat(MAX_SUBMISSION_ID_LEN / 2) + "x";
        check(&format!(r#"{{"event":"form.submitted","data":{{"submissionId":"{long}"}}}}"#), Err(InvalidSubmissionId));
        check(r#"{"event":"form.submitted","data":{"submissionId":"s","formData":"x"}}"#, Err(FormDataNotObject));
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse_envelope(&bytes);
        }

        #[test]
        fn never_panics_on_near_envelopes(id in "\\PC{0,140}", form in "[\\[\\]{}\",:0-9a-z ]{0,30}") {
            let body = alloc::format!(r#"{{"event":"form.submitted","data":{{"submissionId":{},"formData":{form}}}}}"#,
                serde_json::to_string(&id).unwrap());
            let _ = parse_envelope(body.as_bytes());
        }
    }
}
