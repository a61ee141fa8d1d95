//! Log hygiene, end to end: deliveries carrying recognisable credentials and personal data go
//! through the built Worker, the stream worker in local (poll) mode and in Lambda mode, into a
//! sink that echoes what it is sent back in its error answers (and, in Lambda mode, into
//! Salesforce and HubSpot through a lead mapping that leaves a value out). Every line every process wrote
//! is collected, and none may hold any of those values in any encoding: plain, JSON-escaped,
//! base64 (any alignment, both alphabets) or URL-encoded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::json;
use shared::profile::Profile;
use tests::delivery::{self, BASIC_PASSWORD, BASIC_USER, BEARER, HEADER_NAME, HEADER_VALUE, SIGNING_KEY};
use tests::ministack::Ministack;
use tests::senders;
use tests::stub_http::{StubResponse, StubServer};
use tests::worker::PollerProcess;
use tests::TempDir;

use crate::edge_receiver::{deliver, headers, receiver_bindings};
use crate::lambda_mode::invoke_once;
use tests::stack::Stack;

const TABLE: &str = "receipts";
const NAME: &str = "Zoë Canary-Hygiene";
const EMAIL: &str = "zoe.canary+hygiene@example.org";
const MESSAGE: &str = "canary message: \"quoted\" & <tagged> ünïcode";
const PHONE: &str = "+44 20 7946 0958";
const API_KEY: &str = "sf_live_canary_hygiene_5e2a";
const OWNER: &str = "owner.canary@example.org";
const WRONG_BEARER: &str = "hyg-wrong-bearer-0b7e";
const WRONG_PASSWORD: &str = "hyg-wrong-pass-61fa";
const SINK_KEY: &[u8] = b"hyg-sink-signing-key-4d2c-000000";
/// A wrong secret for every other profile (a `whsec_` one, which the form backends take as text).
const WRONG_FORM_SECRET: &str = "whsec_aHlnLXdyb25nLWZvcm0tc2VjcmV0LTk5";

/// A delivery whose every personal field is a canary.
fn canary_body(id: &str, message: &str) -> Vec<u8> {
    json!({
        "event": "form.submitted",
        "timestamp": delivery::now_secs(),
        "data": {
            "submissionId": id,
            "formData": {"name": NAME, "email": EMAIL, "message": message, "phone": PHONE},
            "apiKey": API_KEY, "recipientEmail": OWNER, "replyTo": EMAIL, "attachments": []
        }
    })
    .to_string()
    .into_bytes()
}

/// `value` as it could appear in a log line: plain, JSON-escaped (as UTF-8 and as `\u` ASCII),
/// URL-encoded (`%20` and `+` for spaces), and base64 in both alphabets at every alignment
/// (only the quanta that are `value`'s own bytes, so it is found inside a longer encoding).
fn encodings(value: &str) -> Vec<String> {
    let mut forms = vec![value.to_owned()];
    let json = serde_json::to_string(value).unwrap();
    forms.push(json[1..json.len() - 1].to_owned());
    let ascii: String = value
        .chars()
        .map(|c| match c {
            '"' => "\\\"".to_owned(),
            '\\' => "\\\\".to_owned(),
            c if c.is_ascii() && !c.is_ascii_control() => c.to_string(),
            c => c.encode_utf16(&mut [0; 2]).iter().map(|u| format!("\\u{u:04x}")).collect(),
        })
        .collect();
    forms.push(ascii);
    let percent: String = value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    forms.push(percent.replace("%20", "+"));
    forms.push(percent);
    for engine in [&STANDARD, &URL_SAFE_NO_PAD] {
        for shift in 0..3 {
            let mut bytes = vec![0u8; shift];
            bytes.extend_from_slice(value.as_bytes());
            let encoded = engine.encode(&bytes);
            // Skip the quantum that holds the padding bytes, and the last, partial one.
            let start = if shift == 0 { 0 } else { 4 };
            let end = (bytes.len() / 3) * 4;
            if end > start + 8 {
                forms.push(encoded[start..end].to_owned());
            }
        }
    }
    forms.sort();
    forms.dedup();
    forms
}

/// A sink that echoes each lead back in its error answers, as validation errors in real APIs
/// do: a lead whose message asks for it is refused for good (400); any other is answered 503
/// once, then 200.
fn echoing_sink() -> (StubServer, Arc<Mutex<usize>>) {
    let accepted = Arc::new(Mutex::new(0usize));
    let seen: Arc<Mutex<HashMap<Vec<u8>, usize>>> = Arc::default();
    let count = Arc::clone(&accepted);
    let server = StubServer::start(move |request| {
        let echo = String::from_utf8_lossy(&request.body).into_owned();
        if echo.contains("refuse me") {
            return StubResponse::json(400, json!({"error": "invalid", "echo": echo, "email": EMAIL}));
        }
        let mut seen = seen.lock().unwrap();
        let attempts = seen.entry(request.body.clone()).or_default();
        *attempts += 1;
        if *attempts == 1 {
            return StubResponse::json(503, json!({"error": "unavailable", "echo": echo}));
        }
        *count.lock().unwrap() += 1;
        StubResponse::json(200, json!({"ok": true, "echo": echo}))
    });
    (server, accepted)
}

/// The stream event of one receipt's new image, as Lambda hands it to the function.
fn event_of(image: serde_json::Value) -> serde_json::Value {
    json!({"Records": [{
        "eventID": "1", "eventName": "INSERT", "eventVersion": "1.1", "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {"Keys": {"pk": image["pk"].clone()}, "NewImage": image, "SequenceNumber": "100",
                     "SizeBytes": 1024, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:000000000000:table/receipts/stream/2026-12-01T00:00:00.000"
    }]})
}

fn status_of(store: &Ministack, id: &str) -> Option<String> {
    status_by_key(store, &delivery::key(id))
}

fn status_by_key(store: &Ministack, key: &str) -> Option<String> {
    store.get(TABLE, key).and_then(|item| item["status"]["S"].as_str().map(str::to_owned))
}

#[test]
fn no_process_logs_a_credential_or_personal_data_in_any_encoding() {
    let stack = Stack::builder("hygiene").bindings(receiver_bindings()).bindings(senders::bindings()).start();
    let Stack { store, edge_key, worker_key, edge, .. } = stack;
    let lambda_key = store.role_access_key("lambda", tests::policies::Role::StreamWorker, TABLE);
    let sink_secret = delivery::whsec(SINK_KEY);

    // The Worker: every method, right and wrong; a duplicate, a changed form, a broken body.
    let swap = |id: &str, name: &str, value: String| {
        let mut h: Vec<(String, String)> =
            headers(id).into_iter().filter(|(n, _)| !n.eq_ignore_ascii_case("Authorization")).collect();
        h.push((name.to_owned(), value));
        h
    };
    let mut statuses = Vec::new();
    let mut send = |h: Vec<(String, String)>, b: Vec<u8>| statuses.push(deliver(&edge, &h, &b).status);
    send(headers("hyg_poll_1"), canary_body("hyg_poll_1", MESSAGE));
    send(headers("hyg_poll_1"), canary_body("hyg_poll_1", MESSAGE));
    send(headers("hyg_poll_1"), canary_body("hyg_poll_1", "a changed canary message"));
    send(headers("hyg_poll_2"), canary_body("hyg_poll_2", "refuse me, canary"));
    send(
        swap("hyg_basic", "Authorization", delivery::basic_header(BASIC_USER, BASIC_PASSWORD)),
        canary_body("hyg_basic", MESSAGE),
    );
    send(swap("hyg_header", HEADER_NAME, HEADER_VALUE.to_owned()), canary_body("hyg_header", MESSAGE));
    send(
        swap("hyg_bad_bearer", "Authorization", format!("Bearer {WRONG_BEARER}")),
        canary_body("hyg_bad_bearer", MESSAGE),
    );
    send(
        swap("hyg_bad_basic", "Authorization", delivery::basic_header(BASIC_USER, WRONG_PASSWORD)),
        canary_body("hyg_bad_basic", MESSAGE),
    );
    let signed = canary_body("hyg_signed", MESSAGE);
    let signature = delivery::signature_headers(SIGNING_KEY, "msg_hyg", delivery::now_secs(), &signed);
    let mut h: Vec<(String, String)> =
        headers("hyg_signed").into_iter().filter(|(n, _)| !n.eq_ignore_ascii_case("Authorization")).collect();
    h.extend(signature.iter().cloned());
    send(h, signed);
    send(headers("hyg_broken"), format!("{{\"data\":{{\"formData\":{{\"email\":\"{EMAIL}\"").into_bytes());
    // Every other sender profile: its documented payload with the canary message, signed right
    // and wrong.
    let mut profile_keys = Vec::new();
    let others: Vec<Profile> = Profile::ALL.into_iter().filter(|p| *p != Profile::StaticForms).collect();
    for &profile in &others {
        let id = format!("hyg_{}", profile.name());
        let body = senders::body(profile, &id, MESSAGE);
        for secret in [None, Some(WRONG_FORM_SECRET)] {
            let h = senders::headers(profile, &id, &body, secret);
            let refs: Vec<(&str, &str)> = h.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            statuses.push(edge.request("POST", profile.path(), &refs, &body).status);
        }
        profile_keys.push(senders::keys(profile, &id).0);
    }
    let mut expected = vec![202, 200, 422, 202, 202, 202, 401, 401, 202, 400];
    expected.extend(others.iter().flat_map(|p| [p.acknowledgement().status(), 401]));
    assert_eq!(statuses, expected);

    // Local mode: the poller into the echoing sink, until every receipt is settled.
    let (sink, accepted) = echoing_sink();
    let dir = TempDir::new("hygiene");
    let poll = PollerProcess::start(&store, &worker_key, &format!("{}/leads", sink.url()), &sink_secret, &dir.0);
    let settled = ["hyg_poll_1", "hyg_poll_2", "hyg_basic", "hyg_header", "hyg_signed"];
    let done = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        settled.iter().all(|id| status_of(&store, id).is_some_and(|s| s != "RECEIVED"))
            && profile_keys.iter().all(|key| status_by_key(&store, key).is_some_and(|s| s == "COMPLETED"))
    });
    let poll_lines = poll.output();
    drop(poll);
    assert!(done, "the poller settled every receipt: {poll_lines}");
    assert_eq!(status_of(&store, "hyg_poll_2").as_deref(), Some("FAILED"), "{poll_lines}");
    assert!(*accepted.lock().unwrap() >= 4, "{poll_lines}");

    // Lambda mode: a new delivery, its stream record handed to the function; the sink's
    // secret comes from Secrets Manager.
    let answer = deliver(&edge, &headers("hyg_lambda"), &canary_body("hyg_lambda", MESSAGE));
    assert_eq!(answer.status, 202, "{}", answer.body);
    let image = store.get(TABLE, &delivery::key("hyg_lambda")).unwrap();
    let event = event_of(image);
    let secret = store.create_secret(
        "stream-worker/hygiene",
        &json!({"LEAD_SINK": format!("{}/leads", sink.url()), "WEBHOOK_SINK_SECRET": sink_secret}).to_string(),
    );
    store.allow("lambda", "sink-secret", "secretsmanager:GetSecretValue", &secret);
    let first = invoke_once(&store, &lambda_key, &[("SINK_SECRET_ARN", secret.clone())], event.clone());
    // The sink answered 503 the first time; the record is reported, and the retry lands.
    let second = invoke_once(&store, &lambda_key, &[("SINK_SECRET_ARN", secret)], event);
    assert_eq!(status_of(&store, "hyg_lambda").as_deref(), Some("COMPLETED"), "{}", second.stderr);

    // Lambda mode into Salesforce with a lead mapping whose field cannot take the phone (a
    // date): the Lead is written without it, and the log names the field, never the value.
    let answer = deliver(&edge, &headers("hyg_mapped"), &canary_body("hyg_mapped", MESSAGE));
    assert_eq!(answer.status, 202, "{}", answer.body);
    let image = store.get(TABLE, &delivery::key("hyg_mapped")).unwrap();
    let mut mapped_event = event_of(image);
    mapped_event["Records"][0]["dynamodb"]["SequenceNumber"] = json!("200");
    let org = tests::crm::SalesforceStandIn::start("sf-client", "sf-secret", "60.0", "Static_Forms_Submission_Id__c");
    org.state.lock().unwrap().org_fields = vec![tests::crm::OrgField::new("Call_Date__c", "date")];
    let settings = [
        ("LEAD_SINK", "salesforce".to_owned()),
        ("SALESFORCE_INSTANCE_URL", org.server.url()),
        ("SALESFORCE_CLIENT_ID", "sf-client".to_owned()),
        ("SALESFORCE_CLIENT_SECRET", "sf-secret".to_owned()),
        ("LEAD_MAPPING", "[staticforms.fields]\nphone = \"Call_Date__c\"\n".to_owned()),
    ];
    let third = invoke_once(&store, &lambda_key, &settings, mapped_event);
    assert_eq!(status_of(&store, "hyg_mapped").as_deref(), Some("COMPLETED"), "{}", third.stderr);
    assert!(third.stderr.contains(r#"{"field":"Call_Date__c","reason":"not_a_date"}"#), "{}", third.stderr);

    // The same into HubSpot: the contact is written without the property, the log names it.
    let answer = deliver(&edge, &headers("hyg_hubspot"), &canary_body("hyg_hubspot", MESSAGE));
    assert_eq!(answer.status, 202, "{}", answer.body);
    let image = store.get(TABLE, &delivery::key("hyg_hubspot")).unwrap();
    let mut hubspot_event = event_of(image);
    hubspot_event["Records"][0]["dynamodb"]["SequenceNumber"] = json!("300");
    let portal = tests::crm::HubSpotStandIn::start("pat-hygiene-canary-token", "static_forms_submission_id");
    portal.state.lock().unwrap().portal_properties =
        vec![tests::crm::PortalProperty::new("contacts", "call_date", "date", "date")];
    let settings = [
        ("LEAD_SINK", "hubspot".to_owned()),
        ("HUBSPOT_TOKEN", "pat-hygiene-canary-token".to_owned()),
        ("HUBSPOT_BASE_URL", portal.server.url()),
        ("LEAD_MAPPING", "[staticforms.fields]\nphone = \"call_date\"\n".to_owned()),
    ];
    let fourth = invoke_once(&store, &lambda_key, &settings, hubspot_event);
    assert_eq!(status_of(&store, "hyg_hubspot").as_deref(), Some("COMPLETED"), "{}", fourth.stderr);
    assert!(fourth.stderr.contains(r#"{"field":"contact.call_date","reason":"not_a_date"}"#), "{}", fourth.stderr);

    // Every line every process wrote.
    let edge_lines = edge.output();
    let sources: Vec<(&str, String)> = vec![
        ("edge", edge_lines.join("\n")),
        ("poll", poll_lines),
        ("lambda", [first.stdout, first.stderr, second.stdout, second.stderr].join("\n")),
        ("lambda, Salesforce with a mapping", [third.stdout, third.stderr].join("\n")),
        ("lambda, HubSpot with a mapping", [fourth.stdout, fourth.stderr].join("\n")),
    ];
    // Each source said something about these deliveries, so the check below has lines to read.
    assert!(edge_lines.iter().filter(|l| l.contains("\"outcome\"")).count() >= statuses.len(), "{edge_lines:#?}");
    for (name, text) in &sources {
        assert!(text.contains("hyg_"), "{name} logged nothing about the deliveries: {text}");
    }

    let mut secrets: Vec<(std::borrow::Cow<str>, String)> = vec![
        ("visitor name".into(), NAME.into()),
        ("visitor email".into(), EMAIL.into()),
        ("message".into(), MESSAGE.into()),
        ("changed message".into(), "a changed canary message".into()),
        ("phone".into(), PHONE.into()),
        ("apiKey".into(), API_KEY.into()),
        ("owner email".into(), OWNER.into()),
        ("bearer token".into(), BEARER.into()),
        ("wrong bearer token".into(), WRONG_BEARER.into()),
        ("Basic password".into(), BASIC_PASSWORD.into()),
        ("wrong Basic password".into(), WRONG_PASSWORD.into()),
        ("Basic credentials".into(), format!("{BASIC_USER}:{BASIC_PASSWORD}")),
        ("header value".into(), HEADER_VALUE.into()),
        ("signing secret".into(), delivery::signing_secret()),
        ("signing key".into(), String::from_utf8(SIGNING_KEY.to_vec()).unwrap()),
        ("signature".into(), signature[2].1.clone()),
        ("sink secret".into(), sink_secret.clone()),
        ("sink key".into(), String::from_utf8(SINK_KEY.to_vec()).unwrap()),
        ("wrong profile secret".into(), WRONG_FORM_SECRET.into()),
        ("edge AWS secret".into(), edge_key.secret.clone()),
        ("worker AWS secret".into(), worker_key.secret.clone()),
        ("Lambda AWS secret".into(), lambda_key.secret.clone()),
        ("HubSpot token".into(), String::from("pat-hygiene-canary-token")),
    ];
    // Every other profile's secret, and its respondent's name and email (as its example gives them).
    for &profile in &others {
        secrets.push((format!("{} secret", profile.name()).into(), senders::secret(profile)));
        let (name, email) = shared::profile::registry::sender(profile).example("any", "").name_and_email;
        secrets.push((format!("{} respondent's name", profile.name()).into(), name.to_owned()));
        secrets.push((format!("{} respondent's email", profile.name()).into(), email.to_owned()));
    }
    secrets.retain(|(_, value)| value.len() >= 6);
    for (name, text) in &sources {
        for (what, value) in &secrets {
            for form in encodings(value) {
                assert!(!text.contains(&form), "{name} logs the {what} as {form:?}");
            }
        }
    }
}

#[test]
fn the_encodings_find_what_they_should() {
    let forms = encodings("Zoë \"x\"+y");
    for expected in
        ["Zoë \"x\"+y", "Zoë \\\"x\\\"+y", "Zo\\u00eb \\\"x\\\"+y", "Zo%C3%AB+%22x%22%2By", "Zo%C3%AB%20%22x%22%2By"]
    {
        assert!(forms.contains(&expected.to_owned()), "{expected} not in {forms:?}");
    }
    let secret = "a-long-secret-value";
    for prefix in ["", "x", "xy", "Basic dXNlcjo"] {
        let line = STANDARD.encode(format!("{prefix}{secret}"));
        assert!(encodings(secret).iter().any(|f| line.contains(f.as_str())), "{prefix:?}: {line}");
    }
}
