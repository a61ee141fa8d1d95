//! What each fuzz target asserts: no panic, and the property that matters for its input.
//!
//! Every target is a `fn(&[u8])` that panics when a property fails. The libFuzzer binaries in
//! `fuzz_targets/` call these (`make fuzz`), and `tests/corpus.rs` feeds every file of the seed
//! corpus (`corpus/<target>/`) to the same functions on stable, in `make test`. Inputs that
//! carry headers are framed as `Name: value` lines, a blank line, then the body ([`framed`]).

mod credentials;
mod oracle;

pub use credentials::{BASIC, BEARER, FORM_SECRET, HEADER, SIGNING_SECRET};

use shared::auth::{AuthMethod, AuthPolicy, BodySignature, HeaderCredentials};
use shared::decision::Outcome;
use shared::dynamo::{item_from_wire, item_size, item_to_wire, AttributeValue};
use shared::envelope::parse_envelope;
use shared::fingerprint::fingerprint;
use shared::headers::Headers;
use shared::json::{parse, parse_wire, Json, JsonError, MAX_DEPTH};
use shared::key::check_key;
use shared::profile::registry::sender;
use shared::profile::registry::{lead_from_receipt, LeadMapping};
use shared::profile::sender::SenderAuth;
use shared::profile::Profile;
use shared::receipt::{Receipt, ReceiptStatus};
use shared::receive::{receive, Delivery, Policy, Step, DEFAULT_RETENTION_DAYS};
use shared::secret::{Credential, SigningSecret};
use shared::store::{classify_put, ExistingReceipt, PutOutcome, StoreError};
use shared::stream::{decide, NewImage, RecordAction};

/// A target: checks one input and names the path it took (the corpus replay makes sure the
/// seeds take every path; libFuzzer ignores the name).
pub type Target = fn(&[u8]) -> &'static str;

/// Every target by name, as its corpus directory is named, with every path it names.
pub const TARGETS: &[(&str, Target)] = &[
    ("json", json),
    ("form", form),
    ("receive", receive_delivery),
    ("auth", auth),
    ("dynamo_json", dynamo_json),
    ("store_answer", store_answer),
    ("stream_record", stream_record),
];

/// The paths each target can take; every one must be taken by some seed.
pub const PATHS: &[(&str, &[&str])] = &[
    ("json", &["accepted", "not_utf8", "too_deep", "duplicate_key", "syntax"]),
    ("form", &["utf8", "latin1"]),
    ("receive", &["stored", "refused", "stored_by_another_profile"]),
    ("auth", &["bearer", "basic", "header", "signature", "refused"]),
    ("dynamo_json", &["receipt", "item", "not_an_item", "not_json"]),
    ("store_answer", &["stored", "duplicate", "retryable", "permanent", "short"]),
    ("stream_record", &["apply", "poison", "skip", "missing_image", "wait"]),
];

/// The clock every target runs at (2026-12-01T00:21:53.123Z); corpus signatures use it.
pub const NOW_MILLIS: u64 = 1_796_084_513_123;

/// The form-encoded reader (`shared::form::parse`): never panics and never refuses; it reads
/// the fields rust-url reads (the WHATWG rules: `form_urlencoded` where every name and value is
/// UTF-8 once percent-decoded), each name to its value or, for a name given more than once, to
/// its values in order; a name or value whose bytes are not UTF-8 is those bytes as ISO-8859-1
/// (`percent_encoding` decodes them), where the standard would put U+FFFD.
pub fn form(data: &[u8]) -> &'static str {
    type Fields = std::collections::BTreeMap<String, Vec<String>>;
    let got: Fields = shared::form::parse(data)
        .into_iter()
        .map(|(name, value)| {
            let text = |v: Json| match v {
                Json::String(s) => s,
                other => panic!("a field's value is not a string: {other:?}"),
            };
            let values = match value {
                Json::Array(many) if many.len() > 1 => many.into_iter().map(text).collect(),
                one => vec![text(one)],
            };
            (name, values)
        })
        .collect();
    // Each name or value's bytes, as rust-url decodes them, read as UTF-8 or else as ISO-8859-1.
    let decode = |part: &[u8]| {
        let spaced: Vec<u8> = part.iter().map(|&b| if b == b'+' { b' ' } else { b }).collect();
        let bytes: Vec<u8> = percent_encoding::percent_decode(&spaced).collect();
        match String::from_utf8(bytes) {
            Ok(text) => (text, true),
            Err(e) => (e.into_bytes().into_iter().map(char::from).collect(), false),
        }
    };
    let mut expected = Fields::new();
    let mut all_utf8 = true;
    for pair in data.split(|&b| b == b'&').filter(|p| !p.is_empty()) {
        let at = pair.iter().position(|&b| b == b'=').unwrap_or(pair.len());
        let ((name, name_utf8), (value, value_utf8)) = (decode(&pair[..at]), decode(pair.get(at + 1..).unwrap_or(&[])));
        all_utf8 &= name_utf8 && value_utf8;
        expected.entry(name).or_default().push(value);
    }
    assert_eq!(got, expected, "the fields read");
    if all_utf8 {
        // Where the body is UTF-8, the standard's own reader agrees to the letter.
        let mut whatwg = Fields::new();
        for (name, value) in form_urlencoded::parse(data) {
            whatwg.entry(name.into_owned()).or_default().push(value.into_owned());
        }
        assert_eq!(got, whatwg, "the WHATWG reading differs");
        return "utf8";
    }
    "latin1"
}

/// The policy every delivery target runs against: all four methods configured.
pub fn policy() -> Policy {
    let signing = SigningSecret::parse(SIGNING_SECRET).expect("the fuzz signing secret parses");
    Policy {
        senders: vec![(
            Profile::StaticForms,
            AuthPolicy {
                bearer_tokens: vec![Credential::new(BEARER.as_bytes())],
                basic_credentials: vec![Credential::new(BASIC.as_bytes())],
                header: Some(HeaderCredentials {
                    name: HEADER.0.into(),
                    values: vec![Credential::new(HEADER.1.as_bytes())],
                }),
                signing_secrets: vec![signing],
                body_signature: None,
            },
        )],
        table: "receipts".into(),
        retention_days: DEFAULT_RETENTION_DAYS,
        max_body_bytes: 256 * 1024,
    }
}

/// Splits an input into headers and body: `Name: value` lines up to the first empty line, then
/// the body's bytes. Without an empty line the whole input is the body.
pub fn framed(data: &[u8]) -> (Headers, &[u8]) {
    let Some(end) = data.windows(2).position(|w| w == b"\n\n") else {
        return (Headers::new(Vec::<(String, String)>::new()), data);
    };
    let head = String::from_utf8_lossy(&data[..end]);
    let pairs = head.split('\n').filter_map(|line| {
        let (name, value) = line.split_once(':')?;
        Some((name.to_string(), value.strip_prefix(' ').unwrap_or(value).to_string()))
    });
    (Headers::new(pairs.collect::<Vec<_>>()), &data[end + 2..])
}

/// The JSON parser, judged against `serde_json` and the rules: valid UTF-8 only; a syntax error
/// only where serde_json finds one too; "too deep" only past the limit; and what it accepts
/// writes back as text that reads as the same value, in both forms and both parsers.
pub fn json(data: &[u8]) -> &'static str {
    let judged = serde_json::from_slice::<serde_json::Value>(data);
    // serde_json refuses two things this parser accepts on purpose: numbers past f64's range
    // (kept here as their text) and lone surrogate escapes (read as U+FFFD).
    let surrogate_escape = data.windows(4).any(|w| {
        w[0] == b'\\'
            && w[1] == b'u'
            && matches!(w[2], b'd' | b'D')
            && matches!(w[3], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
    });
    let judged_valid = match &judged {
        Ok(_) => true,
        Err(e) => surrogate_escape || e.to_string().contains("number out of range"),
    };
    match parse(data) {
        Ok(value) => {
            assert!(judged_valid, "accepted what serde_json refuses: {judged:?}");
            assert!(std::str::from_utf8(data).is_ok(), "accepted bytes that are not UTF-8");
            assert!(oracle::nesting(data) <= MAX_DEPTH, "accepted nesting past the limit");
            let text = value.to_text();
            assert_eq!(parse(text.as_bytes()).as_ref(), Ok(&value), "compact text reads back: {text}");
            let canonical = value.to_canonical_text();
            let again = parse(canonical.as_bytes()).expect("canonical text reads back");
            assert_eq!(again.to_canonical_text(), canonical, "canonical form is stable");
            assert_eq!(parse_wire(data).as_ref(), Ok(&value), "the wire parser reads it the same");
            "accepted"
        }
        Err(JsonError::NotUtf8) => {
            assert!(std::str::from_utf8(data).is_err(), "UTF-8 refused as invalid");
            "not_utf8"
        }
        Err(JsonError::TooDeep) => {
            assert!(oracle::nesting(data) > MAX_DEPTH, "refused as too deep");
            "too_deep"
        }
        Err(JsonError::DuplicateKey) => "duplicate_key",
        Err(JsonError::Syntax { .. }) => {
            assert!(judged.is_err(), "a syntax error in what serde_json reads");
            "syntax"
        }
    }
}

/// The whole decision path on one delivery with arbitrary headers: a refusal is a 4xx; an
/// accepted delivery authenticated genuinely, carries the key its envelope implies, and its
/// item satisfies DynamoDB's rules and reads back downstream (the stream worker's lead, a
/// duplicate's 200, a changed form's 422, a fresh store's 202).
pub fn receive_delivery(data: &[u8]) -> &'static str {
    let (headers, body) = framed(data);
    let stored_by_another = other_profiles(&headers, body);
    let policy = policy();
    let delivery = Delivery {
        profile: Profile::StaticForms,
        headers: &headers,
        body,
        request_id: "fuzz-req",
        now_millis: NOW_MILLIS,
    };
    let pending = match receive(&policy, &delivery) {
        Step::Respond(outcome, _) => {
            let status = outcome.response().status;
            assert!((400..500).contains(&status), "refused with {status}: {outcome:?}");
            return if stored_by_another { "stored_by_another_profile" } else { "refused" };
        }
        Step::Store(pending) => pending,
    };
    assert!(oracle::genuinely_authenticated(&headers, body, NOW_MILLIS), "accepted without a valid credential");
    let envelope = parse_envelope(body).expect("an accepted body is an envelope");
    let key = check_key(&headers, &envelope.submission_id).expect("an accepted delivery has its key");
    let request = parse_wire(pending.request.body.as_bytes()).expect("the PutItem body is JSON");
    let item = item_from_wire(request.get("Item").expect("the PutItem has an Item")).expect("the Item reads");
    if let Err(broken) = oracle::satisfies_item_rules(&item) {
        panic!("the stored item breaks DynamoDB's rules: {broken}");
    }
    let accepted = Receipt::new(&envelope, key, "fuzz-req", NOW_MILLIS, DEFAULT_RETENTION_DAYS);
    let wire = item_to_wire(&item).to_text();
    match decide("INSERT", &NewImage::from_wire(wire.as_bytes(), || (None, None, None)), &LeadMapping::default()) {
        RecordAction::Apply { lead, .. } => {
            assert_eq!(
                Ok(*lead),
                lead_from_receipt(&accepted, &LeadMapping::default()),
                "the stream worker reads the lead accepted"
            )
        }
        other => panic!("the stream worker would {other:?} an accepted delivery"),
    }
    assert_eq!(pending.finish(classify_put(200, b"{}")).response().status, 202);
    let duplicate = |item_wire: &str| {
        let answer = format!(
            r#"{{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Item":{item_wire}}}"#
        );
        pending.finish(classify_put(400, answer.as_bytes())).response().status
    };
    assert_eq!(duplicate(&wire), 200, "a retry is acknowledged");
    let other = fingerprint(Some(&Json::string("other form content")));
    if other != accepted.fingerprint {
        let mut changed = item.clone();
        changed.insert("fingerprint".into(), AttributeValue::S(other));
        assert_eq!(duplicate(&item_to_wire(&changed).to_text()), 422, "other content under the key is refused");
    }
    "stored"
}
/// The same input through every other sender profile, each with its own credential: a refusal
/// is a 4xx; an accepted delivery is signed as that sender signs (checked again here), stored
/// under its profile's key as an item that satisfies DynamoDB's rules, read back downstream
/// into the lead accepted, and acknowledged with its sender's 2xx (202, or 200 for Webflow),
/// then 200 on a retry. True if any stored it.
fn other_profiles(headers: &Headers, body: &[u8]) -> bool {
    let mut stored = false;
    let mut policy = policy();
    policy.senders.extend(other_profiles_auth());
    for profile in Profile::ALL.into_iter().filter(|p| *p != Profile::StaticForms) {
        let delivery = Delivery { profile, headers, body, request_id: "fuzz-req", now_millis: NOW_MILLIS };
        let pending = match receive(&policy, &delivery) {
            Step::Respond(outcome, _) => {
                let status = outcome.response().status;
                assert!((400..500).contains(&status), "{profile:?} refused with {status}: {outcome:?}");
                continue;
            }
            Step::Store(pending) => pending,
        };
        assert!(oracle::signed_for(profile, headers, body, NOW_MILLIS), "{profile:?} accepted without a signature");
        let envelope = profile.read(headers, body).expect("an accepted body is the profile's envelope");
        let key = profile.key(&envelope.submission_id);
        let request = parse_wire(pending.request.body.as_bytes()).expect("the PutItem body is JSON");
        let item = item_from_wire(request.get("Item").expect("the PutItem has an Item")).expect("the Item reads");
        if let Err(broken) = oracle::satisfies_item_rules(&item) {
            panic!("{profile:?}: the stored item breaks DynamoDB's rules: {broken}");
        }
        assert_eq!(item.get("pk").and_then(AttributeValue::as_s), Some(key.as_str()), "stored under its key");
        let accepted = Receipt::new(&envelope, key, "fuzz-req", NOW_MILLIS, DEFAULT_RETENTION_DAYS);
        let wire = item_to_wire(&item).to_text();
        match decide("INSERT", &NewImage::from_wire(wire.as_bytes(), || (None, None, None)), &LeadMapping::default()) {
            RecordAction::Apply { lead, receipt } => {
                assert_eq!(receipt.profile, profile);
                assert_eq!(Ok(*lead), lead_from_receipt(&accepted, &LeadMapping::default()), "{profile:?}'s lead");
            }
            other => panic!("the stream worker would {other:?} an accepted {profile:?} delivery"),
        }
        assert_eq!(pending.finish(classify_put(200, b"{}")).response().status, profile.acknowledgement().status());
        let answer =
            format!(r#"{{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Item":{wire}}}"#);
        assert_eq!(pending.finish(classify_put(400, answer.as_bytes())).response().status, 200, "{profile:?} retry");
        stored = true;
    }
    stored
}

/// Every registered profile but Static Forms, with the fuzz credential its [`SenderAuth`] asks
/// for: [`SIGNING_SECRET`] for Standard Webhooks signatures, [`FORM_SECRET`] for body signatures.
pub fn other_profiles_auth() -> Vec<(Profile, AuthPolicy)> {
    let form = SigningSecret::plain(FORM_SECRET).expect("the fuzz form secret is not empty");
    let sw = SigningSecret::parse(SIGNING_SECRET).expect("the fuzz signing secret parses");
    let auth = |profile: Profile| match sender(profile).auth() {
        SenderAuth::StaticForms => None,
        SenderAuth::StandardWebhooks { .. } => {
            Some(AuthPolicy { signing_secrets: vec![sw.clone()], ..AuthPolicy::default() })
        }
        SenderAuth::BodySigned { scheme, .. } => Some(AuthPolicy {
            body_signature: Some(BodySignature::new(scheme, vec![form.clone()])),
            ..AuthPolicy::default()
        }),
    };
    Profile::ALL.into_iter().filter_map(|p| auth(p).map(|a| (p, a))).collect()
}

/// Sender authentication with every method configured: accepts only a credential that is
/// genuinely valid (checked again here, independently), and never panics on what it is sent.
pub fn auth(data: &[u8]) -> &'static str {
    let (headers, body) = framed(data);
    let policy = policy();
    let now_secs = i64::try_from(NOW_MILLIS / 1000).unwrap_or(i64::MAX);
    let result =
        policy.auth(Profile::StaticForms).expect("Static Forms is enabled").authenticate(&headers, body, now_secs);
    let genuine = oracle::valid_methods(&headers, body, NOW_MILLIS);
    match result {
        Ok(method) => {
            assert!(genuine.contains(&method), "accepted by {method:?}, valid: {genuine:?}");
            match method {
                AuthMethod::Bearer => "bearer",
                AuthMethod::Basic => "basic",
                AuthMethod::Header => "header",
                AuthMethod::Signature => "signature",
                AuthMethod::BodySignature => unreachable!("no body signature is configured"),
            }
        }
        Err(error) => {
            assert!(genuine.is_empty(), "refused ({error:?}) though valid by {genuine:?}");
            "refused"
        }
    }
}

/// The DynamoDB-JSON decoder: what it reads writes back to the same item; a receipt it reads
/// writes back to the same receipt; the readers of an existing receipt never panic.
pub fn dynamo_json(data: &[u8]) -> &'static str {
    let Ok(wire) = parse_wire(data) else { return "not_json" };
    let Ok(item) = item_from_wire(&wire) else { return "not_an_item" };
    let written = item_to_wire(&item);
    assert_eq!(item_from_wire(&written).as_ref(), Ok(&item), "an item reads back from its wire form");
    let reparsed = parse_wire(written.to_text().as_bytes()).expect("wire text reads back");
    assert_eq!(reparsed, written, "wire text reads back as the same JSON");
    let _ = item_size(&item);
    let _ = ExistingReceipt::from_item(&item);
    let Ok(receipt) = Receipt::from_item(&item) else { return "item" };
    assert_eq!(Receipt::from_item(&receipt.to_item()), Ok(receipt.clone()), "a receipt reads back");
    let _ = lead_from_receipt(&receipt, &LeadMapping::default());
    "receipt"
}

/// The store-answer classifier (first two bytes: the HTTP status, big-endian; the rest: the
/// body): only a 200 with a JSON object and no error type is stored; only a conditional-check
/// failure carrying a readable receipt is a duplicate; throttling and 5xx are always retryable;
/// and a delivery is answered 2xx only for those two.
pub fn store_answer(data: &[u8]) -> &'static str {
    let (status, body) = match data {
        [hi, lo, rest @ ..] => (u16::from_be_bytes([*hi, *lo]) % 600, rest),
        _ => return "short",
    };
    let outcome = classify_put(status, body);
    // The answer read independently (serde_json), when it can read it.
    let judged: Option<serde_json::Value> = serde_json::from_slice(body).ok().filter(serde_json::Value::is_object);
    let error_type = judged.as_ref().and_then(|b| b["__type"].as_str()).map(|t| t.rsplit('#').next().unwrap_or(t));
    match &outcome {
        PutOutcome::Stored => {
            assert_eq!(status, 200, "stored on status {status}");
            let parsed = parse_wire(body).ok().filter(|b| matches!(b, Json::Object(_)));
            assert!(parsed.is_some_and(|b| b.get("__type").is_none()), "stored on an error body");
        }
        PutOutcome::Duplicate(existing) => {
            assert!(matches!(status, 400 | 403), "duplicate on status {status}");
            if let Some(judged) = &judged {
                assert_eq!(error_type, Some("ConditionalCheckFailedException"), "duplicate on {error_type:?}");
                let text = |name: &str| judged["Item"][name]["S"].as_str();
                assert_eq!(text("fingerprint"), Some(existing.fingerprint.as_str()));
                assert_eq!(text("status"), Some(existing.status.as_str()));
                assert_eq!(text("receivedAt"), Some(existing.received_at.as_str()));
            }
        }
        PutOutcome::Failed(error) => {
            // DynamoDB's throttling and server errors, by status or by type, pass with time.
            let throttled = matches!(
                error_type,
                Some("ThrottlingException" | "ProvisionedThroughputExceededException" | "RequestLimitExceeded")
            );
            if status >= 500 || status == 429 || (status == 400 && throttled) {
                assert!(
                    matches!(error, StoreError::Retryable(_)),
                    "{status} {error_type:?} is not retryable: {error:?}"
                );
            }
        }
    }
    // The same answer to a real delivery: 2xx only when the store proved a receipt.
    let headers = Headers::new([
        ("Content-Type", "application/json".to_string()),
        ("Authorization", format!("Bearer {BEARER}")),
        ("Idempotency-Key", "staticforms:form.submitted:fuzz-1".to_string()),
    ]);
    let body = br#"{"event":"form.submitted","timestamp":1,"data":{"submissionId":"fuzz-1","formData":{"email":"a@example.com"}}}"#;
    let delivery = Delivery {
        profile: Profile::StaticForms,
        headers: &headers,
        body,
        request_id: "fuzz-req",
        now_millis: NOW_MILLIS,
    };
    let Step::Store(pending) = receive(&policy(), &delivery) else { panic!("the fixed delivery is accepted") };
    let answered = pending.finish(outcome.clone());
    if (200..300).contains(&answered.response().status) {
        assert!(
            matches!(outcome, PutOutcome::Stored | PutOutcome::Duplicate(_)),
            "answered {answered:?} on {outcome:?}"
        );
    }
    if let Outcome::Duplicate(summary) = &answered {
        assert_eq!(summary.submission_id, "fuzz-1", "a duplicate is answered for the delivery's own ID");
    }
    match outcome {
        PutOutcome::Stored => "stored",
        PutOutcome::Duplicate(_) => "duplicate",
        PutOutcome::Failed(StoreError::Retryable(_)) => "retryable",
        PutOutcome::Failed(StoreError::Permanent(_)) => "permanent",
    }
}

/// The stream worker's decision (first byte: the event name; the rest: the new image's wire
/// JSON): a lead is written only for an inserted or modified receipt waiting as `RECEIVED`,
/// and it is the lead that receipt maps to; a removal is never applied.
pub fn stream_record(data: &[u8]) -> &'static str {
    let Some((selector, image)) = data.split_first() else {
        assert_eq!(
            decide("INSERT", &NewImage::Absent, &LeadMapping::default()),
            RecordAction::MissingImage,
            "no image is never skipped"
        );
        return "missing_image";
    };
    let event = ["INSERT", "MODIFY", "REMOVE", "OTHER"][usize::from(*selector % 4)];
    let fallback = || {
        if selector & 4 == 0 {
            (None, None, None)
        } else {
            (
                Some("staticforms:form.submitted:x".into()),
                Some("RECEIVED".into()),
                Some("2026-12-01T00:00:00.000Z".into()),
            )
        }
    };
    let image = NewImage::from_wire(image, fallback);
    let _ = image.submission_id();
    match decide(event, &image, &LeadMapping::default()) {
        RecordAction::Apply { receipt, lead } => {
            assert!(matches!(event, "INSERT" | "MODIFY"), "applied a {event}");
            let NewImage::Item(item) = &image else { panic!("applied an unreadable image") };
            assert_eq!(item.get("status").and_then(AttributeValue::as_s), Some(ReceiptStatus::Received.as_str()));
            assert_eq!(item.get("pk").and_then(AttributeValue::as_s), Some(receipt.key.as_str()));
            let stored = Receipt::from_item(item).expect("an applied image is a receipt");
            assert_eq!(*receipt, stored, "the receipt applied is the image's");
            assert_eq!(Ok(*lead), lead_from_receipt(&stored, &LeadMapping::default()), "the lead is the receipt's");
            "apply"
        }
        RecordAction::Poison { key, .. } => {
            assert!(matches!(event, "INSERT" | "MODIFY"), "poisoned a {event}");
            let stored_key = match &image {
                NewImage::Item(item) => item.get("pk").and_then(AttributeValue::as_s).map(str::to_string),
                NewImage::Unreadable { key, .. } => key.clone(),
                NewImage::Absent => None,
            };
            assert_eq!(Some(key), stored_key, "poisoned under another key");
            "poison"
        }
        RecordAction::MissingImage => panic!("an image that is present was taken for a missing one"),
        RecordAction::Wait(_) => {
            let NewImage::Item(item) = &image else { panic!("waited on an unreadable image") };
            let profile = item.get("profile").and_then(AttributeValue::as_s);
            assert!(profile.is_some_and(|p| Profile::parse(p).is_none()), "waited on a known profile: {profile:?}");
            "wait"
        }
        _ => "skip",
    }
}
