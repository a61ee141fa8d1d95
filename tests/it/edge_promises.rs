//! Promises of the edge Worker's response contract, checked through the built Worker in workerd.
//!
//! `/healthz` never asks the store, an empty body is `invalid_json`, a body the client cuts short
//! is `body_unreadable`, `STORE_TIMEOUT_MS` is the store call's deadline, a duplicate carries the
//! stored receipt's status, and no log line holds a credential of any auth method.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::delivery::{self, BASIC_PASSWORD, BASIC_USER, BEARER, HEADER_NAME, HEADER_VALUE};
use tests::edge::Edge;
use tests::free_port;
use tests::http::{send_raw_bytes, HeaderList};
use tests::ministack::AccessKey;
use tests::proxy::{FaultProxy, Mode};

use crate::edge_receiver::{bindings, body, deliver, headers, stack};
use tests::stack::TABLE;

/// A key for a Worker whose store is never really reached.
fn unused_key() -> AccessKey {
    AccessKey { id: "AKIDEXAMPLE".into(), secret: "secret".into() }
}

/// `headers(id)` without the `Authorization` header.
fn without_auth(mut headers: HeaderList) -> HeaderList {
    headers.retain(|(name, _)| !name.eq_ignore_ascii_case("Authorization"));
    headers
}

fn refs(headers: &[(String, String)]) -> Vec<(&str, &str)> {
    headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect()
}

/// The Worker's log lines (`<level> <json>`) as JSON records.
fn records(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|line| {
            let (_, record) = line.split_once(' ').unwrap_or_else(|| panic!("no level: {line}"));
            serde_json::from_str::<Value>(record).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
        })
        .collect()
}

/// The Worker's own records among the log lines: those that are JSON with an `outcome`.
fn worker_records(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line.split_once(' ')?.1).ok())
        .filter(|record| record.get("outcome").is_some())
        .collect()
}

#[test]
fn head_healthz_on_a_healthy_stack_answers_200_with_no_body() {
    let s = stack();
    // Over a plain socket: the HTTP client would drop a HEAD answer's body unseen.
    let head = send_raw_bytes("HEAD", &format!("{}/healthz", s.edge.url), &[], b"").expect("the Worker answers");
    assert_eq!(head.status, 200, "{head:?}");
    assert_eq!(head.body, "", "a HEAD answer carries no body: {head:?}");
    let get = s.edge.request("GET", "/healthz", &[], &[]);
    assert_eq!((get.status, get.json()["code"].clone()), (200, json!("ok")), "{}", get.body);
}

#[test]
fn healthz_answers_200_without_connecting_to_the_store() {
    // Every connection to the store is closed unanswered, and counted.
    let proxy = FaultProxy::start(free_port());
    proxy.set(Mode::Refuse);
    let edge = Edge::start(&bindings(&proxy.endpoint(), &unused_key(), &[]));
    for method in ["GET", "HEAD", "GET"] {
        let answer = edge.request(method, "/healthz", &[], &[]);
        assert_eq!(answer.status, 200, "{method} /healthz: {}", answer.body);
    }
    // Time for a call the Worker might have left running after answering.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(proxy.accepted.load(Ordering::Relaxed), 0, "/healthz connected to the store");
    // The same Worker does reach for the store on a delivery, and the refusal is a 503.
    let answer = deliver(&edge, &headers("sub_health"), &body("sub_health"));
    assert_eq!((answer.status, answer.json()["code"].clone()), (503, json!("store_unavailable")), "{}", answer.body);
    assert!(proxy.accepted.load(Ordering::Relaxed) >= 1, "the delivery connected to the store");
    assert_eq!(edge.request("GET", "/healthz", &[], &[]).status, 200, "still healthy while the store refuses");
}

#[test]
fn an_empty_post_is_invalid_json_syntax_and_stores_nothing() {
    let s = stack();
    let h = headers("sub_empty");
    // `send_raw_bytes` writes `Content-Length: 0` for the empty body.
    let url = format!("{}/webhooks/staticforms", s.edge.url);
    let answer = send_raw_bytes("POST", &url, &refs(&h), b"").expect("the Worker answers");
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(
        answer.json(),
        json!({"code": "invalid_json", "message": "the body is not valid JSON", "reason": "syntax"}),
        "{answer:?}"
    );
    let logs = records(&s.edge.logs(1));
    assert_eq!(logs[0]["outcome"], "invalid_json", "{logs:?}");
    assert!(s.store.scan(TABLE).is_empty(), "nothing is stored for an empty body");
}

/// Sends a delivery over a plain socket whose `Content-Length` is the whole body's but whose
/// bytes stop after `sent`, then ends the upload (half-close: the answer can still come back).
/// Returns the status and raw body text of an answer, if one arrives.
fn send_cut_short(base: &str, headers: &[(String, String)], body: &[u8], sent: usize) -> Option<(u16, String)> {
    let authority = base.strip_prefix("http://").expect("the Worker's URL is http://");
    let mut stream = TcpStream::connect(authority).expect("the Worker listens");
    stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut request = format!(
        "POST /webhooks/staticforms HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    )
    .into_bytes();
    for (name, value) in headers {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    request.extend_from_slice(b"\r\n");
    request.extend_from_slice(&body[..sent]);
    stream.write_all(&request).unwrap();
    stream.flush().unwrap();
    // Let the Worker start reading before the client goes away.
    std::thread::sleep(Duration::from_millis(300));
    stream.shutdown(Shutdown::Write).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, rest.to_owned()))
}

#[test]
fn a_body_the_client_cuts_short_is_body_unreadable_and_stores_nothing() {
    let s = stack();
    let payload = body("sub_cut");
    let answer = send_cut_short(&s.edge.url, &headers("sub_cut"), &payload, 64);
    // The client went away, so the log line is the record of what the Worker decided; a
    // truncated body read as if whole would be `invalid_json` instead. (Only the Worker's own
    // lines count: the runtime may log the broken upload too.)
    tests::wait_until("the Worker's log line", 10, || !worker_records(&s.edge.logs(0)).is_empty());
    // Time for a second line, which must not come.
    std::thread::sleep(Duration::from_millis(300));
    let logs = worker_records(&s.edge.logs(0));
    assert_eq!(logs.len(), 1, "one line for one request: {logs:?}");
    assert_eq!((logs[0]["outcome"].clone(), logs[0]["status"].clone()), (json!("body_unreadable"), json!(400)));
    if let Some((status, text)) = answer {
        assert_eq!(status, 400, "{text}");
        assert!(text.contains(r#""code":"body_unreadable""#), "{text}");
    }
    assert!(s.store.scan(TABLE).is_empty(), "nothing is stored for a body cut short");
}

#[test]
fn store_timeout_ms_is_the_deadline_of_the_store_call() {
    // A store that accepts the connection and never answers.
    let proxy = FaultProxy::start(free_port());
    proxy.set(Mode::Hang);
    // (STORE_TIMEOUT_MS, earliest and latest answer in ms). The default is 5000 ms, so 400
    // answering well under 3 s and 2000 answering no sooner than 2 s show the variable decides
    // (the upper bounds are loose: a loaded machine may be slow, never early).
    for (timeout, earliest, latest) in [(400u128, 350u128, 3_000u128), (2_000, 1_950, 20_000)] {
        let text = timeout.to_string();
        let edge = Edge::start(&bindings(&proxy.endpoint(), &unused_key(), &[("STORE_TIMEOUT_MS", text.as_str())]));
        // Warm the Worker up first, so its start does not count against the deadline.
        assert_eq!(edge.request("GET", "/healthz", &[], &[]).status, 200);
        let started = Instant::now();
        let answer = deliver(&edge, &headers("sub_deadline"), &body("sub_deadline"));
        let elapsed = started.elapsed().as_millis();
        assert_eq!(
            (answer.status, answer.json()["code"].clone()),
            (503, json!("store_unavailable")),
            "{timeout} ms: {}",
            answer.body
        );
        assert_eq!(answer.header("Retry-After"), Some("5"));
        assert!(elapsed >= earliest, "STORE_TIMEOUT_MS={timeout}: answered after {elapsed} ms, before the deadline");
        assert!(elapsed < latest, "STORE_TIMEOUT_MS={timeout}: answered after {elapsed} ms");
        let logs = worker_records(&edge.logs(2));
        let last = logs.last().map(|record| record["reason"].clone());
        assert_eq!(last, Some(json!("store_timeout")), "the deadline, not another fault: {logs:?}");
    }
}

#[test]
fn a_store_that_stalls_inside_its_answer_meets_the_same_deadline() {
    // Headers and the first bytes of a 200, then nothing: the answer is not proof of a write.
    let proxy = FaultProxy::start(free_port());
    proxy.set(Mode::StallBody);
    let edge = Edge::start(&bindings(&proxy.endpoint(), &unused_key(), &[("STORE_TIMEOUT_MS", "500")]));
    assert_eq!(edge.request("GET", "/healthz", &[], &[]).status, 200);
    let started = Instant::now();
    let answer = deliver(&edge, &headers("sub_stall"), &body("sub_stall"));
    let elapsed = started.elapsed().as_millis();
    assert_eq!((answer.status, answer.json()["code"].clone()), (503, json!("store_unavailable")), "{}", answer.body);
    assert!((450..5_000).contains(&elapsed), "answered after {elapsed} ms, the deadline is 500 ms");
    assert_eq!(proxy.accepted.load(Ordering::Relaxed), 1, "the store was asked once");
    let logs = worker_records(&edge.logs(2));
    assert_eq!(logs.last().map(|r| r["reason"].clone()), Some(json!("store_timeout")), "{logs:?}");
}

#[test]
fn a_duplicate_answers_with_the_stored_receipts_status() {
    let s = stack();
    for (id, status) in [("sub_done", "COMPLETED"), ("sub_failed", "FAILED")] {
        let payload = body(id);
        let first = deliver(&s.edge, &headers(id), &payload);
        assert_eq!(first.status, 202, "{id}: {}", first.body);
        assert_eq!(first.json()["status"], "RECEIVED", "{id}");
        // What the stream worker does once the lead is written (or can never be).
        let key = delivery::key(id);
        s.store.ok(
            "DynamoDB_20120810.UpdateItem",
            &json!({
                "TableName": TABLE,
                "Key": {"pk": {"S": key}},
                "UpdateExpression": "SET #status = :status REMOVE pendingShard",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {":status": {"S": status}},
            }),
        );
        let again = deliver(&s.edge, &headers(id), &payload);
        assert_eq!(again.status, 200, "{id}: {}", again.body);
        assert_eq!(again.header("Idempotent-Replayed"), Some("true"), "{id}");
        let answer = again.json();
        assert_eq!(answer["code"], "duplicate", "{answer}");
        assert_eq!(answer["status"], status, "the stored receipt's status: {answer}");
        assert_eq!(answer["duplicate"], json!(true), "{answer}");
        assert_eq!(answer["submissionId"], id, "{answer}");
        assert_eq!(answer["receivedAt"], first.json()["receivedAt"], "{answer}");
        let item = s.store.get(TABLE, &key).unwrap();
        assert_eq!(item["status"]["S"], status, "the duplicate wrote nothing");
    }
}

#[test]
fn log_lines_hold_no_credential_of_any_auth_method_right_or_wrong() {
    const WRONG_BEARER: &str = "it-wrong-bearer-5a0c";
    const WRONG_PASSWORD: &str = "it-wrong-pass-3e71";
    const WRONG_HEADER_VALUE: &str = "it-wrong-header-value-8f64";
    const WRONG_SIGNING_KEY: &[u8] = b"it-wrong-signing-key-7d1c-000000";
    let s = stack();
    let basic_right = delivery::basic_header(BASIC_USER, BASIC_PASSWORD);
    let basic_wrong = delivery::basic_header(BASIC_USER, WRONG_PASSWORD);
    let mut forbidden: Vec<String> = [
        BEARER,
        WRONG_BEARER,
        BASIC_PASSWORD,
        WRONG_PASSWORD,
        HEADER_VALUE,
        WRONG_HEADER_VALUE,
        delivery::VISITOR_NAME,
        delivery::VISITOR_EMAIL,
        delivery::VISITOR_MESSAGE,
        delivery::API_KEY,
        "owner@example.com",
    ]
    .iter()
    .map(|v| (*v).to_owned())
    .collect();
    let signing_secret = delivery::signing_secret();
    forbidden.extend([
        basic_right.trim_start_matches("Basic ").to_owned(),
        basic_wrong.trim_start_matches("Basic ").to_owned(),
        signing_secret.trim_start_matches("whsec_").to_owned(),
        signing_secret,
        delivery::whsec(WRONG_SIGNING_KEY),
        String::from_utf8(delivery::SIGNING_KEY.to_vec()).unwrap(),
        String::from_utf8(WRONG_SIGNING_KEY.to_vec()).unwrap(),
        s.edge_key.secret.clone(),
    ]);

    // One delivery per method, with the right and a wrong credential; the outcome each logs.
    let mut expected: Vec<&str> = Vec::new();
    let unsigned = [
        ("sub_log_bearer", "Authorization", format!("Bearer {BEARER}"), 202),
        ("sub_log_bearer_bad", "Authorization", format!("Bearer {WRONG_BEARER}"), 401),
        ("sub_log_basic", "Authorization", basic_right, 202),
        ("sub_log_basic_bad", "Authorization", basic_wrong, 401),
        ("sub_log_header", HEADER_NAME, HEADER_VALUE.to_owned(), 202),
        ("sub_log_header_bad", HEADER_NAME, WRONG_HEADER_VALUE.to_owned(), 401),
    ];
    for (id, name, value, status) in unsigned {
        let mut h = without_auth(headers(id));
        h.push((name.to_owned(), value));
        let answer = deliver(&s.edge, &h, &body(id));
        assert_eq!(answer.status, status, "{id}: {}", answer.body);
        expected.push(if status == 202 { "stored" } else { "unauthenticated" });
    }
    for (id, key, status) in [("sub_log_sig", delivery::SIGNING_KEY, 202), ("sub_log_sig_bad", WRONG_SIGNING_KEY, 401)]
    {
        let payload = body(id);
        let signature = delivery::signature_headers(key, &format!("msg_{id}"), delivery::now_secs(), &payload);
        let value = signature.iter().find(|(n, _)| n == "webhook-signature").unwrap().1.clone();
        forbidden.push(value.split_once(',').map_or_else(|| value.clone(), |(_, sig)| sig.to_owned()));
        forbidden.push(value);
        let mut h = without_auth(headers(id));
        h.extend(signature);
        let answer = deliver(&s.edge, &h, &payload);
        assert_eq!(answer.status, status, "{id}: {}", answer.body);
        expected.push(if status == 202 { "stored" } else { "unauthenticated" });
    }

    let lines = s.edge.logs_exactly(expected.len());
    for line in &lines {
        for secret in &forbidden {
            assert!(!line.contains(secret.as_str()), "log line leaks {secret:?}: {line}");
        }
    }
    let outcomes: Vec<Value> = records(&lines).iter().map(|r| r["outcome"].clone()).collect();
    assert_eq!(outcomes, expected.iter().map(|o| json!(o)).collect::<Vec<_>>(), "{lines:#?}");
}
