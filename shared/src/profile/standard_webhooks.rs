//! The `standard-webhooks` profile: any sender that signs per the Standard Webhooks
//! specification (<https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md>).
//!
//! - Authentication: `webhook-id`, `webhook-timestamp`, `webhook-signature` (`v1,<base64>` of
//!   the HMAC-SHA256 of `{id}.{timestamp}.{body}` under a `whsec_` secret), checked by
//!   [`crate::auth`]; the timestamp within five minutes.
//! - Identity: `webhook-id`, which the specification keeps the same on every retry and calls
//!   the idempotency key. Any 1 to 1,024 bytes without a control character. IDs are unique per
//!   producer, so the route serves one producer (its secrets are for rotation).
//! - Body: any JSON document; its `type` member, when a string, is the receipt's event.
//! - Fingerprint: the raw body ([`crate::fingerprint::fingerprint_raw`]): other bytes under the
//!   same ID are other content (422). The specification keeps the ID across retries; it does not
//!   promise the same bytes, so a producer that serializes differently on a retry gets 422.
//! - Lead: from configured JSON pointers ([`LeadPointers`]), by default `/data/name`,
//!   `/data/email`, `/data/message`, and the other members of `/data` as `extra`; the form's ID
//!   where a `form` pointer is configured.

use alloc::collections::BTreeMap;
use alloc::string::String;

use crate::envelope::Refusal;
use crate::envelope::{is_valid_submission_id, Envelope};
use crate::fingerprint::fingerprint_raw;
use crate::headers::Headers;
use crate::json::{self, Json};
use crate::key::KeyError;
use crate::lead::{as_text, complete, Lead, LeadError};
use crate::mapping::LeadMapping;
use crate::profile::sender::{Sender, SenderAuth};
use crate::profile::Profile;
use crate::receipt::Receipt;

/// The longest `type` kept as the receipt's event, in bytes.
pub const MAX_EVENT_LEN: usize = 256;

/// Reads a delivery: its identity from `webhook-id`, the body as any JSON document.
pub fn read(headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
    let id = headers.get("webhook-id").ok_or(Refusal::Key(KeyError::Missing))?;
    if !is_valid_submission_id(id) {
        return Err(Refusal::Key(KeyError::Invalid));
    }
    let parsed = json::parse(body).map_err(|e| Refusal::Envelope(crate::envelope::EnvelopeError::InvalidJson(e)))?;
    // The event is a label for operators; a long one is left out, so the receipt's size stays
    // the body's (the payload holds it anyway).
    let event = parsed.get("type").and_then(Json::as_str).filter(|t| t.len() <= MAX_EVENT_LEN).unwrap_or_default();
    let event = String::from(event);
    Ok(Envelope {
        profile: Profile::StandardWebhooks,
        submission_id: String::from(id),
        event,
        body: parsed,
        fingerprint: fingerprint_raw(body),
    })
}

pub use crate::mapping::{LeadPointers, LeadPointersError};

/// The `standard-webhooks` profile.
pub struct StandardWebhooks;

impl Sender for StandardWebhooks {
    fn profile(&self) -> Profile {
        Profile::StandardWebhooks
    }

    fn auth(&self) -> SenderAuth {
        SenderAuth::StandardWebhooks { variable: "STANDARD_WEBHOOKS_SECRETS" }
    }

    fn read(&self, headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        read(headers, body)
    }

    fn lead(&self, receipt: &Receipt, mapping: &LeadMapping) -> Result<Lead, LeadError> {
        Ok(lead(receipt, &mapping.standard_webhooks))
    }

    /// A `contact.created` event whose message is `answer`, the message ID `id`.
    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> crate::profile::sender::Example {
        let mut message = String::new();
        json::write_string(answer, &mut message);
        let body = alloc::format!(
            r#"{{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{{"name":"Grace Hopper","email":"grace@example.com","message":{message},"plan":"pro"}}}}"#
        );
        let lead = ("Grace Hopper", "grace@example.com");
        crate::profile::sender::Example::json(body, id.into(), Profile::StandardWebhooks.key(id), lead)
            .header("webhook-id", id.into())
    }
}

/// The lead of a `standard-webhooks` receipt. Never fails: a pointer that names nothing gives
/// an empty field, so every accepted delivery becomes a lead.
pub fn lead(receipt: &Receipt, pointers: &LeadPointers) -> Lead {
    let text = |pointer: &str| receipt.payload.pointer(pointer).cloned().map(as_text).unwrap_or_default();
    let mut extra = match receipt.payload.pointer(&pointers.extra) {
        Some(Json::Object(members)) => members.clone(),
        _ => BTreeMap::new(),
    };
    for named in [&pointers.name, &pointers.email, &pointers.message] {
        if let Some(member) = member_of(&pointers.extra, named) {
            extra.remove(&member);
        }
    }
    let mut lead = Lead {
        external_id: receipt.key.clone(),
        name: text(&pointers.name),
        email: text(&pointers.email),
        message: text(&pointers.message),
        extra,
        roles: BTreeMap::new(),
        form: pointers.form.as_deref().and_then(|pointer| form_id(receipt.payload.pointer(pointer)?)).unwrap_or_default(),
    };
    complete(&mut lead);
    lead
}

/// A form's ID as the payload gives it: text (trimmed) or a number as written; anything else
/// (an object: a pointer that stops one member short) names no form, as Tally's and Typeform's
/// forms are read.
fn form_id(value: &Json) -> Option<String> {
    match value {
        Json::String(text) => Some(String::from(text.trim())),
        Json::Number(n) => Some(String::from(n.as_str())),
        _ => None,
    }
}

/// The member name `pointer` names directly inside the object at `parent`, if it does.
fn member_of(parent: &str, pointer: &str) -> Option<String> {
    let token = pointer.strip_prefix(parent)?.strip_prefix('/')?;
    if token.contains('/') {
        return None;
    }
    Some(token.replace("~1", "/").replace("~0", "~"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::EnvelopeError;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// The example payload of the specification ("Payload structure").
    const EXAMPLE: &str = r#"{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52-5198-4599-803e-771906343485","type":"contact","name":"Ada Lovelace","email":"ada@example.com","message":"Hi"}}"#;

    fn headers(id: &str) -> Headers {
        Headers::new([("webhook-id", id)])
    }

    fn receipt(body: &str) -> Receipt {
        let envelope = read(&headers("msg_2KWPBgLlAfxdpx2AI54pPJ85f1W"), body.as_bytes()).unwrap();
        Receipt::new(&envelope, Profile::StandardWebhooks.key(&envelope.submission_id), "r", 0, 1)
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_identity_is_the_webhook_id_and_the_fingerprint_the_raw_body() {
        let envelope = read(&headers("msg_2KWPBgLlAfxdpx2AI54pPJ85f1W"), EXAMPLE.as_bytes()).unwrap();
        assert_eq!(envelope.submission_id, "msg_2KWPBgLlAfxdpx2AI54pPJ85f1W");
        assert_eq!(envelope.event, "contact.created");
        assert_eq!(envelope.fingerprint, fingerprint_raw(EXAMPLE.as_bytes()));
        let spaced = EXAMPLE.replace(',', ", ");
        assert_ne!(read(&headers("m"), spaced.as_bytes()).unwrap().fingerprint, envelope.fingerprint);
        // Any JSON document; no `type` is no event.
        let long = alloc::format!(r#"{{"type":"{}"}}"#, "t".repeat(MAX_EVENT_LEN + 1));
        let longest = alloc::format!(r#"{{"type":"{}"}}"#, "t".repeat(MAX_EVENT_LEN));
        assert_eq!(read(&headers("m"), longest.as_bytes()).map(|e| e.event.len()), Ok(MAX_EVENT_LEN));
        for body in ["[1]", "\"x\"", "{}", r#"{"type":7}"#, long.as_str()] {
            assert_eq!(read(&headers("m"), body.as_bytes()).map(|e| e.event), Ok(String::new()), "{body}");
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn refusals() {
        assert_eq!(read(&Headers::default(), b"{}"), Err(Refusal::Key(KeyError::Missing)));
        let long = "x".repeat(1025);
        for bad in ["", "a\u{7f}", long.as_str()] {
            assert_eq!(read(&headers(bad), b"{}"), Err(Refusal::Key(KeyError::Invalid)), "{bad:?}");
        }
        assert!(read(&headers(&"é".repeat(512)), b"{}").is_ok());
        assert!(matches!(read(&headers("m"), b"{"), Err(Refusal::Envelope(EnvelopeError::InvalidJson(_)))));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_lead_follows_the_pointers() {
        let lead = lead(&receipt(EXAMPLE), &LeadPointers::default());
        assert_eq!(lead.external_id, "standard-webhooks:msg_2KWPBgLlAfxdpx2AI54pPJ85f1W");
        assert_eq!(
            (lead.name.as_str(), lead.email.as_str(), lead.message.as_str()),
            ("Ada Lovelace", "ada@example.com", "Hi")
        );
        assert_eq!(
            Json::Object(lead.extra).to_text(),
            r#"{"id":"1f81eb52-5198-4599-803e-771906343485","type":"contact"}"#
        );

        let body = r#"{"data":{"person":{"full name":"Ada","mail":["a@x"]},"a/b":1,"n":12345678901234567890123}}"#;
        let pointers =
            LeadPointers::parse("name=/data/person/full name, email=/data/person/mail/0,message=/data/a~1b").unwrap();
        let lead = super::lead(&receipt(body), &pointers);
        assert_eq!((lead.name.as_str(), lead.email.as_str(), lead.message.as_str()), ("Ada", "a@x", "1"));
        assert_eq!(
            Json::Object(lead.extra).to_text(),
            r#"{"n":12345678901234567890123,"person":{"full name":"Ada","mail":["a@x"]}}"#
        );
        assert_eq!(lead.form, "", "no form pointer: no form");
        // Nothing where the pointers look: an empty lead, never a failure.
        let lead = super::lead(&receipt("[]"), &LeadPointers::default());
        assert_eq!((lead.name.as_str(), lead.email.as_str(), lead.message.as_str(), lead.extra.len()), ("", "", "", 0));
        // The form's ID, text or a number, outside `extra` or in it (then kept there too).
        let with_form = LeadPointers::parse("form=/form/id").unwrap();
        let lead = super::lead(&receipt(r#"{"form":{"id":"contact-us"},"data":{"email":"a@x"}}"#), &with_form);
        assert_eq!((lead.form.as_str(), lead.email.as_str()), ("contact-us", "a@x"));
        let in_data = LeadPointers::parse("form=/data/form_id").unwrap();
        let lead = super::lead(&receipt(r#"{"data":{"form_id":42,"email":"a@x"}}"#), &in_data);
        assert_eq!(lead.form, "42");
        assert_eq!(Json::Object(lead.extra).to_text(), r#"{"form_id":42}"#);
        assert_eq!(super::lead(&receipt(r#"{"data":{}}"#), &in_data).form, "", "a payload without one");
        let spaced = super::lead(&receipt(r#"{"data":{"form_id":" contact-us "}}"#), &in_data);
        assert_eq!(spaced.form, "contact-us", "trimmed, as Tally's");
        for other in [r#"{"id":"x"}"#, "true", "null", r#"["x"]"#] {
            let body = alloc::format!(r#"{{"data":{{"form_id":{other}}}}}"#);
            assert_eq!(super::lead(&receipt(&body), &in_data).form, "", "{other}: no form");
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_extra_object_s_labels_give_roles_and_name_parts_make_the_name() {
        let body = r#"{"data":{"email":"a@x","first_name":"Ada","Surname":"Lovelace","Company":"Acme","phone":"+1 555"}}"#;
        let lead = lead(&receipt(body), &LeadPointers::default());
        assert_eq!(lead.name, "Ada Lovelace", "no name: the parts joined");
        let roles = lead.role_keys();
        use crate::lead::Role;
        assert_eq!(
            roles,
            [(Role::FirstName, "first_name"), (Role::LastName, "Surname"), (Role::Company, "Company"), (Role::Phone, "phone")]
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn pointer_lists() {
        assert_eq!(LeadPointers::parse(""), Ok(LeadPointers::default()));
        let whole = LeadPointers::parse("extra=,email=/e").unwrap();
        assert_eq!((whole.extra.as_str(), whole.email.as_str(), whole.name.as_str()), ("", "/e", "/data/name"));
        assert_eq!(LeadPointers::parse("form=/data/form_id").unwrap().form.as_deref(), Some("/data/form_id"));
        assert_eq!(LeadPointers::parse("").unwrap().form, None);
        for bad in ["name", "name=data/x", "phone=/p", "name=/a,name=/b", "=/x", "form=", "form=/a,form=/b", "form=x"] {
            assert_eq!(LeadPointers::parse(bad), Err(LeadPointersError), "{bad}");
        }
    }
}
