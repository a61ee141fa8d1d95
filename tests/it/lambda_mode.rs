//! The stream worker binary in Lambda mode, against a stand-in of the Lambda Runtime API
//! (the documented `/2018-06-01/runtime/invocation/...` calls): it takes a DynamoDB stream
//! event, writes the lead, marks the receipt, and posts `batchItemFailures` back; as the
//! reconcile function (`_HANDLER=reconcile`) it settles overdue receipts on a scheduled event.

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tests::aws::put_item;
use tests::crm::HubSpotStandIn;
use tests::ministack::{AccessKey, Ministack};
use tests::postgres::Postgres;
use tests::stub_http::{StubResponse, StubServer, WebhookStandIn};
use tests::TempDir;
use tests::{delivery, repo_root};

const TABLE: &str = "receipts";

/// What one invocation of the function produced.
pub(crate) struct Invocation {
    /// The calls the function made back to the Runtime API: path and JSON body.
    pub(crate) responses: Vec<(String, Value)>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    /// The exit code, when the process ended on its own before it was stopped.
    pub(crate) exited: Option<i32>,
}

/// Runs the binary as a Lambda function with `env` (plus the Runtime API's and the store's
/// settings), hands it `event` once, and returns what it answered and logged.
pub(crate) fn invoke_once(store: &Ministack, key: &AccessKey, env: &[(&str, String)], event: Value) -> Invocation {
    invoke_with_time(store, key, env, event, 60_000)
}

/// [`invoke_once`] with an invocation deadline `time_ms` from now.
fn invoke_with_time(
    store: &Ministack,
    key: &AccessKey,
    env: &[(&str, String)],
    event: Value,
    time_ms: u128,
) -> Invocation {
    let invocation = run_function(store, key, env, event, time_ms);
    assert!(!invocation.responses.is_empty(), "no invocation response; stderr: {}", invocation.stderr);
    invocation
}

/// Runs the binary as a Lambda function until it answers one invocation of `event` or exits.
fn run_function(store: &Ministack, key: &AccessKey, env: &[(&str, String)], event: Value, time_ms: u128) -> Invocation {
    let binary = tests::stream_worker_binary();
    let responses: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let seen = Arc::clone(&responses);
    let served = Arc::new(Mutex::new(false));
    let runtime = StubServer::start(move |request| {
        if request.path == "/2018-06-01/runtime/invocation/next" {
            let mut served = served.lock().unwrap();
            if *served {
                // One invocation is all a test needs; an error ends the runtime's loop.
                return StubResponse::json(500, json!({"errorType": "TestOver"}));
            }
            *served = true;
            let deadline =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() + time_ms;
            let mut response = StubResponse::json(200, event.clone());
            response.headers = vec![
                ("Lambda-Runtime-Aws-Request-Id".into(), "invocation-1".into()),
                ("Lambda-Runtime-Deadline-Ms".into(), deadline.to_string()),
                (
                    "Lambda-Runtime-Invoked-Function-Arn".into(),
                    "arn:aws:lambda:us-east-1:123456789012:function:stream-worker".into(),
                ),
                ("Lambda-Runtime-Trace-Id".into(), "Root=1-00000000-000000000000000000000000".into()),
            ];
            return response;
        }
        seen.lock().unwrap().push((request.path.clone(), serde_json::from_slice(&request.body).unwrap_or(Value::Null)));
        StubResponse::json(202, json!({"status": "OK"}))
    });
    let mut command = Command::new(&binary);
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_LAMBDA_RUNTIME_API", format!("127.0.0.1:{}", runtime.port))
        .env("AWS_LAMBDA_FUNCTION_NAME", "stream-worker")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL_DYNAMODB", store.endpoint())
        .env("AWS_ENDPOINT_URL_SECRETS_MANAGER", store.endpoint())
        .env("AWS_ACCESS_KEY_ID", &key.id)
        .env("AWS_SECRET_ACCESS_KEY", &key.secret)
        .env("RECEIPTS_TABLE", TABLE)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let answered = (0..300).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        !responses.lock().unwrap().is_empty() || child.try_wait().ok().flatten().is_some()
    });
    let exited = child.try_wait().ok().flatten().and_then(|status| status.code());
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    assert!(answered, "the function neither answered nor exited within 30 s");
    let responses = responses.lock().unwrap().clone();
    Invocation {
        responses,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        exited,
    }
}

/// The EMF lines in `stdout`, parsed.
fn metric_lines(stdout: &str) -> Vec<Value> {
    stdout.lines().filter(|l| l.contains("\"_aws\"")).map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn the_lambda_handler_applies_an_insert_and_reports_no_failures() {
    let (store, key) = store_for(tests::policies::Role::StreamWorker);

    // The event: a real-shaped stream event whose new image is a receipt that is in the table.
    let fixture = repo_root().join("stream-worker/tests/fixtures/insert.json");
    let event: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let image = event["Records"][0]["dynamodb"]["NewImage"].to_string();
    let item = shared::dynamo::item_from_wire(&shared::json::parse(image.as_bytes()).unwrap()).unwrap();
    put_item(&store, TABLE, &item);

    let postgres = Postgres::start();
    // The database URL (which holds a password) comes from Secrets Manager, not the environment.
    let secret = store.create_secret("stream-worker/sink", &json!({"LEAD_SINK": postgres.url()}).to_string());
    store.allow("function", "sink-secret", "secretsmanager:GetSecretValue", &secret);
    let invocation = invoke_once(&store, &key, &[("SINK_SECRET_ARN", secret)], event);
    let logs = &invocation.stderr;
    let responses = &invocation.responses;
    assert_eq!(responses[0].0, "/2018-06-01/runtime/invocation/invocation-1/response", "{responses:?}");
    assert_eq!(responses[0].1["batchItemFailures"], json!([]));
    let leads = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let (client, connection) = tokio_postgres::connect(&postgres.url(), tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let rows = client.query("SELECT external_id, email, upsert_count FROM leads", &[]).await.unwrap();
        rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, String>(1), r.get::<_, i64>(2))).collect::<Vec<_>>()
    });
    assert_eq!(leads, [("sub_1".to_owned(), "ada@example.com".to_owned(), 1)]);
    let receipt = store.get(TABLE, "staticforms:form.submitted:sub_1").unwrap();
    assert_eq!(receipt["status"]["S"], "COMPLETED");
    assert!(logs.contains(r#""submissionId":"sub_1","action":"apply","outcome":"completed""#), "{logs}");
    assert!(!logs.contains("ada@example.com"), "no form contents in the logs");
    // The batch's metrics, as Embedded Metric Format lines.
    let metrics = metric_lines(&invocation.stdout);
    assert_eq!(metrics.len(), 1, "{}", invocation.stdout);
    let directive = &metrics[0]["_aws"]["CloudWatchMetrics"][0];
    assert_eq!(directive["Namespace"], "WebhookReceiver");
    assert_eq!(directive["Dimensions"], json!([["service"]]));
    let names: Vec<&str> =
        directive["Metrics"].as_array().unwrap().iter().map(|m| m["Name"].as_str().unwrap()).collect();
    assert_eq!(names, ["LeadsWritten", "DuplicatesAbsorbed", "LeadsFailed", "RecordsRetried"]);
    for name in names {
        assert!(metrics[0][name].is_u64(), "{name} has a value: {}", metrics[0]);
    }
    assert_eq!(metrics[0]["LeadsWritten"], 1);
    assert_eq!(metrics[0]["service"], "stream-worker");
    assert!(metrics[0]["_aws"]["Timestamp"].as_u64().is_some_and(|t| t > 1_700_000_000_000));
}

#[test]
fn lambda_mode_refuses_a_sqlite_sink() {
    // A SQLite file would live in one execution environment's /tmp.
    let binary = tests::stream_worker_binary();
    let dir = TempDir::new("lambda-sqlite");
    let output = Command::new(&binary)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .env("AWS_REGION", "us-east-1")
        .env("RECEIPTS_TABLE", TABLE)
        .env("LEAD_SINK", format!("sqlite://{}", dir.0.join("leads.db").display()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("LEAD_SINK must not be sqlite:// in Lambda mode"), "{stderr}");
}

#[test]
fn the_reconcile_function_settles_overdue_receipts_and_writes_its_metrics() {
    let (store, key) = store_for(tests::policies::Role::Reconcile);
    let now = tests::now_millis();
    for (id, age_ms) in [("sub_old", 3 * 3_600_000), ("sub_new", 60_000)] {
        let body = delivery::body(id, delivery::VISITOR_MESSAGE, 1_796_019_713);
        put_item(&store, TABLE, &tests::aws::receipt(&body, now - age_ms).to_item());
    }
    // Two FAILED receipts (in their index) the run counts, under the role's own policy.
    for id in ["sub_failed_1", "sub_failed_2"] {
        let mut failed = tests::aws::receipt(&delivery::body(id, delivery::VISITOR_MESSAGE, 1_796_019_713), now);
        failed.status = shared::receipt::ReceiptStatus::Failed;
        put_item(&store, TABLE, &failed.to_item());
    }
    let postgres = Postgres::start();
    // A scheduled event, as EventBridge sends it.
    let event = json!({"version": "0", "id": "e1", "detail-type": "Scheduled Event", "source": "aws.events",
        "account": "123456789012", "time": "2026-11-30T06:00:00Z", "region": "us-east-1", "resources": [], "detail": {}});
    let env = [
        ("_HANDLER", "reconcile".to_owned()),
        ("RECONCILE_OLDER_THAN", "2h".to_owned()),
        ("LEAD_SINK", postgres.url()),
    ];
    // An invocation with less time left than one receipt's budget starts none: the next
    // scheduled run takes them (no timeout halfway through a sink call).
    let short = invoke_with_time(&store, &key, &env, event.clone(), 3_000);
    let counts = |report: &Value| ["overdue", "completed", "notReached", "stillWaiting"].map(|n| report[n].as_u64());
    assert_eq!(counts(&short.responses[0].1), [Some(1), Some(0), Some(1), Some(1)], "{:?}", short.responses);
    let status = |id: &str| store.get(TABLE, &delivery::key(id)).unwrap()["status"]["S"].as_str().unwrap().to_owned();
    assert_eq!(status("sub_old"), "RECEIVED");
    let invocation = invoke_once(&store, &key, &env, event);

    let (path, report) = &invocation.responses[0];
    assert_eq!(path, "/2018-06-01/runtime/invocation/invocation-1/response", "{}", invocation.stderr);
    assert_eq!((report["overdue"].as_u64(), report["completed"].as_u64()), (Some(1), Some(1)), "{report}");
    assert_eq!(report["stillWaiting"], 0);
    assert_eq!((status("sub_old"), status("sub_new")), ("COMPLETED".to_owned(), "RECEIVED".to_owned()));

    let metrics = metric_lines(&invocation.stdout);
    let first = &metrics[0];
    let names: Vec<&str> = first["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ReceiptsOverdue", "ReceiptsReconciled", "ReceiptsWaiting", "ReceiptsFailed"]);
    assert_eq!((first["ReceiptsOverdue"].as_u64(), first["ReceiptsWaiting"].as_u64()), (Some(1), Some(0)));
    assert_eq!(first["ReceiptsFailed"], 2, "the LeadsFailed alarm's gauge");
    assert_eq!(first["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["service"]]));
    assert!(metrics.iter().any(|m| m["LeadsWritten"] == 1), "{}", invocation.stdout);
    for private in [delivery::VISITOR_EMAIL, delivery::VISITOR_NAME, delivery::VISITOR_MESSAGE] {
        assert!(!invocation.stdout.contains(private) && !invocation.stderr.contains(private), "{private} logged");
    }
}

/// A store with the receipts table, and a key holding exactly `role`'s statements.
fn store_for(role: tests::policies::Role) -> (Ministack, AccessKey) {
    let store = Ministack::start();
    store.create_receipts_table(TABLE);
    let key = store.role_access_key("function", role, TABLE);
    (store, key)
}

/// The fixture `name`'s event, with each record's receipt stored in `store` as the edge left it.
fn fixture_event(store: &Ministack, name: &str) -> Value {
    let fixture = repo_root().join("stream-worker/tests/fixtures").join(name);
    let event: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    for record in event["Records"].as_array().unwrap() {
        let image = record["dynamodb"]["NewImage"].to_string();
        let item = shared::dynamo::item_from_wire(&shared::json::parse(image.as_bytes()).unwrap()).unwrap();
        put_item(store, TABLE, &item);
    }
    event
}

/// The sequence numbers a response reports as failed.
fn failed_items(response: &Value) -> Vec<&str> {
    let failures = response["batchItemFailures"].as_array().unwrap();
    failures.iter().map(|f| f["itemIdentifier"].as_str().unwrap()).collect()
}

#[test]
fn a_sink_outage_is_reported_in_batch_item_failures_through_the_runtime() {
    let (store, key) = store_for(tests::policies::Role::StreamWorker);
    let event = fixture_event(&store, "batch_of_five.json");
    // A webhook sink that is down: every attempt answers 503.
    let sink = StubServer::start(|_| StubResponse::json(503, json!({"error": "down"})));
    let env = [
        ("LEAD_SINK", format!("http://127.0.0.1:{}/leads", sink.port)),
        ("WEBHOOK_SINK_SECRET", delivery::signing_secret()),
    ];
    let invocation = invoke_once(&store, &key, &env, event);
    let (path, response) = &invocation.responses[0];
    assert_eq!(path, "/2018-06-01/runtime/invocation/invocation-1/response", "{}", invocation.stderr);
    // The first record failed: it and everything after it is retried by Lambda.
    assert_eq!(failed_items(response), ["000000000000000000201"], "{response}");
    let status = |id: &str| store.get(TABLE, &delivery::key(id)).unwrap()["status"]["S"].as_str().unwrap().to_owned();
    assert_eq!(status("sub_1"), "RECEIVED");
    let metrics = metric_lines(&invocation.stdout);
    assert_eq!((metrics[0]["RecordsRetried"].as_u64(), metrics[0]["LeadsWritten"].as_u64()), (Some(1), Some(0)));
}

#[test]
fn the_invocation_deadline_from_the_runtime_bounds_the_batch() {
    let (store, key) = store_for(tests::policies::Role::StreamWorker);
    // A webhook sink takes one lead per call, so its records are started one by one.
    let sink = StubServer::start(|_| StubResponse::json(200, json!({"ok": true})));
    let env = [
        ("LEAD_SINK", format!("http://127.0.0.1:{}/leads", sink.port)),
        ("WEBHOOK_SINK_SECRET", delivery::signing_secret()),
    ];
    // A deadline shorter than one record's budget: the first record is always tried, the
    // others are handed back unprocessed rather than risk a timeout that retries them all.
    let short = invoke_with_time(&store, &key, &env, fixture_event(&store, "batch_of_five.json"), 3_000);
    assert_eq!(
        failed_items(&short.responses[0].1),
        ["000000000000000000202"],
        "{:?} {}",
        short.responses,
        short.stderr
    );
    // A deadline a minute away (the budget of a webhook record is well under it): the whole
    // batch, from the second record on.
    let long = invoke_with_time(&store, &key, &env, fixture_event(&store, "batch_of_five.json"), 60_000);
    assert_eq!(failed_items(&long.responses[0].1), Vec::<&str>::new(), "{:?} {}", long.responses, long.stderr);
    let status = |id: &str| store.get(TABLE, &delivery::key(id)).unwrap()["status"]["S"].as_str().unwrap().to_owned();
    assert!(["sub_1", "sub_2", "sub_3", "sub_4", "sub_5"].iter().all(|id| status(id) == "COMPLETED"));
}

#[test]
fn a_batching_sink_always_tries_the_invocation_s_first_batch_whole() {
    let (store, key) = store_for(tests::policies::Role::StreamWorker);
    let postgres = Postgres::start();
    let env = [("LEAD_SINK", postgres.url())];
    // PostgreSQL takes the five leads in one statement: with 3 seconds left, less than its
    // batch budget, the first batch is still tried, and whole.
    let short = invoke_with_time(&store, &key, &env, fixture_event(&store, "batch_of_five.json"), 3_000);
    assert_eq!(failed_items(&short.responses[0].1), Vec::<&str>::new(), "{:?} {}", short.responses, short.stderr);
    let status = |id: &str| store.get(TABLE, &delivery::key(id)).unwrap()["status"]["S"].as_str().unwrap().to_owned();
    assert!(["sub_1", "sub_2", "sub_3", "sub_4", "sub_5"].iter().all(|id| status(id) == "COMPLETED"));
}

#[test]
fn a_sink_that_cannot_work_stops_the_start_and_one_that_cannot_be_asked_does_not() {
    let (store, key) = store_for(tests::policies::Role::StreamWorker);
    let portal = HubSpotStandIn::start("pat-test", "submission_id");
    let hubspot = |base_url: String, property: &str| {
        vec![
            ("LEAD_SINK", "hubspot".to_owned()),
            ("HUBSPOT_TOKEN", "pat-test".to_owned()),
            ("HUBSPOT_BASE_URL", base_url),
            ("HUBSPOT_ID_PROPERTY", property.to_owned()),
        ]
    };
    // The portal answers, and the ticket property the configuration names does not exist:
    // every lead would fail, so the function does not start (Lambda reports the init error).
    let wrong = run_function(&store, &key, &hubspot(portal.server.url(), "no_such_property"), json!({}), 60_000);
    assert!(wrong.exited.is_some_and(|code| code != 0), "{:?} {}", wrong.exited, wrong.stderr);
    assert!(wrong.stderr.contains("the lead sink's configuration cannot work"), "{}", wrong.stderr);
    assert!(wrong.responses.is_empty(), "no invocation taken: {:?}", wrong.responses);
    // The portal cannot be asked (nothing listens there): the function starts, says so, and
    // hands the records back for a retry.
    let closed = format!("http://127.0.0.1:{}", tests::free_port());
    let unreachable =
        invoke_once(&store, &key, &hubspot(closed, "submission_id"), fixture_event(&store, "insert.json"));
    assert!(unreachable.stderr.contains("could not be checked") && unreachable.stderr.contains("starting anyway"));
    let (path, response) = &unreachable.responses[0];
    assert_eq!(path, "/2018-06-01/runtime/invocation/invocation-1/response", "{}", unreachable.stderr);
    assert_eq!(failed_items(response).len(), 1, "{response}");
    // The portal is slow (it takes the connection and never answers): the check is given up
    // after 4 seconds, within Lambda's 10-second init and before the client's own 10-second
    // timeout would call it unreachable, and the function starts; with 3 seconds left, the
    // record is handed back.
    let slow = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let slow_url = format!("http://{}", slow.local_addr().unwrap());
    let hung = invoke_with_time(
        &store,
        &key,
        &hubspot(slow_url, "submission_id"),
        fixture_event(&store, "insert.json"),
        3_000,
    );
    assert!(hung.stderr.contains("took too long") && hung.stderr.contains("starting anyway"), "{}", hung.stderr);
    assert_eq!(failed_items(&hung.responses[0].1).len(), 1, "{}", hung.stderr);
    drop(slow);
    // The portal is throttled (HubSpot's 429 for the burst limit): no reason not to start;
    // the lead is written once the limit has passed.
    portal.fail_next(tests::stub_http::FailNext::new(1, 429));
    let throttled =
        invoke_once(&store, &key, &hubspot(portal.server.url(), "submission_id"), fixture_event(&store, "insert.json"));
    assert!(throttled.stderr.contains("HubSpot answered 429") && throttled.stderr.contains("starting anyway"));
    assert_eq!(failed_items(&throttled.responses[0].1), Vec::<&str>::new(), "{}", throttled.stderr);
    // The same configuration against the portal starts without a word and writes the lead.
    let fine =
        invoke_once(&store, &key, &hubspot(portal.server.url(), "submission_id"), fixture_event(&store, "insert.json"));
    assert!(!fine.stderr.contains("starting anyway"), "{}", fine.stderr);
    assert_eq!(failed_items(&fine.responses[0].1), Vec::<&str>::new(), "{}", fine.stderr);
}

#[test]
fn a_reconcile_age_the_stream_may_still_be_retrying_stops_the_reconcile_function_s_start() {
    let (store, key) = store_for(tests::policies::Role::Reconcile);
    let sink = tests::stub_http::WebhookStandIn::start();
    for (age, starts) in [("30m", false), ("1h", false), ("2h", true)] {
        let env = [
            ("_HANDLER", "reconcile".to_owned()),
            ("RECONCILE_OLDER_THAN", age.to_owned()),
            ("LEAD_SINK", sink.url()),
            ("WEBHOOK_SINK_SECRET", delivery::signing_secret()),
        ];
        let run = run_function(&store, &key, &env, json!({"detail-type": "Scheduled Event"}), 60_000);
        if starts {
            assert!(!run.responses.is_empty(), "{age}: {}", run.stderr);
        } else {
            // At or below the mapping's maximum record age (1 h) the stream may still be
            // retrying the receipt: the function refuses to start, naming the variable.
            assert!(run.exited.is_some_and(|code| code != 0), "{age}: {:?} {}", run.exited, run.stderr);
            assert!(run.stderr.contains("RECONCILE_OLDER_THAN"), "{age}: {}", run.stderr);
            assert!(run.responses.is_empty(), "{age}: no invocation taken: {:?}", run.responses);
        }
    }
}

#[test]
fn names_in_the_sink_secret_win_over_the_environment() {
    let (store, key) = store_for(tests::policies::Role::StreamWorker);
    let (from_env, from_secret) = (WebhookStandIn::start(), WebhookStandIn::start());
    let settings = json!({"LEAD_SINK": from_secret.url(), "WEBHOOK_SINK_SECRET": delivery::signing_secret()});
    let secret = store.create_secret("stream-worker/sink", &settings.to_string());
    store.allow("function", "sink-secret", "secretsmanager:GetSecretValue", &secret);
    let env = [
        ("SINK_SECRET_ARN", secret),
        ("LEAD_SINK", from_env.url()),
        ("WEBHOOK_SINK_SECRET", delivery::signing_secret()),
    ];
    let invocation = invoke_once(&store, &key, &env, fixture_event(&store, "insert.json"));
    assert_eq!(failed_items(&invocation.responses[0].1), Vec::<&str>::new(), "{}", invocation.stderr);
    assert_eq!(from_secret.state.lock().unwrap().accepted.len(), 1, "the secret's sink took the lead");
    assert!(from_env.state.lock().unwrap().requests.is_empty(), "the environment's sink was never called");
}

#[test]
fn records_from_another_table_s_stream_fail_the_invocation_and_write_nothing() {
    let (store, key) = store_for(tests::policies::Role::StreamWorker);
    let sink = WebhookStandIn::start();
    let env = [("LEAD_SINK", sink.url()), ("WEBHOOK_SINK_SECRET", delivery::signing_secret())];
    let mut event = fixture_event(&store, "insert.json");
    event["Records"][0]["eventSourceARN"] =
        json!("arn:aws:dynamodb:us-east-1:123456789012:table/other-receipts/stream/2026-11-30T00:00:00.000");
    let invocation = invoke_once(&store, &key, &env, event);
    let (path, error) = &invocation.responses[0];
    assert_eq!(path, "/2018-06-01/runtime/invocation/invocation-1/error", "{error}");
    assert!(invocation.stderr.contains("is not from the stream of RECEIPTS_TABLE"), "{}", invocation.stderr);
    assert!(sink.state.lock().unwrap().requests.is_empty(), "no lead written from a foreign stream");
    assert_eq!(store.get(TABLE, "staticforms:form.submitted:sub_1").unwrap()["status"]["S"], "RECEIVED");
}
