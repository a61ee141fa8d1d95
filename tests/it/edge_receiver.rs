//! The built edge Worker in workerd against a DynamoDB-compatible server that verifies SigV4.
//!
//! Each test starts its own store and Worker on ephemeral 127.0.0.1 ports, so tests run in
//! parallel and leave nothing running.

use serde_json::{json, Value};
use tests::delivery::{self, BASIC_PASSWORD, BASIC_USER, BEARER, HEADER_NAME, HEADER_VALUE};
use tests::edge::Edge;
use tests::free_port;
use tests::http::{Answer, HeaderList};
use tests::ministack::AccessKey;
use tests::proxy::{FaultProxy, Mode};
use tests::stack::{edge_bindings, every_static_forms_method, Stack, TABLE};

/// The receiver's bindings besides [`edge_bindings`]'s: every Static Forms method, a retired
/// bearer token beside the current one, and a 1.5 s store deadline.
pub(crate) fn receiver_bindings() -> Vec<(&'static str, String)> {
    let mut all = every_static_forms_method();
    all.push(("STORE_TIMEOUT_MS", "1500".to_owned()));
    all.push(("WEBHOOK_BEARER_TOKENS", format!("retired-token,{BEARER}")));
    all
}

/// Every binding the Worker reads, with every auth method configured; `extra` adds or replaces.
pub(crate) fn bindings(endpoint: &str, key: &AccessKey, extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut all = receiver_bindings();
    all.extend(extra.iter().map(|(name, value)| (*name, (*value).to_owned())));
    edge_bindings(endpoint, key, &all)
}

/// A store with a receipts table and the edge's IAM key, and a Worker pointed at it.
pub(crate) fn stack() -> Stack {
    Stack::builder("edge").bindings(receiver_bindings()).start()
}

/// Content type, bearer token and the right idempotency key for `id`.
pub(crate) fn headers(id: &str) -> Vec<(String, String)> {
    vec![
        ("Content-Type".into(), "application/json".into()),
        ("Authorization".into(), format!("Bearer {BEARER}")),
        ("Idempotency-Key".into(), delivery::key(id)),
    ]
}

fn with(mut headers: Vec<(String, String)>, name: &str, value: Option<&str>) -> Vec<(String, String)> {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    if let Some(value) = value {
        headers.push((name.into(), value.into()));
    }
    headers
}

pub(crate) fn deliver(edge: &Edge, headers: &[(String, String)], body: &[u8]) -> Answer {
    let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    edge.deliver(&refs, body)
}

pub(crate) fn body(id: &str) -> Vec<u8> {
    delivery::body(id, delivery::VISITOR_MESSAGE, delivery::now_secs())
}

#[test]
fn concurrent_identical_deliveries_store_one_receipt() {
    let s = stack();
    let payload = body("sub_concurrent");
    let answers: Vec<Answer> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            (0..20).map(|_| scope.spawn(|| deliver(&s.edge, &headers("sub_concurrent"), &payload))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let created: Vec<_> = answers.iter().filter(|a| a.status == 202).collect();
    let duplicates: Vec<_> = answers.iter().filter(|a| a.status == 200).collect();
    assert_eq!(created.len(), 1, "{answers:#?}");
    assert_eq!(duplicates.len(), 19, "{answers:#?}");
    assert_eq!(created[0].json()["duplicate"], json!(false));
    for answer in duplicates {
        assert_eq!(answer.json()["duplicate"], json!(true));
        assert_eq!(answer.header("Idempotent-Replayed"), Some("true"));
        assert_eq!(answer.json()["receivedAt"], created[0].json()["receivedAt"]);
    }
    let items = s.store.scan(TABLE);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["status"]["S"], "RECEIVED");
    // The payload is stored as JSON text, with the sender's API key redacted.
    let payload: Value = serde_json::from_str(items[0]["payload"]["S"].as_str().unwrap()).unwrap();
    assert_eq!(payload["data"]["apiKey"], "[redacted]");
    assert_eq!(payload["data"]["submissionId"], "sub_concurrent");
    assert!(items[0]["fingerprint"]["S"].as_str().unwrap().starts_with("v1:"));
}

#[test]
fn the_key_must_match_the_envelope() {
    let s = stack();
    let payload = body("sub_key");
    let other =
        deliver(&s.edge, &with(headers("sub_key"), "Idempotency-Key", Some(&delivery::key("sub_other"))), &payload);
    assert_eq!((other.status, other.json()["code"].clone()), (400, json!("invalid_idempotency_key")));
    let missing = deliver(&s.edge, &with(headers("sub_key"), "Idempotency-Key", None), &payload);
    assert_eq!((missing.status, missing.json()["reason"].clone()), (400, json!("missing_idempotency_key")));
    assert!(s.store.scan(TABLE).is_empty());
}

#[test]
fn changed_form_content_is_refused_and_a_new_timestamp_is_a_duplicate() {
    let s = stack();
    assert_eq!(
        deliver(&s.edge, &headers("sub_change"), &delivery::body("sub_change", "first", 1_796_000_000)).status,
        202
    );
    let stored = s.store.get(TABLE, &delivery::key("sub_change")).unwrap();

    let changed = deliver(&s.edge, &headers("sub_change"), &delivery::body("sub_change", "second", 1_796_000_000));
    assert_eq!((changed.status, changed.json()["code"].clone()), (422, json!("idempotency_key_reused")));
    assert_eq!(s.store.get(TABLE, &delivery::key("sub_change")).unwrap(), stored, "the receipt is unchanged");

    let retried = deliver(&s.edge, &headers("sub_change"), &delivery::body("sub_change", "first", 1_796_000_777));
    assert_eq!((retried.status, retried.json()["duplicate"].clone()), (200, json!(true)));
    assert_eq!(s.store.scan(TABLE).len(), 1);
}

#[test]
fn every_auth_method_is_checked_and_nothing_is_written_for_a_wrong_one() {
    let s = stack();
    let plain = headers("x");
    let auth = |id: &str, name: &str, value: &str| with(with(headers(id), "Authorization", None), name, Some(value));
    let cases: Vec<(&str, HeaderList, u16)> = vec![
        ("sub_bearer", headers("sub_bearer"), 202),
        ("sub_bearer_bad", auth("sub_bearer_bad", "Authorization", "Bearer not-it"), 401),
        ("sub_basic", auth("sub_basic", "Authorization", &delivery::basic_header(BASIC_USER, BASIC_PASSWORD)), 202),
        ("sub_basic_bad", auth("sub_basic_bad", "Authorization", &delivery::basic_header(BASIC_USER, "nope")), 401),
        ("sub_header", auth("sub_header", HEADER_NAME, HEADER_VALUE), 202),
        ("sub_header_bad", auth("sub_header_bad", HEADER_NAME, "nope"), 401),
        ("sub_none", with(plain.clone(), "Authorization", None), 401),
    ];
    for (id, headers, expected) in cases {
        let answer = deliver(&s.edge, &with(headers, "Idempotency-Key", Some(&delivery::key(id))), &body(id));
        assert_eq!(answer.status, expected, "{id}: {}", answer.body);
        if expected == 401 {
            assert_eq!(answer.json()["code"], "unauthenticated");
            // RFC 9110: a 401 names the ways to authenticate that are configured.
            assert_eq!(
                answer.header("WWW-Authenticate"),
                Some(
                    r#"Bearer realm="webhooks", Basic realm="webhooks", charset="UTF-8", Header realm="webhooks", Webhook-Signature realm="webhooks""#
                ),
                "{id}"
            );
        }
    }
    // Standard Webhooks: right key, wrong key, stale timestamp.
    let now = delivery::now_secs();
    for (id, key, at, expected) in [
        ("sub_sig", delivery::SIGNING_KEY, now, 202),
        ("sub_sig_bad", b"some-other-signing-key-000000000".as_slice(), now, 401),
        ("sub_sig_stale", delivery::SIGNING_KEY, now - 600, 401),
    ] {
        let payload = body(id);
        let mut h = with(with(headers(id), "Authorization", None), "Idempotency-Key", Some(&delivery::key(id)));
        h.extend(delivery::signature_headers(key, &format!("msg_{id}"), at, &payload));
        assert_eq!(deliver(&s.edge, &h, &payload).status, expected, "{id}");
    }
    let mut stored: Vec<String> =
        s.store.scan(TABLE).iter().map(|i| i["submissionId"]["S"].as_str().unwrap().to_owned()).collect();
    stored.sort();
    assert_eq!(stored, ["sub_basic", "sub_bearer", "sub_header", "sub_sig"]);
}

#[test]
fn a_signature_the_store_rejects_is_never_a_success() {
    let s = stack();
    let wrong = AccessKey { id: s.edge_key.id.clone(), secret: "not-the-secret".into() };
    let edge = Edge::start(&bindings(&s.store.endpoint(), &wrong, &[]));
    let answer = deliver(&edge, &headers("sub_badsig"), &body("sub_badsig"));
    // The store refuses the signature: a configuration fault, never a success, answered 503
    // with Retry-After so the sender keeps the delivery until the key is fixed.
    assert_operator_fixable(&answer, "store_misconfigured");
    assert!(s.store.scan(TABLE).is_empty());
}

/// 503 with `Retry-After` and `code`: every sender retries it for as long as it retries anything
/// (`../shared/SENDER.md`: Typeform stops after five tries on any other failure).
fn assert_operator_fixable(answer: &Answer, code: &str) {
    assert_eq!((answer.status, answer.json()["code"].clone()), (503, json!(code)), "{}", answer.body);
    assert_eq!(answer.header("retry-after"), Some("5"), "{}", answer.body);
}

#[tokio::test]
async fn the_edge_s_key_may_put_receipts_and_nothing_else_as_in_production() {
    // The Worker signs with a key whose policy is template.yaml's EdgeUser's: PutItem on the
    // table. A read the edge's code might add (a GetItem on the duplicate path) is refused, as
    // it would be in production, so such a change fails the suite instead of the first deploy.
    let s = stack();
    assert_eq!(deliver(&s.edge, &headers("sub_policy_put"), &body("sub_policy_put")).status, 202);
    let client = aws_sdk_dynamodb::Client::new(&tests::aws::sdk_config(&s.store, &s.edge_key).await);
    let key = aws_sdk_dynamodb::types::AttributeValue::S(delivery::key("sub_policy_put"));
    let read = client.get_item().table_name(TABLE).key("pk", key.clone()).send().await;
    let denied = read.expect_err("GetItem is not the edge's");
    assert!(format!("{denied:?}").contains("AccessDenied"), "{denied:?}");
    let scan = client.scan().table_name(TABLE).send().await;
    assert!(format!("{:?}", scan.expect_err("Scan is not the edge's")).contains("AccessDenied"));
    // Nor may it put into another table.
    s.store.create_receipts_table("other");
    let item = std::collections::HashMap::from([("pk".to_owned(), key)]);
    let elsewhere = client.put_item().table_name("other").set_item(Some(item)).send().await;
    assert!(format!("{:?}", elsewhere.expect_err("another table")).contains("AccessDenied"));
}

#[test]
fn a_policy_without_put_item_or_a_missing_table_answers_503_until_the_operator_fixes_it() {
    let s = stack();
    // A key whose policy lacks dynamodb:PutItem (a changed or wrong policy): AccessDenied.
    let narrow = s.store.iam_access_key_without_policy("edge-narrow");
    s.store.allow("edge-narrow", "read-only", "dynamodb:GetItem", "*");
    let edge = Edge::start(&bindings(&s.store.endpoint(), &narrow, &[]));
    assert_operator_fixable(&deliver(&edge, &headers("sub_policy"), &body("sub_policy")), "store_misconfigured");
    assert!(edge.logs(1)[0].contains("\"reason\":\"store_access_denied\""), "{:?}", edge.logs(1));
    // A table that does not exist (not created yet, or deleted), with a key allowed on its
    // name: ResourceNotFound. (A key for another table's name is refused first, AccessDenied.)
    let absent_key = s.store.edge_access_key("edge-absent", "no-such-table");
    let absent = Edge::start(&bindings(&s.store.endpoint(), &absent_key, &[("RECEIPTS_TABLE", "no-such-table")]));
    assert_operator_fixable(&deliver(&absent, &headers("sub_table"), &body("sub_table")), "store_misconfigured");
    assert!(absent.logs(1)[0].contains("\"reason\":\"store_table_not_found\""), "{:?}", absent.logs(1));
    assert!(s.store.scan(TABLE).is_empty());
    // Once fixed, the sender's next retry is stored.
    s.store.allow("edge-narrow", "put", "dynamodb:PutItem", "*");
    assert_eq!(deliver(&edge, &headers("sub_policy"), &body("sub_policy")).status, 202);
}

#[test]
fn a_store_that_cannot_prove_durability_gets_503() {
    let key = AccessKey { id: "AKIDEXAMPLE".into(), secret: "secret".into() };
    // Nothing listens behind the proxy: every mode below answers without forwarding.
    let proxy = FaultProxy::start(free_port());
    let misbehaving = Edge::start(&bindings(&proxy.endpoint(), &key, &[("STORE_TIMEOUT_MS", "500")]));
    let down = Edge::start(&bindings(&format!("http://127.0.0.1:{}", free_port()), &key, &[]));
    let cases = [
        ("down", &down, None),
        ("hanging", &misbehaving, Some(Mode::Hang)),
        (
            "500",
            &misbehaving,
            Some(Mode::Answer(500, r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError"}"#.into())),
        ),
        (
            "throttled",
            &misbehaving,
            Some(Mode::Answer(
                400,
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}"#.into(),
            )),
        ),
    ];
    for (name, edge, mode) in cases {
        if let Some(mode) = mode {
            proxy.set(mode);
        }
        for attempt in 0..2 {
            let answer = deliver(edge, &headers("sub_fault"), &body("sub_fault"));
            assert_eq!(answer.status, 503, "{name} attempt {attempt}: {}", answer.body);
            assert_eq!(answer.header("Retry-After"), Some("5"), "{name}");
            assert_eq!(
                answer.json(),
                json!({"code": "store_unavailable", "message": "the receipt could not be stored; retry later"})
            );
        }
    }
    assert_eq!(proxy.accepted.load(std::sync::atomic::Ordering::Relaxed), 6, "the Worker reached the store each time");
}

#[test]
fn retention_days_is_the_stored_receipt_s_expiry() {
    // The default (30 days) and a configured RETENTION_DAYS, read back from the items the
    // Worker wrote: `expiresAt` is the table's TTL attribute, in epoch seconds.
    let s = stack();
    let seven = Edge::start(&bindings(&s.store.endpoint(), &s.edge_key, &[("RETENTION_DAYS", "7")]));
    for (edge, id, days) in [(&s.edge, "sub_keep_30", 30), (&seven, "sub_keep_7", 7)] {
        let before = delivery::now_secs();
        assert_eq!(deliver(edge, &headers(id), &body(id)).status, 202);
        let after = delivery::now_secs();
        let item = s.store.get(TABLE, &delivery::key(id)).unwrap();
        let expires: u64 = item["expiresAt"]["N"].as_str().unwrap().parse().unwrap();
        let window = (before + days * 86_400)..=(after + days * 86_400);
        assert!(window.contains(&expires), "{id}: {expires} not in {window:?}");
    }
}

#[test]
fn an_expired_receipt_does_not_block_a_new_delivery() {
    let s = stack();
    let key = delivery::key("sub_expired");
    s.store.ok(
        "DynamoDB_20120810.PutItem",
        &json!({"TableName": TABLE, "Item": {
            "pk": {"S": key}, "event": {"S": "form.submitted"}, "submissionId": {"S": "sub_expired"},
            "payload": {"M": {}}, "fingerprint": {"S": "old"}, "status": {"S": "COMPLETED"},
            "receivedAt": {"S": "2020-01-01T00:00:00.000Z"}, "expiresAt": {"N": "1577836800"}, "requestId": {"S": "old"}
        }}),
    );
    let answer = deliver(&s.edge, &headers("sub_expired"), &body("sub_expired"));
    assert_eq!(answer.status, 202, "{}", answer.body);
    let item = s.store.get(TABLE, &key).unwrap();
    assert_eq!(item["status"]["S"], "RECEIVED");
    assert_ne!(item["receivedAt"]["S"], "2020-01-01T00:00:00.000Z");
}

#[test]
fn requests_that_are_not_deliveries_and_chunked_bodies() {
    let s = stack();
    let h = headers("sub_shape");
    let big = vec![b' '; 262_145];
    /// A request that is not a delivery, and the status and code it must get.
    struct Case(&'static str, &'static str, HeaderList, Vec<u8>, (u16, &'static str));
    let cases = vec![
        Case("POST", "/webhooks/staticforms", h.clone(), big, (413, "payload_too_large")),
        Case(
            "POST",
            "/webhooks/staticforms",
            with(h.clone(), "Content-Type", Some("text/plain")),
            body("sub_shape"),
            (415, "unsupported_media_type"),
        ),
        Case("POST", "/webhooks/staticforms", h.clone(), b"{not json".to_vec(), (400, "invalid_json")),
        Case(
            "POST",
            "/webhooks/staticforms",
            h.clone(),
            br#"{"event":"form.submitted"}"#.to_vec(),
            (400, "invalid_envelope"),
        ),
        Case("POST", "/elsewhere", h.clone(), body("sub_shape"), (404, "not_found")),
        Case("GET", "/webhooks/staticforms", vec![], vec![], (405, "method_not_allowed")),
        Case("GET", "/healthz", vec![], vec![], (200, "ok")),
    ];
    for Case(method, path, headers, payload, (status, code)) in cases {
        let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let answer = s.edge.request(method, path, &refs, &payload);
        assert_eq!((answer.status, answer.json()["code"].clone()), (status, json!(code)), "{method} {path}");
        assert_eq!(answer.header("Content-Type"), Some("application/json"));
    }
    // Without a Content-Length (chunked), too large is still 413 and a small delivery is read whole.
    let refs: Vec<(&str, &str)> = h.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let url = format!("{}/webhooks/staticforms", s.edge.url);
    let chunked = tests::http::send_chunked("POST", &url, &refs, &vec![b' '; 300_000]).unwrap();
    assert_eq!((chunked.status, chunked.json()["code"].clone()), (413, json!("payload_too_large")));
    let small = tests::http::send_chunked("POST", &url, &refs, &body("sub_shape")).unwrap();
    assert_eq!(small.status, 202, "a chunked delivery under the limit is read whole: {}", small.body);
    assert_eq!(s.store.scan(TABLE).len(), 1);
}

#[test]
fn a_broken_configuration_answers_503_and_never_accepts() {
    let key = AccessKey { id: "AKIDEXAMPLE".into(), secret: "secret".into() };
    let edge = Edge::start(&bindings("http://127.0.0.1:9", &key, &[("RETENTION_DAYS", "forever")]));
    let answer = deliver(&edge, &headers("sub_config"), &body("sub_config"));
    assert_operator_fixable(&answer, "config_invalid");
    let logs = edge.logs(1);
    assert_eq!(logs.len(), 1);
    assert!(logs[0].starts_with("error ") && logs[0].contains("RETENTION_DAYS"), "{logs:?}");
    assert!(!logs[0].contains("forever"));
    // A deploy can be checked: /healthz names the variable (never its value), without the store.
    let health = edge.request("GET", "/healthz", &[], &[]);
    assert_eq!(health.status, 503, "{}", health.body);
    assert_eq!(health.json()["code"], "config_invalid");
    assert_eq!(health.json()["variable"], "RETENTION_DAYS");
    assert!(!health.body.contains("forever"));
    assert_eq!(edge.request("HEAD", "/healthz", &[], &[]).status, 503);
    // An endpoint in clear text off this machine is a configuration fault too.
    let remote = Edge::start(&bindings("http://dynamodb.example.com", &key, &[]));
    let health = remote.request("GET", "/healthz", &[], &[]);
    assert_eq!((health.status, health.json()["variable"].clone()), (503, json!("DYNAMODB_ENDPOINT")));

    let no_auth: Vec<_> = bindings("http://127.0.0.1:9", &key, &[])
        .into_iter()
        .filter(|(name, _)| !name.starts_with("WEBHOOK_"))
        .collect();
    let edge = Edge::start(&no_auth);
    let answer = deliver(&edge, &headers("sub_config"), &body("sub_config"));
    assert_operator_fixable(&answer, "auth_not_configured");
    let health = edge.request("GET", "/healthz", &[], &[]);
    assert_eq!((health.status, health.json()["code"].clone()), (503, json!("auth_not_configured")));
}

#[test]
fn log_lines_hold_no_secret_and_no_form_content() {
    let s = stack();
    let mut sent = 0;
    let mut send = |h: Vec<(String, String)>, b: Vec<u8>| {
        deliver(&s.edge, &h, &b);
        sent += 1;
    };
    send(headers("sub_log"), body("sub_log"));
    send(headers("sub_log"), body("sub_log"));
    send(headers("sub_log"), delivery::body("sub_log", "changed", 1));
    send(with(headers("sub_log2"), "Authorization", Some("Bearer wrong-token-value")), body("sub_log2"));
    send(
        with(headers("sub_log3"), "Authorization", Some(&delivery::basic_header(BASIC_USER, BASIC_PASSWORD))),
        body("sub_log3"),
    );
    send(
        headers("sub_log4"),
        // An ID the envelope refuses (it holds a control character) is not logged.
        b"{\"event\":\"form.submitted\",\"data\":{\"submissionId\":\"ada.integration@example.com\\n\"}}".to_vec(),
    );
    let logs = s.edge.logs_exactly(sent);
    let forbidden = [
        BEARER,
        BASIC_PASSWORD,
        HEADER_VALUE,
        "wrong-token-value",
        &delivery::signing_secret(),
        &s.edge_key.secret,
        delivery::VISITOR_NAME,
        delivery::VISITOR_EMAIL,
        delivery::VISITOR_MESSAGE,
        delivery::API_KEY,
        "changed",
    ];
    for line in &logs {
        for secret in forbidden {
            assert!(!line.contains(secret), "log line leaks {secret:?}: {line}");
        }
        let (_, record) = line.split_once(' ').unwrap();
        let record: Value = serde_json::from_str(record).unwrap();
        let mut keys: Vec<&str> = record.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        // The store's latency is a metric only where the store was asked.
        let stored = ["stored", "duplicate", "idempotency_key_reused"].contains(&record["outcome"].as_str().unwrap());
        let mut expected = vec![
            "Deliveries",
            "_aws",
            "answer",
            "durationMs",
            "outcome",
            "reason",
            "requestId",
            "status",
            "submissionId",
        ];
        if stored {
            expected.insert(1, "StoreLatency");
        }
        assert_eq!(keys, expected, "{line}");
        // An Embedded Metric Format document: deliveries (and store latency) by outcome and by
        // the answer's class, the edge's alarms' rates.
        let directive = &record["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "WebhookReceiver", "{line}");
        assert_eq!(directive["Dimensions"], serde_json::json!([["outcome"], ["answer"]]), "{line}");
        let status = record["status"].as_u64().unwrap();
        assert_eq!(record["answer"], format!("{}xx", status / 100), "{line}");
        assert_eq!(directive["Metrics"][0], serde_json::json!({"Name": "Deliveries", "Unit": "Count"}), "{line}");
        assert_eq!(record["Deliveries"], 1, "{line}");
        assert!(record["_aws"]["Timestamp"].as_u64().is_some_and(|t| t > 1_700_000_000_000), "{line}");
    }
    let outcomes: Vec<String> = logs
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l.split_once(' ').unwrap().1).unwrap()["outcome"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        outcomes,
        ["stored", "duplicate", "idempotency_key_reused", "unauthenticated", "stored", "invalid_envelope"]
    );
}

#[test]
fn store_answers_that_prove_nothing_are_503_and_redirects_are_not_followed() {
    let s = stack();
    let proxy = FaultProxy::start(s.store.port);
    let edge = Edge::start(&bindings(&proxy.endpoint(), &s.edge_key, &[]));
    let cases = [
        (
            "200 with an error type",
            Mode::Answer(200, r#"{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException"}"#.into()),
        ),
        ("200 empty", Mode::Answer(200, String::new())),
        ("200 not json", Mode::Answer(200, "<html>ok</html>".into())),
        // Following this would send the signed PutItem on to the real store and store it.
        ("307 to the store", Mode::Redirect(307, format!("{}/", s.store.endpoint()))),
        ("302 to the store", Mode::Redirect(302, format!("{}/", s.store.endpoint()))),
    ];
    for (name, mode) in cases {
        proxy.set(mode);
        let answer = deliver(&edge, &headers("sub_proof"), &body("sub_proof"));
        assert_eq!(
            (answer.status, answer.json()["code"].clone()),
            (503, json!("store_unavailable")),
            "{name}: {}",
            answer.body
        );
        assert_eq!(answer.header("Retry-After"), Some("5"), "{name}");
        assert!(s.store.scan(TABLE).is_empty(), "{name}: nothing was stored");
    }
    assert_eq!(proxy.forwarded.load(std::sync::atomic::Ordering::Relaxed), 0);
    proxy.set(Mode::PassThrough);
    assert_eq!(deliver(&edge, &headers("sub_proof"), &body("sub_proof")).status, 202);
}

#[test]
fn a_body_whose_receipt_would_not_fit_is_refused_before_writing() {
    let s = stack();
    let edge = Edge::start(&bindings(&s.store.endpoint(), &s.edge_key, &[("MAX_BODY_BYTES", "1048576")]));
    let with_message = |id: &str, len: usize| delivery::body(id, &"m".repeat(len), delivery::now_secs());
    let too_big = with_message("sub_huge", 450_000);
    let answer = deliver(&edge, &headers("sub_huge"), &too_big);
    assert_eq!(answer.status, 413, "{}", answer.body);
    assert_eq!(answer.json()["code"], "payload_too_large");
    assert_eq!(answer.json()["reason"], "item_too_large");
    // Under the limit by the sizing rules: stored, and a retry reads it back.
    let large = with_message("sub_large", 390_000);
    assert_eq!(deliver(&edge, &headers("sub_large"), &large).status, 202);
    assert_eq!(deliver(&edge, &headers("sub_large"), &large).status, 200);
    let stored: Vec<String> =
        s.store.scan(TABLE).iter().map(|i| i["submissionId"]["S"].as_str().unwrap().to_owned()).collect();
    assert_eq!(stored, ["sub_large"]);
    // Over MAX_BODY_BYTES is still 413 for the body itself. The Worker answers from the
    // declared length and may close before the body is written, which an HTTP client can take
    // for no answer: a raw socket reads the answer whatever happens to the upload.
    let refs: Vec<(String, String)> = headers("sub_huger");
    let refs: Vec<(&str, &str)> = refs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let url = format!("{}/webhooks/staticforms", edge.url);
    let answer = tests::http::send_raw_bytes("POST", &url, &refs, &with_message("sub_huger", 1_100_000))
        .expect("the Worker answers");
    assert_eq!((answer.status, answer.json()["reason"].clone()), (413, json!("body_too_large")));
}

/// The receipt states a duplicate can meet, as the worker, a redrive and time leave them.
const STORED_STATES: [&str; 4] = ["RECEIVED", "COMPLETED", "FAILED", "reopened by a redrive"];

/// `item` as it stands in `state`; expired (its TTL passed, the item not yet deleted) if so.
fn in_state(mut item: Value, state: &str, expired: bool) -> Value {
    let s = |text: &str| json!({"S": text});
    match state {
        "RECEIVED" => {}
        "COMPLETED" => {
            item["status"] = s("COMPLETED");
            item["completedAt"] = s("2026-12-01T00:00:01.000Z");
        }
        "FAILED" => {
            item["status"] = s("FAILED");
            item["failedAt"] = s("2026-12-01T00:00:01.000Z");
            item["failureReason"] = s("sink_rejected");
        }
        _ => item["redrivenAt"] = s("2026-12-01T00:00:02.000Z"),
    }
    if expired {
        item["expiresAt"] = json!({"N": "1577836800"});
    }
    item
}

#[test]
fn every_answer_against_every_stored_state_through_the_worker() {
    let s = stack();
    // Each state, live and expired; met first by the same delivery (a retry) or by other content.
    for (n, state) in STORED_STATES.iter().enumerate() {
        for (expired, retry_first) in [(false, true), (true, true), (true, false)] {
            let id = format!("sub_state_{n}_{expired}_{retry_first}");
            let key = delivery::key(&id);
            let (same, other) = (body(&id), delivery::body(&id, "other words", delivery::now_secs()));
            assert_eq!(deliver(&s.edge, &headers(&id), &same).status, 202);
            let stored = in_state(s.store.get(TABLE, &key).unwrap(), state, expired);
            s.store.ok("DynamoDB_20120810.PutItem", &json!({"TableName": TABLE, "Item": stored}));
            let label = format!("{state}, expired: {expired}, the retry first: {retry_first}");
            // Expired but present, as DynamoDB keeps an item for a while past its TTL (the store
            // deletes expired items only every minute): the put's condition must replace it.
            assert_eq!(s.store.get(TABLE, &key).as_ref(), Some(&stored), "{label}");
            if expired {
                // Whatever it meets first is stored over the expired receipt as a new one...
                let (first, then) = if retry_first { (&same, &other) } else { (&other, &same) };
                let answer = deliver(&s.edge, &headers(&id), first);
                assert_eq!((answer.status, answer.json()["duplicate"].clone()), (202, json!(false)), "{label}");
                let now = s.store.get(TABLE, &key).unwrap();
                assert_eq!(now["status"]["S"], "RECEIVED", "{label}");
                assert_ne!(now["receivedAt"], stored["receivedAt"], "{label}: a new receipt");
                for gone in ["completedAt", "failedAt", "failureReason", "redrivenAt"] {
                    assert!(now.get(gone).is_none(), "{label}: {gone} of the old receipt");
                }
                // ... which then holds: the other content is refused.
                let refused = deliver(&s.edge, &headers(&id), then);
                assert_eq!(
                    (refused.status, refused.json()["code"].clone()),
                    (422, json!("idempotency_key_reused")),
                    "{label}"
                );
                continue;
            }
            // Other content: refused while the receipt lives, nothing written.
            let changed = deliver(&s.edge, &headers(&id), &other);
            assert_eq!(
                (changed.status, changed.json()["code"].clone()),
                (422, json!("idempotency_key_reused")),
                "{label}"
            );
            assert_eq!(s.store.get(TABLE, &key).unwrap(), stored, "{label}: nothing written");
            // The same delivery again (a retry): 200, the stored receipt's status and time.
            let retry = deliver(&s.edge, &headers(&id), &same);
            let status = stored["status"]["S"].clone();
            assert_eq!(retry.status, 200, "{label}: {}", retry.body);
            let answer = retry.json();
            assert_eq!((answer["duplicate"].clone(), answer["status"].clone()), (json!(true), status), "{label}");
            assert_eq!(answer["receivedAt"], stored["receivedAt"]["S"], "{label}");
            assert_eq!(s.store.get(TABLE, &key).unwrap(), stored, "{label}: nothing written");
        }
    }
}
