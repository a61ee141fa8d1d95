//! "Accepted means processable", as a property: for arbitrary bodies with a valid-looking
//! envelope, the core either refuses before writing (a 4xx), or the item it writes satisfies
//! DynamoDB's documented item rules and every reader downstream reads it back: the stream
//! decision into the same lead, the duplicate path into a 200.

use super::*;
use crate::decision::TooLarge;
use crate::dynamo::{item_from_wire, item_size, item_to_wire, AttributeValue, Item, MAX_ITEM_BYTES};
use crate::envelope::{parse_envelope, EnvelopeError};
use crate::json::{parse, parse_wire, Json, JsonError};
use crate::key::expected_key;
use crate::profile::registry::{lead_from_receipt, LeadMapping};
use crate::profile::sender::{form_encode, SenderAuth};
use crate::secret::Credential;
use crate::store::classify_put;
use crate::stream::{decide, NewImage, RecordAction};
use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;
use proptest::prelude::*;

const NOW: u64 = 1_796_019_713_123;

fn policy() -> Policy {
    Policy {
        senders: alloc::vec![(
            Profile::StaticForms,
            AuthPolicy { bearer_tokens: alloc::vec![Credential::new(b"tok")], ..AuthPolicy::default() },
        )],
        table: "receipts".into(),
        retention_days: DEFAULT_RETENTION_DAYS,
        max_body_bytes: 1 << 20,
    }
}

/// A JSON string literal built from pieces that reach every corner: plain text, every control
/// character escaped, quotes and backslashes, non-BMP characters raw and as surrogate pairs,
/// and lone surrogate escapes.
fn string_literal() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "\\PC{0,6}".prop_map(|s| {
            let quoted = serde_json::to_string(&s).unwrap();
            quoted[1..quoted.len() - 1].to_string()
        }),
        1 => (0u32..0x20).prop_map(|c| format!("\\u{c:04x}")),
        1 => prop::sample::select(alloc::vec!["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"])
            .prop_map(String::from),
        1 => prop::sample::select(alloc::vec!["😀", "\\ud83d\\ude00", "\\uD83D\\uDE00", "\\ud83d", "\\ude00", "\u{10ffff}", "\u{7f}\u{85}"])
            .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

/// Number literals past what `i64`, `f64` and DynamoDB hold.
fn number_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        "-?(0|[1-9][0-9]{0,45})(\\.[0-9]{1,45})?([eE][+-]?[0-9]{1,4})?",
        prop::sample::select(alloc::vec!["-0", "1e400", "-1E-400", "0.0e-99999", "1e126", "1e-131", "9.9e125"])
            .prop_map(String::from),
    ]
}

/// Object keys: empty, blank, odd punctuation, non-ASCII, escapes.
fn key_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => string_literal(),
        1 => prop::sample::select(alloc::vec!["\"\"", "\" \"", "\"a.b\"", "\"#x\"", "\":\"", "\"__proto__\"", "\"M\"", "\"S\""])
            .prop_map(String::from),
    ]
}

/// Any JSON value as text, nested up to `levels`.
fn value_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        number_literal(),
        string_literal(),
    ];
    leaf.prop_recursive(6, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec((key_literal(), inner), 0..5).prop_map(|members| {
                let members: Vec<String> = members.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// A value wrapped in `levels` objects and arrays, alternating: reaches and passes the limit.
fn deep_text() -> impl Strategy<Value = String> {
    (0usize..34, value_text()).prop_map(|(levels, inner)| {
        let mut text = inner;
        for level in 0..levels {
            text = if level % 2 == 0 { format!("{{\"k\":{text}}}") } else { format!("[{text}]") };
        }
        text
    })
}

/// Submission IDs: ordinary, odd, controls, up to and past 1,024 bytes.
fn id_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[A-Za-z0-9_]{1,20}".prop_map(|s| format!("\"{s}\"")),
        2 => string_literal(),
        1 => (1000usize..1030, prop::sample::select(alloc::vec!["x", "é", "/", "😀"]))
            .prop_map(|(n, c)| format!("\"{}\"", c.repeat(n / c.len()))),
    ]
}

/// Padding that sometimes takes the item past DynamoDB's size.
fn padding() -> impl Strategy<Value = usize> {
    prop_oneof![6 => Just(0usize), 1 => 390_000usize..410_000]
}

fn body_text() -> impl Strategy<Value = (String, String)> {
    (id_literal(), prop_oneof![value_text(), deep_text()], padding(), number_literal()).prop_map(
        |(id, form, pad, timestamp)| {
            let form = format!("{{\"f\":{form},\"name\":\"Ada\",\"email\":\"a@example.com\"}}");
            let body = format!(
                "{{\"event\":\"form.submitted\",\"timestamp\":{timestamp},\"data\":{{\"submissionId\":{id},\"formData\":{form},\"apiKey\":\"k\",\"pad\":\"{}\"}}}}",
                "p".repeat(pad)
            );
            (id, body)
        },
    )
}

/// DynamoDB's documented rules for an item this receiver writes: size, key size, numbers,
/// nesting, non-empty sets. (String values may be empty outside keys.)
fn satisfies_item_rules(item: &Item) -> Result<(), String> {
    fn value_ok(value: &AttributeValue, depth: usize) -> Result<(), String> {
        if depth > 32 {
            return Err("nested past 32 levels".into());
        }
        match value {
            AttributeValue::N(n) if !crate::decimal::Decimal::parse(n).is_some_and(|d| d.fits_dynamodb()) => {
                Err(format!("number {n} out of range"))
            }
            // "Attribute names must be at least one character long", in maps too.
            AttributeValue::M(m) if m.keys().any(String::is_empty) => Err("empty attribute name".into()),
            AttributeValue::M(m) => m.values().try_for_each(|v| value_ok(v, depth + 1)),
            AttributeValue::L(l) => l.iter().try_for_each(|v| value_ok(v, depth + 1)),
            AttributeValue::Ss(s) if s.is_empty() => Err("empty set".into()),
            _ => Ok(()),
        }
    }
    if item_size(item) > MAX_ITEM_BYTES {
        return Err(format!("item of {} bytes", item_size(item)));
    }
    match item.get("pk") {
        Some(AttributeValue::S(pk)) if !pk.is_empty() && pk.len() <= 2048 => {}
        other => return Err(format!("partition key {other:?}")),
    }
    item.values().try_for_each(|v| value_ok(v, 1))
}

/// 1 to 1,024 bytes, no C0 or C1 control character, DEL included: the documented rule, written
/// out again.
fn plainly_valid_id(id: &str) -> bool {
    let control = |c: char| (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32));
    !id.is_empty() && id.len() <= 1024 && !id.chars().any(control)
}

/// The deepest nesting of arrays and objects in JSON text, strings skipped.
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

fn headers_for(id: &str) -> Headers {
    Headers::new([
        ("Content-Type", String::from("application/json")),
        ("Authorization", String::from("Bearer tok")),
        ("Idempotency-Key", expected_key(id)),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn accepted_means_processable((id_literal, body) in body_text()) {
        let id = match parse(id_literal.as_bytes()) {
            Ok(Json::String(id)) => id,
            _ => id_literal.clone(),
        };
        let policy = policy();
        let headers = headers_for(&id);
        let delivery = Delivery {
            profile: Profile::StaticForms,
            headers: &headers,
            body: body.as_bytes(),
            request_id: "req-1",
            now_millis: NOW,
        };
        let pending = match receive(&policy, &delivery) {
            Step::Respond(outcome, _) => {
                let status = outcome.response().status;
                prop_assert!((400..500).contains(&status), "refused with {status}: {outcome:?}");
                // Every refusal is one the input earns, judged without the code under test.
                match &outcome {
                    Outcome::InvalidEnvelope(EnvelopeError::InvalidSubmissionId) => {
                        prop_assert!(!plainly_valid_id(&id), "{id:?} refused");
                    }
                    Outcome::InvalidEnvelope(EnvelopeError::InvalidJson(JsonError::TooDeep)) => {
                        prop_assert!(nesting(&body) > crate::json::MAX_DEPTH, "refused as too deep");
                    }
                    // The generator may repeat a key in one object.
                    Outcome::InvalidEnvelope(EnvelopeError::InvalidJson(JsonError::DuplicateKey)) => {}
                    Outcome::PayloadTooLarge(TooLarge::Item) => prop_assert!(body.len() > 390_000),
                    other => prop_assert!(false, "refused for no reason the input has: {other:?}"),
                }
                return Ok(());
            }
            Step::Store(pending) => pending,
        };
        // What the edge writes fits DynamoDB.
        let request = parse_wire(pending.request.body.as_bytes()).unwrap();
        let item = item_from_wire(request.get("Item").unwrap()).unwrap();
        prop_assert_eq!(satisfies_item_rules(&item), Ok(()));
        // ...and is in the index of waiting receipts, so reconcile can find it.
        prop_assert_eq!(
            item.get(crate::receipt::PENDING_SHARD),
            Some(&AttributeValue::S(crate::receipt::pending_shard(&expected_key(&id))))
        );

        // What the edge accepted, as a lead.
        let envelope = parse_envelope(body.as_bytes()).unwrap();
        let accepted = Receipt::new(&envelope, expected_key(&id), "req-1", NOW, DEFAULT_RETENTION_DAYS);
        let expected_lead = lead_from_receipt(&accepted, &LeadMapping::default()).unwrap();

        // The stream worker reads the image (wire JSON, as the record carries it) into that lead.
        let wire = item_to_wire(&item).to_text();
        let image = NewImage::from_wire(wire.as_bytes(), || (None, None, None));
        match decide("INSERT", &image, &LeadMapping::default()) {
            RecordAction::Apply { lead, receipt } => {
                prop_assert_eq!(*lead, expected_lead);
                prop_assert_eq!(receipt.payload, accepted.payload);
            }
            other => prop_assert!(false, "the stream worker would {other:?}"),
        }

        // A retry reads the `ALL_OLD` item back and is acknowledged as a duplicate.
        let answer = format!(
            r#"{{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Item":{wire}}}"#
        );
        let outcome = pending.finish(classify_put(400, answer.as_bytes()));
        prop_assert_eq!(outcome.response().status, 200, "{:?}", outcome);
    }
}

/// The profiles [`profile_delivery`] builds deliveries for: every one but Static Forms.
const OTHER_PROFILES: [Profile; 8] = [
    Profile::StandardWebhooks,
    Profile::Typeform,
    Profile::Tally,
    Profile::Webflow,
    Profile::Framer,
    Profile::Basin,
    Profile::Formspree,
    Profile::Formstack,
];

/// A delivery to `profile` (not Static Forms) carrying `id` as its identity and `form` as the
/// respondent's content, padded; signed as the sender signs.
fn profile_delivery(profile: Profile, id_literal: &str, id: &str, form: &str, pad: usize) -> (Headers, String) {
    let pad = "p".repeat(pad);
    let mut content_type = "application/json";
    let body = match profile {
        Profile::StandardWebhooks => {
            format!(r#"{{"type":"t","data":{{"f":{form},"email":"a@example.com"}},"pad":"{pad}"}}"#)
        }
        Profile::Typeform => format!(
            r#"{{"event_type":"form_response","form_response":{{"form_id":"f","token":{id_literal},"answers":[{{"type":"text","text":{form},"field":{{"id":"a","type":"long_text"}}}}],"hidden":{{"h":{form}}}}},"pad":"{pad}"}}"#
        ),
        Profile::Tally => format!(
            r#"{{"eventType":"FORM_RESPONSE","data":{{"responseId":{id_literal},"fields":[{{"key":"k","label":"L","type":"TEXTAREA","value":{form}}}]}},"pad":"{pad}"}}"#
        ),
        Profile::Webflow => format!(
            r#"{{"triggerType":"form_submission","payload":{{"id":{id_literal},"data":{{"f":{form},"Email":"a@example.com"}}}},"pad":"{pad}"}}"#
        ),
        Profile::Framer => format!(r#"{{"f":{form},"Email":"a@example.com","pad":"{pad}"}}"#),
        Profile::Basin => format!(r#"{{"id":{id_literal},"f":{form},"email":"a@example.com","pad":"{pad}"}}"#),
        Profile::Formspree => format!(
            r#"{{"form":"x","submission":{{"submissionId":{id_literal},"f":{form},"email":"a@example.com"}},"pad":"{pad}"}}"#
        ),
        _ => {
            content_type = "application/x-www-form-urlencoded";
            format!("UniqueID={}&f={}&Email=a%40example.com&pad={pad}", form_encode(id), form_encode(form))
        }
    };
    let secret = crate::secret::SigningSecret::plain("form-secret").unwrap();
    let timestamp = format!("{}", NOW / 1000);
    let mut headers = alloc::vec![(String::from("Content-Type"), String::from(content_type))];
    match crate::profile::registry::sender(profile).auth() {
        SenderAuth::BodySigned { scheme, .. } => {
            if profile == Profile::Framer {
                headers.push(("framer-webhook-submission-id".into(), id.into()));
            }
            let config = crate::auth::BodySignature::new(scheme, alloc::vec![]);
            let others = Headers::new(headers.clone());
            headers.extend(crate::auth::body_signature_headers(&config, &secret, &others, body.as_bytes(), NOW));
        }
        _ => {
            headers.push(("webhook-id".into(), id.into()));
            headers.push(("webhook-timestamp".into(), timestamp.clone()));
            headers.push((
                "webhook-signature".into(),
                crate::auth::signature_header(&secret, id, &timestamp, body.as_bytes()),
            ));
        }
    }
    (Headers::new(headers), body)
}

fn every_profile_policy() -> Policy {
    let secret = crate::secret::SigningSecret::plain("form-secret").unwrap();
    let mut policy = policy();
    for profile in OTHER_PROFILES {
        let auth = match crate::profile::registry::sender(profile).auth() {
            SenderAuth::BodySigned { scheme, .. } => AuthPolicy {
                body_signature: Some(crate::auth::BodySignature::new(scheme, alloc::vec![secret.clone()])),
                ..AuthPolicy::default()
            },
            _ => AuthPolicy { signing_secrets: alloc::vec![secret.clone()], ..AuthPolicy::default() },
        };
        policy.senders.push((profile, auth));
    }
    policy
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// "Accepted means processable" for every other profile: a delivery is stored only as an
    /// item that fits DynamoDB and reads back into the lead the edge accepted, a retry of it is
    /// a 200, and every refusal is one the input earns.
    #[test]
    fn every_profile_accepts_only_what_it_can_process(
        which in 0usize..OTHER_PROFILES.len(),
        id_literal in id_literal(),
        form in prop_oneof![value_text(), deep_text()],
        pad in padding(),
    ) {
        let profile = OTHER_PROFILES[which];
        let id = match parse(id_literal.as_bytes()) {
            Ok(Json::String(id)) => id,
            _ => id_literal.clone(),
        };
        let (headers, body) = profile_delivery(profile, &id_literal, &id, &form, pad);
        let policy = every_profile_policy();
        let delivery = Delivery { profile, headers: &headers, body: body.as_bytes(), request_id: "req-1", now_millis: NOW };
        let identity = if profile == Profile::Typeform { format!("f:{id}") } else { id.clone() };
        let pending = match receive(&policy, &delivery) {
            Step::Respond(outcome, _) => {
                match &outcome {
                    Outcome::InvalidEnvelope(EnvelopeError::InvalidSubmissionId) | Outcome::InvalidKey(crate::key::KeyError::Invalid) => {
                        // Typeform's parts are each an identity, and so is their join.
                        prop_assert!(!plainly_valid_id(&identity) || !plainly_valid_id(&id), "{identity:?} refused");
                    }
                    Outcome::InvalidEnvelope(EnvelopeError::InvalidJson(JsonError::TooDeep)) => {
                        prop_assert!(nesting(&body) > crate::json::MAX_DEPTH, "refused as too deep");
                    }
                    Outcome::InvalidEnvelope(EnvelopeError::InvalidJson(JsonError::DuplicateKey)) => {}
                    // Formspree's ID is the form's own hidden input: an empty one is none.
                    Outcome::InvalidEnvelope(EnvelopeError::MissingSubmissionIdField) => {
                        prop_assert!(profile == Profile::Formspree && id.is_empty(), "{id:?}");
                    }
                    Outcome::PayloadTooLarge(_) => prop_assert!(body.len() > 390_000),
                    other => prop_assert!(false, "{profile:?} refused for no reason the input has: {other:?}"),
                }
                prop_assert!((400..500).contains(&outcome.response().status));
                return Ok(());
            }
            Step::Store(pending) => pending,
        };
        let request = parse_wire(pending.request.body.as_bytes()).unwrap();
        let item = item_from_wire(request.get("Item").unwrap()).unwrap();
        prop_assert_eq!(satisfies_item_rules(&item), Ok(()));
        let key = profile.key(&identity);
        prop_assert_eq!(item.get("pk").and_then(AttributeValue::as_s), Some(key.as_str()));

        let envelope = profile.read(&headers, body.as_bytes()).unwrap();
        let accepted = Receipt::new(&envelope, key, "req-1", NOW, DEFAULT_RETENTION_DAYS);
        let expected_lead = lead_from_receipt(&accepted, &LeadMapping::default()).unwrap();
        let wire = item_to_wire(&item).to_text();
        match decide("INSERT", &NewImage::from_wire(wire.as_bytes(), || (None, None, None)), &LeadMapping::default()) {
            RecordAction::Apply { lead, receipt } => {
                prop_assert_eq!(*lead, expected_lead);
                prop_assert_eq!(receipt.profile, profile);
            }
            other => prop_assert!(false, "the stream worker would {other:?}"),
        }
        let answer = format!(
            r#"{{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Item":{wire}}}"#
        );
        prop_assert_eq!(pending.finish(classify_put(400, answer.as_bytes())).response().status, 200);
    }
}
