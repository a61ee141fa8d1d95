//! The whole path, sender to lead: the built Worker in workerd, a fault proxy, the
//! signature-checking store with its stream, the stream worker's handler fed by the poller,
//! and SQLite or PostgreSQL sinks. Each test owns its servers, ports, table and files.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use stream_worker::config::SinkConfig;
use stream_worker::handler::Handler;
use stream_worker::sink::postgres::PostgresTarget;
use stream_worker::sink::Sink;
use tests::delivery::{self, BASIC_PASSWORD, BASIC_USER, BEARER, HEADER_NAME, HEADER_VALUE};
use tests::http::{Answer, HeaderList};
use tests::postgres::Postgres;
use tests::proxy::Mode;
use tests::stack::{every_static_forms_method, Stack, TABLE};
use tests::worker::{self, CrashBeforeMark};

/// Every part of the path, running ([`Stack`], the Worker through a fault proxy, every Static
/// Forms method), and the stream worker's SDK configuration.
struct Path(Stack);

impl std::ops::Deref for Path {
    type Target = Stack;
    fn deref(&self) -> &Stack {
        &self.0
    }
}

async fn path() -> Path {
    path_with(&[]).await
}

/// [`path`] with more Worker bindings.
async fn path_with(extra: &[(&'static str, String)]) -> Path {
    let builder = Stack::builder("path").through_proxy().bindings(every_static_forms_method());
    Path(builder.bindings(extra.to_vec()).start_with_worker().await)
}

impl Path {
    fn sqlite_leads(&self) -> Vec<(String, i64)> {
        let connection = rusqlite::Connection::open(self.dir.0.join("leads.db")).unwrap();
        let mut statement =
            connection.prepare("SELECT external_id, upsert_count FROM leads ORDER BY external_id").unwrap();
        statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
    }

    /// Receipts as `(submissionId, status)`, sorted.
    fn receipts_now(&self) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = self
            .store
            .scan(TABLE)
            .iter()
            .map(|i| {
                (i["submissionId"]["S"].as_str().unwrap().to_owned(), i["status"]["S"].as_str().unwrap().to_owned())
            })
            .collect();
        all.sort();
        all
    }

    /// Sends `id`'s delivery with a bearer token; `body` defaults to the standard one.
    fn send(&self, id: &str) -> Answer {
        self.send_body(id, &delivery::body(id, delivery::VISITOR_MESSAGE, delivery::now_secs()))
    }

    fn send_body(&self, id: &str, body: &[u8]) -> Answer {
        let key = delivery::key(id);
        let auth = format!("Bearer {BEARER}");
        let headers =
            [("Content-Type", "application/json"), ("Authorization", auth.as_str()), ("Idempotency-Key", key.as_str())];
        if key.is_ascii() {
            self.edge.deliver(&headers, body)
        } else {
            let url = format!("{}/webhooks/staticforms", self.edge.url);
            tests::http::send_raw_bytes("POST", &url, &headers, body).expect("the Worker answers")
        }
    }
}

fn ids(items: &[(String, impl Sized)]) -> Vec<String> {
    items.iter().map(|(id, _)| id.clone()).collect()
}

#[tokio::test]
async fn the_sender_is_authenticated_and_nothing_is_stored_for_a_wrong_one() {
    let p = path().await;
    let handler = p.sqlite_handler().await;
    let now = delivery::now_secs();
    let signed = |id: &str, key: &[u8]| {
        let body = delivery::body(id, "m", now);
        let mut headers: Vec<(String, String)> =
            delivery::signature_headers(key, &format!("msg_{id}"), now, &body).into();
        headers.push(("Idempotency-Key".into(), delivery::key(id)));
        (headers, body)
    };
    let mut cases: Vec<(&str, HeaderList, Vec<u8>, u16)> = Vec::new();
    for (id, auth, status) in [
        ("e2e_bearer", ("Authorization".to_owned(), format!("Bearer {BEARER}")), 202),
        ("e2e_bearer_x", ("Authorization".to_owned(), "Bearer wrong".to_owned()), 401),
        ("e2e_basic", ("Authorization".to_owned(), delivery::basic_header(BASIC_USER, BASIC_PASSWORD)), 202),
        ("e2e_basic_x", ("Authorization".to_owned(), delivery::basic_header(BASIC_USER, "wrong")), 401),
        ("e2e_header", (HEADER_NAME.to_owned(), HEADER_VALUE.to_owned()), 202),
        ("e2e_header_x", (HEADER_NAME.to_owned(), "wrong".to_owned()), 401),
    ] {
        cases.push((
            id,
            vec![auth, ("Idempotency-Key".into(), delivery::key(id))],
            delivery::body(id, "m", now),
            status,
        ));
    }
    let (headers, body) = signed("e2e_sig", delivery::SIGNING_KEY);
    cases.push(("e2e_sig", headers, body, 202));
    let (headers, body) = signed("e2e_sig_x", b"an-attacker-guessed-this-key-000");
    cases.push(("e2e_sig_x", headers, body, 401));
    for (id, mut headers, body, status) in cases {
        headers.push(("Content-Type".into(), "application/json".into()));
        let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(p.edge.deliver(&refs, &body).status, status, "{id}");
    }
    worker::drain(&p.poller(), &handler).await;
    let expected = ["e2e_basic", "e2e_bearer", "e2e_header", "e2e_sig"];
    assert_eq!(ids(&p.receipts_now()), expected);
    assert_eq!(ids(&p.sqlite_leads()), expected);
}

#[tokio::test]
async fn a_lost_response_is_retried_into_a_duplicate_with_one_receipt_and_one_lead() {
    let p = path().await;
    let handler = p.sqlite_handler().await;
    let body = delivery::body("e2e_lost", delivery::VISITOR_MESSAGE, delivery::now_secs());
    p.proxy().set(Mode::DropResponse { times: 1 });
    let first = p.send_body("e2e_lost", &body);
    assert_eq!(first.status, 503, "{}", first.body);
    assert_eq!(p.proxy().forwarded.load(Ordering::Relaxed), 1, "the PutItem reached the store");
    assert_eq!(p.receipts_now(), [("e2e_lost".to_owned(), "RECEIVED".to_owned())], "and was stored");
    // The sender retries, as Static Forms does on a 5xx.
    let retry = p.send_body("e2e_lost", &body);
    assert_eq!((retry.status, retry.json()["duplicate"].clone()), (200, json!(true)));
    worker::drain(&p.poller(), &handler).await;
    assert_eq!(p.receipts_now(), [("e2e_lost".to_owned(), "COMPLETED".to_owned())]);
    assert_eq!(p.sqlite_leads(), [("e2e_lost".to_owned(), 1)]);
}

#[tokio::test]
async fn concurrent_copies_and_random_retries_give_one_receipt_and_one_lead_per_submission() {
    let p = path().await;
    let postgres = Postgres::start();
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: Sink::connect(&SinkConfig::Postgres { target: PostgresTarget::parse(&postgres.url(), None).unwrap() })
            .await
            .unwrap(),
        receipts: p.receipts(),
    };
    let hot = delivery::body("e2e_hot", delivery::VISITOR_MESSAGE, delivery::now_secs());
    // 50 copies of one delivery, and 200 distinct deliveries of which every third is sent
    // again (a retry) and every seventh a third time; all at once on 16 threads.
    let mut jobs: Vec<(String, Vec<u8>)> = (0..50).map(|_| ("e2e_hot".to_owned(), hot.clone())).collect();
    for i in 0..200 {
        let id = format!("e2e_{i:03}");
        let body = delivery::body(&id, delivery::VISITOR_MESSAGE, delivery::now_secs());
        let copies = 1 + usize::from(i % 3 == 0) + usize::from(i % 7 == 0);
        jobs.extend(std::iter::repeat_n((id, body), copies));
    }
    // A fixed shuffle, so retries interleave with first attempts.
    let n = jobs.len();
    for i in 0..n {
        jobs.swap(i, (i * 7919 + 13) % n);
    }
    let next = AtomicUsize::new(0);
    let answered: Vec<(String, u16)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..16)
            .map(|_| {
                scope.spawn(|| {
                    let mut seen = Vec::new();
                    while let Some((id, body)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                        seen.push((id.clone(), p.send_body(id, body).status));
                    }
                    seen
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(answered.len(), n);
    let statuses: Vec<u16> = answered.iter().map(|(_, status)| *status).collect();
    assert!(statuses.iter().all(|s| *s == 200 || *s == 202), "no 5xx, no 4xx: {statuses:?}");
    // Exactly one 202 for each submission (not 201 in total, which two for one and none for
    // another would also make), and every other copy 200.
    let mut stored: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for (id, status) in &answered {
        *stored.entry(id.as_str()).or_default() += usize::from(*status == 202);
    }
    assert_eq!(stored.len(), 201);
    assert!(stored.iter().all(|(_, n)| *n == 1), "{:?}", stored.iter().filter(|(_, n)| **n != 1).collect::<Vec<_>>());
    worker::drain(&p.poller(), &handler).await;
    let distinct: BTreeSet<String> = jobs.iter().map(|(id, _)| id.clone()).collect();
    let receipts = p.receipts_now();
    assert_eq!(receipts.len(), distinct.len());
    assert!(receipts.iter().all(|(_, status)| status == "COMPLETED"));
    let (client, connection) = tokio_postgres::connect(&postgres.url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let leads: Vec<String> = client
        .query("SELECT external_id FROM leads ORDER BY external_id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(leads, distinct.into_iter().collect::<Vec<_>>(), "leads == receipts == distinct submissions");
}

#[tokio::test]
async fn redelivered_records_and_a_crash_before_the_receipt_update_leave_one_lead_each() {
    let p = path().await;
    let path = p.dir.0.join("leads.db").display().to_string();
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: Sink::connect(&SinkConfig::Sqlite { path }).await.unwrap(),
        receipts: CrashBeforeMark::new(p.receipts(), 2),
    };
    for i in 0..4 {
        assert_eq!(p.send(&format!("e2e_re_{i}")).status, 202);
    }
    worker::drain(&p.poller(), &handler).await;
    // The stream delivers everything again.
    std::fs::remove_file(p.dir.0.join("checkpoint.json")).unwrap();
    worker::drain(&p.poller(), &handler).await;
    let leads = p.sqlite_leads();
    assert_eq!(ids(&leads), ["e2e_re_0", "e2e_re_1", "e2e_re_2", "e2e_re_3"]);
    // The four in one batch; the first two updates crashed, so the batch came again from its
    // first record: the two whose updates crashed upserted again (never added), the two
    // finished not sent; the replay found all four finished.
    let mut counts: Vec<i64> = leads.iter().map(|(_, count)| *count).collect();
    counts.sort_unstable();
    assert_eq!(counts, [1, 1, 2, 2], "{leads:?}");
    assert!(p.receipts_now().iter().all(|(_, status)| status == "COMPLETED"));
}

#[tokio::test]
async fn a_store_failure_before_the_put_is_never_a_success_and_recovery_gives_exactly_one() {
    let p = path().await;
    let handler = p.sqlite_handler().await;
    let faults = [
        ("down", Mode::Refuse),
        ("hanging", Mode::Hang),
        ("5xx", Mode::Answer(500, r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError"}"#.into())),
        (
            "throttled",
            Mode::Answer(
                400,
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}"#.into(),
            ),
        ),
    ];
    for (name, mode) in faults {
        let id = format!("e2e_fault_{name}");
        p.proxy().set(mode);
        for attempt in 0..2 {
            let answer = p.send(&id);
            assert_eq!(answer.status, 503, "{name} attempt {attempt}: {}", answer.body);
        }
        assert!(p.receipts_now().iter().all(|(sid, _)| *sid != id), "{name}: no receipt");
        p.proxy().set(Mode::PassThrough);
        assert_eq!(p.send(&id).status, 202, "{name}: the retry after recovery stores it");
        assert_eq!(p.send(&id).status, 200, "{name}: and a further retry is a duplicate");
    }
    worker::drain(&p.poller(), &handler).await;
    let expected = ["e2e_fault_5xx", "e2e_fault_down", "e2e_fault_hanging", "e2e_fault_throttled"];
    assert_eq!(ids(&p.receipts_now()), expected);
    assert_eq!(p.sqlite_leads().iter().map(|l| (l.0.as_str(), l.1)).collect::<Vec<_>>(), expected.map(|id| (id, 1)));
}

#[tokio::test]
async fn a_redelivery_after_the_retention_window_or_the_ttl_sweep_updates_the_same_lead() {
    let p = path().await;
    let handler = p.sqlite_handler().await;
    assert_eq!(p.send("e2e_late").status, 202);
    worker::drain(&p.poller(), &handler).await;
    // The retention window passes: the receipt's TTL is behind us (DynamoDB deletes it some
    // time later; until then the edge's condition treats it as gone).
    p.store.ok(
        "DynamoDB_20120810.UpdateItem",
        &json!({"TableName": TABLE, "Key": {"pk": {"S": delivery::key("e2e_late")}},
                "UpdateExpression": "SET expiresAt = :past", "ExpressionAttributeValues": {":past": {"N": "1000"}}}),
    );
    assert_eq!(p.send("e2e_late").status, 202, "a new receipt replaces the expired one");
    worker::drain(&p.poller(), &handler).await;
    assert_eq!(p.sqlite_leads(), [("e2e_late".to_owned(), 2)], "the sink's key kept it to one lead");
    assert_eq!(p.receipts_now(), [("e2e_late".to_owned(), "COMPLETED".to_owned())]);

    // Then TTL sweeps it: a REMOVE record (as a DeleteItem's, plus a `userIdentity` of the
    // service; ministack's reaper writes no stream record, so the sweep is a DeleteItem here).
    // The deployed mapping's filter (NewImage.status RECEIVED) keeps it from the function; the
    // poller, which has no filter, skips it as no lead. A sender replaying an old delivery
    // after that gets a fresh receipt, whose INSERT is the same lead.
    let key = json!({"pk": {"S": delivery::key("e2e_late")}});
    p.store.ok("DynamoDB_20120810.DeleteItem", &json!({"TableName": TABLE, "Key": key}));
    let swept = worker::drain(&p.poller(), &handler).await;
    assert_eq!(swept[0].processed, 1, "the REMOVE record: {swept:?}");
    assert_eq!(p.receipts_now(), []);
    assert_eq!(p.send("e2e_late").status, 202, "a fresh receipt after the sweep");
    worker::drain(&p.poller(), &handler).await;
    assert_eq!(p.sqlite_leads(), [("e2e_late".to_owned(), 3)], "still one lead");
    assert_eq!(p.receipts_now(), [("e2e_late".to_owned(), "COMPLETED".to_owned())]);
    assert_eq!(p.send("e2e_late").status, 200, "and a duplicate of the fresh receipt");
}

/// A delivery body for `id` with `form_data` as raw JSON text (so numbers and keys are exactly
/// as written).
fn raw_body(id: &str, form_data: &str) -> Vec<u8> {
    format!(
        r#"{{"event":"form.submitted","timestamp":{},"data":{{"submissionId":{},"formData":{form_data},"apiKey":"k"}}}}"#,
        delivery::now_secs(),
        serde_json::to_string(id).unwrap()
    )
    .into_bytes()
}

/// `levels` levels of nesting in all, counting the body and `data` and `formData` themselves.
fn nested_form(levels: usize) -> String {
    let mut value = String::from(r#""bottom""#);
    for level in 0..levels - 3 {
        value = if level % 2 == 0 { format!(r#"{{"k":{value}}}"#) } else { format!("[{value}]") };
    }
    format!(r#"{{"name":"Deep","email":"deep@example.com","deep":{value}}}"#)
}

#[tokio::test]
async fn odd_but_valid_deliveries_become_one_lead_each_or_a_4xx_before_any_write() {
    let p = path_with(&[("MAX_BODY_BYTES", "1048576".into())]).await;
    let handler = p.sqlite_handler().await;
    let long_id = "L".repeat(1000);
    let accepted: Vec<(String, Vec<u8>)> = vec![
        ("e2e_nest14".into(), raw_body("e2e_nest14", &nested_form(14))),
        ("e2e_nest16".into(), raw_body("e2e_nest16", &nested_form(16))),
        ("e2e_nest24".into(), raw_body("e2e_nest24", &nested_form(24))),
        ("e2e_nest31".into(), raw_body("e2e_nest31", &nested_form(31))),
        (
            "e2e_keys".into(),
            raw_body(
                "e2e_keys",
                r##"{"":"empty","  ":"blank","a.b":1,"#x":2,":":3,"é😀":4,"M":{"S":"not a type"},"name":"Keys"}"##,
            ),
        ),
        (
            "e2e_numbers".into(),
            raw_body(
                "e2e_numbers",
                r#"{"big":123456789012345678901234567890123456789,"huge":1e400,"tiny":-1E-400,"zero":-0,"exp":9.9e125,"name":"Numbers"}"#,
            ),
        ),
        ("sub/8fK2".into(), raw_body("sub/8fK2", r#"{"name":"Slash"}"#)),
        ("a+b=c==".into(), raw_body("a+b=c==", r#"{"name":"Base64"}"#)),
        // Not ASCII: the key's header carries the ID's UTF-8 bytes.
        ("sub/é😀".into(), raw_body("sub/é😀", r#"{"name":"Unicode"}"#)),
        (long_id.clone(), raw_body(&long_id, r#"{"name":"Long"}"#)),
        (
            "e2e_large".into(),
            raw_body("e2e_large", &format!(r#"{{"name":"Large","message":"{}"}}"#, "m".repeat(380_000))),
        ),
    ];
    for (id, body) in &accepted {
        let answer = p.send_body(id, body);
        assert_eq!(answer.status, 202, "{}: {}", &id[..id.len().min(40)], answer.body);
        let retry = p.send_body(id, body);
        assert_eq!(
            (retry.status, retry.json()["duplicate"].clone()),
            (200, json!(true)),
            "{}",
            &id[..id.len().min(40)]
        );
    }
    // Refused before any write, each with a reason a person can act on.
    let refused: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("e2e_nest32", raw_body("e2e_nest32", &nested_form(32)), 400, "too_deep"),
        ("e2e_dupkey", raw_body("e2e_dupkey", r#"{"a":1,"a":2}"#), 400, "duplicate_key"),
        (
            "e2e_toolarge",
            raw_body("e2e_toolarge", &format!(r#"{{"message":"{}"}}"#, "m".repeat(420_000))),
            413,
            "item_too_large",
        ),
    ];
    for (id, body, status, reason) in &refused {
        let answer = p.send_body(id, body);
        assert_eq!((answer.status, answer.json()["reason"].clone()), (*status, json!(reason)), "{id}: {}", answer.body);
    }
    let too_long = "L".repeat(1025);
    let answer = p.send_body(&too_long, &raw_body(&too_long, "{}"));
    assert_eq!((answer.status, answer.json()["reason"].clone()), (400, json!("invalid_submission_id")));
    // Ordinary deliveries sent after all of that become leads in the same pass.
    for i in 0..5 {
        assert_eq!(p.send(&format!("e2e_after_{i}")).status, 202);
    }
    worker::drain(&p.poller(), &handler).await;
    let mut expected: Vec<String> = accepted.iter().map(|(id, _)| id.clone()).collect();
    expected.extend((0..5).map(|i| format!("e2e_after_{i}")));
    expected.sort();
    let receipts = p.receipts_now();
    assert_eq!(ids(&receipts), expected, "nothing refused was stored");
    assert!(
        receipts.iter().all(|(_, status)| status == "COMPLETED"),
        "{:?}",
        receipts.iter().filter(|r| r.1 != "COMPLETED").map(|r| (&r.0[..r.0.len().min(40)], &r.1)).collect::<Vec<_>>()
    );
    let leads = p.sqlite_leads();
    assert_eq!(ids(&leads), expected, "one lead per accepted delivery");
    assert!(leads.iter().all(|(_, count)| *count == 1), "each written once");
    // The odd values arrived as sent.
    let connection = rusqlite::Connection::open(p.dir.0.join("leads.db")).unwrap();
    let extra = |id: &str| -> serde_json::Value {
        let text: String =
            connection.query_row("SELECT extra FROM leads WHERE external_id = ?1", [id], |r| r.get(0)).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    assert_eq!(extra("e2e_keys")[""], "empty");
    assert_eq!(extra("e2e_keys")["M"], json!({"S": "not a type"}));
    let numbers: String =
        connection.query_row("SELECT extra FROM leads WHERE external_id = 'e2e_numbers'", [], |r| r.get(0)).unwrap();
    assert!(numbers.contains("123456789012345678901234567890123456789") && numbers.contains("1e400"), "{numbers}");
    let deep: String =
        connection.query_row("SELECT extra FROM leads WHERE external_id = 'e2e_nest31'", [], |r| r.get(0)).unwrap();
    assert!(deep.contains("bottom"), "{deep}");
}
