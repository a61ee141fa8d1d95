//! The `formstack` profile: Formstack's form webhooks
//! (<https://developers.formstack.com/docs/webhook-setup>).
//!
//! - Authentication: the hex HMAC-SHA256 of the raw body under the webhook's HMAC key (its text
//!   is the key), in `X-FS-Signature` or the header the webhook names instead
//!   (`FORMSTACK_SIGNATURE_HEADER`), written `sha256=<hex>` or bare. Formstack's pages do not
//!   spell the scheme out; it is what a captured delivery carries (the test below holds one).
//!   No timestamp: a captured delivery can be replayed, and its receipt makes the replay a
//!   duplicate.
//! - Body: form-encoded by default, JSON when the webhook is set to post JSON; either with
//!   field names, field IDs or API-friendly keys, and optionally each value with its type.
//! - Identity: `UniqueID`, the submission's ID (a string, or a whole number as written).
//! - `HandshakeKey`, when the webhook has one, is a shared secret: it is replaced by
//!   `[redacted]` before anything is stored or fingerprinted.
//! - Fingerprint: the fields, canonical (so field order and escaping do not change it).
//! - Lead: the fields by their common labels ([`crate::lead::object_lead`]), `FormID` and
//!   `UniqueID` left out; a form-encoded compound field (`first = Ada` and `last = Lovelace` on
//!   separate lines) read as its parts.

use alloc::collections::BTreeMap;
use alloc::string::String;

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

/// The header that carries the signature unless the webhook names another.
pub use crate::profile::FORMSTACK_SIGNATURE_HEADER as SIGNATURE_HEADER;
/// The body field that carries the webhook's handshake key (a secret).
pub const HANDSHAKE_FIELD: &str = "HandshakeKey";
/// What replaces the handshake key in a receipt.
pub use crate::receipt::REDACTED;

/// Reads a delivery's body, form-encoded or JSON as its `Content-Type` says.
pub fn read(headers: &Headers, body: &[u8]) -> Result<Envelope, EnvelopeError> {
    let mut body = parse_object_or_form(body, is_form_media_type(headers.get("content-type")))?;
    if let Json::Object(fields) = &mut body {
        // Replaced, not removed: the same for every copy, and no map removal linked in the edge.
        if let Some(key) = fields.get_mut(HANDSHAKE_FIELD) {
            *key = Json::string(REDACTED);
        }
    }
    let submission_id = identity_or_number(body.get("UniqueID"))?;
    let fingerprint = fingerprint(Some(&body));
    Ok(Envelope { profile: Profile::Formstack, submission_id, event: String::new(), body, fingerprint })
}

/// The lead of a `formstack` receipt.
pub fn lead(receipt: &Receipt) -> Result<Lead, LeadError> {
    let Json::Object(fields) = &receipt.payload else { return Err(LeadError::FormDataNotObject) };
    let fields: BTreeMap<String, Json> = fields.iter().map(|(name, value)| (name.clone(), subfields(value))).collect();
    Ok(object_lead(receipt.key.clone(), &fields, &["FormID", "UniqueID", HANDSHAKE_FIELD]))
}

/// The subfields Formstack's compound fields have (a name's and an address's).
const SUBFIELDS: [&str; 12] =
    ["prefix", "first", "initial", "middle", "last", "suffix", "address", "address2", "city", "state", "zip", "country"];

/// A form-encoded compound value (`first = Ada\nlast = Lovelace`, one subfield a line, as
/// Formstack documents) as an object of its parts, and with field types on, a value written
/// `value = ...` over a `field_type = ...` line as that text. Anything else as the visitor typed
/// it: a line such as `total = 5`, a text that starts `value = ` with no type after it, lines
/// named other than Formstack's subfields.
fn subfields(value: &Json) -> Json {
    let Json::String(text) = value else { return value.clone() };
    let typed = text
        .rsplit_once("\nfield_type = ")
        .filter(|(_, kind)| !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
    if let Some(plain) = typed.and_then(|(rest, _)| rest.strip_prefix("value = ")) {
        return Json::string(plain);
    }
    let lines = typed.map_or(text.as_str(), |(rest, _)| rest);
    let parts: Option<BTreeMap<String, Json>> = lines
        .split('\n')
        .map(|line| {
            let (part, value) = line.split_once(" = ")?;
            SUBFIELDS.contains(&part).then(|| (String::from(part), Json::string(value)))
        })
        .collect();
    match parts {
        Some(parts) if parts.len() > 1 => Json::Object(parts),
        _ => value.clone(),
    }
}

/// The `formstack` profile.
pub struct Formstack;

impl Sender for Formstack {
    fn profile(&self) -> Profile {
        Profile::Formstack
    }

    fn auth(&self) -> SenderAuth {
        let scheme = HmacScheme { prefix_optional: true, ..HmacScheme::body(SIGNATURE_HEADER, "sha256=", Encoding::Hex) };
        SenderAuth::BodySigned { scheme, variable: "FORMSTACK_SECRETS", header_variable: Some("FORMSTACK_SIGNATURE_HEADER") }
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

    /// A form-encoded delivery with field names (`tests/fixtures/formstack.txt`), the submission
    /// `id` as `UniqueID`, the message `answer`.
    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> crate::profile::sender::Example {
        use crate::profile::sender::{form_encode, Example};
        let body = include_str!("../../tests/fixtures/formstack.txt");
        assert!(body.contains("UniqueID=1500878955&") && body.contains("Message=Hello+from+Formstack&"), "a stale example");
        let body = body
            .replace("UniqueID=1500878955&", &alloc::format!("UniqueID={}&", form_encode(id)))
            .replace("Message=Hello+from+Formstack&", &alloc::format!("Message={}&", form_encode(answer)));
        let headers = alloc::vec![("Content-Type", String::from("application/x-www-form-urlencoded; charset=utf-8"))];
        let lead = ("Katherine Johnson", "katherine@example.com");
        Example { headers, body: body.into_bytes(), identity: id.into(), external_id: Profile::Formstack.key(id), name_and_email: lead }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AuthError, AuthMethod};
    use crate::profile::sender::Signed;
    use wasm_bindgen_test::wasm_bindgen_test;

    const EXAMPLE: &str = include_str!("../../tests/fixtures/formstack.txt");

    fn form(body: &str) -> Result<Envelope, EnvelopeError> {
        read(&Headers::new([("content-type", "application/x-www-form-urlencoded; charset=utf-8")]), body.as_bytes())
    }

    fn json(body: &str) -> Result<Envelope, EnvelopeError> {
        read(&Headers::new([("content-type", "application/json")]), body.as_bytes())
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_form_encoded_delivery_by_field_names() {
        let envelope = form(EXAMPLE).unwrap();
        assert_eq!(envelope.submission_id, "1500878955");
        let stored = envelope.body.get(HANDSHAKE_FIELD).and_then(Json::as_str);
        assert_eq!(stored, Some(REDACTED), "the handshake key is a secret: never stored");
        let receipt = Receipt::new(&envelope, Profile::Formstack.key("1500878955"), "r", 0, 1);
        let lead = lead(&receipt).unwrap();
        assert_eq!(lead.external_id, "formstack:1500878955");
        assert_eq!(
            (lead.name.as_str(), lead.email.as_str(), lead.message.as_str()),
            ("Katherine Johnson", "katherine@example.com", "Hello from Formstack")
        );
        assert!(lead.extra.is_empty(), "{:?}", lead.extra);
        // Field order, escaping and the handshake key do not change the fingerprint.
        let reordered = "HandshakeKey=other&Message=Hello%20from%20Formstack&Email=katherine@example.com&UniqueID=1500878955&FormID=6606394&Name=first%20%3D%20Katherine%0alast%20%3D%20Johnson";
        assert_eq!(form(reordered).unwrap().fingerprint, envelope.fingerprint);
        assert_ne!(form(&EXAMPLE.replace("Hello", "Hi")).unwrap().fingerprint, envelope.fingerprint);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_json_delivery_with_field_types() {
        // Formstack's documented JSON example, with "Include field type" on for two fields.
        let body = r#"{"FormID":"23534","Name":{"first":"John","last":"Smith","field_type":"name"},"Email":{"value":"john@example.com","field_type":"email"},"Phone":"234-555-6789","UniqueID":"12345678"}"#;
        let envelope = json(body).unwrap();
        let receipt = Receipt::new(&envelope, Profile::Formstack.key("12345678"), "r", 0, 1);
        let lead = lead(&receipt).unwrap();
        assert_eq!((lead.name.as_str(), lead.email.as_str()), ("John Smith", "john@example.com"));
        assert_eq!(Json::Object(lead.extra).to_text(), r#"{"Phone":"234-555-6789"}"#);
        assert_eq!(json(r#"{"UniqueID":12345678}"#).map(|e| e.submission_id), Ok("12345678".into()));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn form_encoded_compound_and_typed_values() {
        let body = "UniqueID=9&Name=first+%3D+Ada%0Alast+%3D+Lovelace%0Afield_type+%3D+name\
            &Message=value+%3D+line+one%0Aline+two%0Afield_type+%3D+textarea\
            &Address=address+%3D+1+Main+St%0Aaddress2+%3D+Flat+2%0Acity+%3D+Leeds\
            &Note=total+%3D+5&Email=value+%3D+ada%40example.com%0Afield_type+%3D+email\
            &Said=value+%3D+as+typed&Pair=a+%3D+b%0Ac+%3D+d";
        let envelope = form(body).unwrap();
        let receipt = Receipt::new(&envelope, Profile::Formstack.key("9"), "r", 0, 1);
        let lead = lead(&receipt).unwrap();
        assert_eq!(
            (lead.name.as_str(), lead.email.as_str(), lead.message.as_str()),
            ("Ada Lovelace", "ada@example.com", "line one\nline two")
        );
        assert_eq!(
            Json::Object(lead.extra).to_text(),
            r#"{"Address":{"address":"1 Main St","address2":"Flat 2","city":"Leeds"},"Note":"total = 5","Pair":"a = b\nc = d","Said":"value = as typed"}"#
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_captured_delivery_s_signature() {
        // A Formstack delivery as captured (hookdeck/webhook-skills, formstack-webhooks): key
        // `test1`, `x-fs-signature: sha256=<hex>` of the raw body; recomputed with openssl.
        let body = b"FormID=6606394&UniqueID=1500878955&HandshakeKey=test";
        let good = "sha256=30dff7f180b6d69eab397a5d51719474df490b730514c253e8b5832d3b51b970";
        let check = |signer: &Signed, name: &str, value: &str| signer.check(&[(name, value)], body, 0);
        let standard = Signed::new(&Formstack, "test1");
        assert_eq!(check(&standard, "X-FS-Signature", good), Ok(AuthMethod::BodySignature));
        assert_eq!(check(&standard, "X-FS-Signature", &good[7..]), Ok(AuthMethod::BodySignature), "bare hex too");
        assert_eq!(check(&standard, "X-FS-Signature", &good.replace("30df", "30de")), Err(AuthError::BadSignature));
        // The webhook may name another header: then that one is read, and X-FS-Signature is not.
        let custom = Signed::new(&Formstack, "test1").in_header("x-my-signature");
        assert_eq!(check(&custom, "X-My-Signature", good), Ok(AuthMethod::BodySignature));
        assert_eq!(check(&custom, "X-FS-Signature", good), Err(AuthError::MissingCredentials));
        assert_eq!(form(core::str::from_utf8(body).unwrap()).map(|e| e.submission_id), Ok("1500878955".into()));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn refusals() {
        assert_eq!(form("FormID=1").map(|_| ()), Err(EnvelopeError::MissingSubmissionId));
        // What the standard reads, never refused: a stray `%`, a legacy charset's byte.
        assert_eq!(form("UniqueID=1&Message=100%").map(|e| e.body.get("Message").cloned()), Ok(Some(Json::string("100%"))));
        assert_eq!(form("UniqueID=caf%E9").map(|e| e.submission_id), Ok("café".into()));
        assert_eq!(form(r#"{"UniqueID":"1"}"#).map(|_| ()), Err(EnvelopeError::JsonDeclaredForm));
        assert_eq!(json("UniqueID=1&FormID=2").map(|_| ()), Err(EnvelopeError::FormDeclaredJson));
        // A repeated field is kept whole: both values, in order.
        let twice = form("UniqueID=1&Pick=a&Pick=b").unwrap();
        assert_eq!(twice.body.get("Pick").map(Json::to_text), Some(r#"["a","b"]"#.into()));
        // The same ID twice is not one identity.
        assert_eq!(form("UniqueID=1&UniqueID=2").map(|_| ()), Err(EnvelopeError::MissingSubmissionId));
    }
}
