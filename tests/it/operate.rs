//! The operator's commands, run as the built binary against ministack (SigV4 checked) with a
//! SQLite sink: `reconcile` settles receipts the stream never delivered, `receipts list | show
//! | redrive` read and repair them, and mistakes get errors that say what to check.

use std::process::{Command, Output, Stdio};

use serde_json::Value;
use shared::lead::Lead;
use shared::profile::Profile;
use shared::receipt::Receipt;
use stream_worker::config::SinkConfig;
use stream_worker::handler::Handler;
use stream_worker::sink::{LeadSink, Sink, SinkError};
use tests::aws::{put_item, receipt, sdk_config};
use tests::delivery;
use tests::delivery::lead;
use tests::ministack::{AccessKey, Ministack};
use tests::senders;
use tests::worker::{self, sqlite_leads};
use tests::{now_millis, TempDir};

const TABLE: &str = "receipts";

pub(crate) struct World {
    pub(crate) store: Ministack,
    /// The operator's key, for the commands.
    pub(crate) key: AccessKey,
    /// The stream worker's, for the poller standing in for the deployed stream function.
    pub(crate) worker_key: AccessKey,
    pub(crate) dir: TempDir,
}

pub(crate) fn world() -> World {
    let store = Ministack::start();
    store.create_receipts_table(TABLE);
    let key = store.operator_access_key("operator", TABLE);
    let worker_key = store.worker_access_key("worker", TABLE);
    World { store, key, worker_key, dir: TempDir::new("operate") }
}

impl World {
    /// Stores a receipt for `id` as the edge would, received `age_ms` ago.
    pub(crate) fn deliver(&self, id: &str, age_ms: u64) {
        let receipt = receipt(&delivery::body(id, delivery::VISITOR_MESSAGE, 1_796_019_713), now_millis() - age_ms);
        put_item(&self.store, TABLE, &receipt.to_item());
    }

    /// Sets the index attribute `shard` (`pendingShard`, `failedShard`) on the receipt of `id`,
    /// as an index entry that lags the table would still list it.
    fn put_in_index(&self, id: &str, shard: &str) {
        let key = delivery::key(id);
        self.store.ok(
            "DynamoDB_20120810.UpdateItem",
            &serde_json::json!({
                "TableName": TABLE,
                "Key": {"pk": {"S": key}},
                "UpdateExpression": "SET #shard = :shard",
                "ExpressionAttributeNames": {"#shard": shard},
                "ExpressionAttributeValues": {":shard": {"S": shared::receipt::pending_shard(&key)}},
            }),
        );
    }

    pub(crate) fn leads_db(&self) -> std::path::PathBuf {
        self.dir.0.join("leads.db")
    }

    /// Runs `stream-worker <args>` with the store, the IAM key and the SQLite sink.
    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = self.command(args);
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().unwrap()
    }

    /// `stream-worker <args>` with the store, the IAM key and the SQLite sink, not yet run.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(tests::stream_worker_binary());
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL_DYNAMODB", self.store.endpoint())
            .env("AWS_ACCESS_KEY_ID", &self.key.id)
            .env("AWS_SECRET_ACCESS_KEY", &self.key.secret)
            .env("RECEIPTS_TABLE", TABLE)
            .env("LEAD_SINK", format!("sqlite://{}", self.leads_db().display()))
            .stdin(Stdio::null());
        command
    }

    /// Runs and parses stdout as JSON; panics (with stderr) unless the command succeeded.
    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let output = self.run(args);
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {:?}", output.stdout))
    }

    pub(crate) fn status(&self, id: &str) -> String {
        self.store.get(TABLE, &delivery::key(id)).unwrap()["status"]["S"].as_str().unwrap().to_owned()
    }

    pub(crate) fn leads(&self) -> Vec<(String, String, i64)> {
        sqlite_leads(&self.leads_db())
    }
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn reconcile_completes_receipts_the_stream_never_delivered_once() {
    let w = world();
    let config = sdk_config(&w.store, &w.worker_key).await;
    // One receipt the stream delivers: the poller (the Lambda handler's path) completes it.
    w.deliver("sub_streamed", 3_600_000);
    let sink = Sink::connect(&SinkConfig::Sqlite { path: w.leads_db().display().to_string() }).await.unwrap();
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink,
        receipts: worker::receipts(&config, TABLE),
    };
    let poller = worker::poller(&config, TABLE, w.dir.0.join("checkpoint.json"));
    worker::drain(&poller, &handler).await;
    assert_eq!(w.status("sub_streamed"), "COMPLETED");
    // Three more whose stream records are never read (as if the event source mapping had given
    // up on them): reconcile reads the pending index, never the stream. One is recent.
    w.deliver("sub_lost_1", 3_600_000);
    w.deliver("sub_lost_2", 1_800_000);
    w.deliver("sub_recent", 1_000);

    let first = w.json(&["reconcile", "--force", "--older-than", "15m", "--json"]);
    assert_eq!(first["overdue"], 2, "{first}");
    assert_eq!(first["completed"], 2, "{first}");
    assert_eq!(first["stillWaiting"], 0, "{first}");
    assert_eq!((w.status("sub_lost_1"), w.status("sub_lost_2")), ("COMPLETED".into(), "COMPLETED".into()));
    assert_eq!(w.status("sub_recent"), "RECEIVED", "younger than the threshold: left to the stream");
    // The receipt the stream completed is not in the index, so not processed again.
    assert_eq!(w.leads(), [lead("sub_lost_1", 1), lead("sub_lost_2", 1), lead("sub_streamed", 1)]);

    // A second run changes nothing.
    let second = w.json(&["reconcile", "--force", "--older-than", "15m", "--json"]);
    assert_eq!((second["overdue"].as_u64(), second["completed"].as_u64()), (Some(0), Some(0)), "{second}");
    assert_eq!(w.leads().len(), 3);

    // The index lags the table in AWS (eventually consistent): a key it still lists after the
    // stream completed the receipt is read again consistently and left alone.
    w.put_in_index("sub_streamed", shared::receipt::PENDING_SHARD);
    let stale = w.json(&["reconcile", "--force", "--older-than", "15m", "--json"]);
    assert_eq!((stale["overdue"].as_u64(), stale["skipped"].as_u64()), (Some(1), Some(1)), "{stale}");
    assert_eq!(stale["completed"], 0, "{stale}");
    assert_eq!(w.status("sub_streamed"), "COMPLETED");
    assert_eq!(w.leads()[2], lead("sub_streamed", 1), "not upserted again");
    // The index catches up.
    w.store.ok(
        "DynamoDB_20120810.UpdateItem",
        &serde_json::json!({
            "TableName": TABLE,
            "Key": {"pk": {"S": delivery::key("sub_streamed")}},
            "UpdateExpression": "REMOVE pendingShard",
        }),
    );

    // A receipt written before the index existed (no pendingShard) is found only by --scan.
    let mut legacy = receipt(&delivery::body("sub_legacy", "x", 1), now_millis() - 7_200_000).to_item();
    legacy.remove(shared::receipt::PENDING_SHARD);
    put_item(&w.store, TABLE, &legacy);
    assert_eq!(w.json(&["reconcile", "--force", "--older-than", "1h", "--json"])["overdue"], 0);
    let scanned = w.json(&["reconcile", "--force", "--older-than", "1h", "--scan", "--json"]);
    assert_eq!((scanned["overdue"].as_u64(), scanned["completed"].as_u64()), (Some(1), Some(1)), "{scanned}");
    assert_eq!(w.status("sub_legacy"), "COMPLETED");
    // A receipt that FAILED before the failed index existed (no failedShard) is neither counted
    // nor listed from the index, until --scan puts it there (once).
    let mut legacy_failed = receipt(&delivery::body("sub_legacy_failed", "x", 1), now_millis() - 7_200_000);
    legacy_failed.status = shared::receipt::ReceiptStatus::Failed;
    let mut item = legacy_failed.to_item();
    item.remove(shared::receipt::FAILED_SHARD);
    put_item(&w.store, TABLE, &item);
    let unseen = w.json(&["reconcile", "--force", "--older-than", "1h", "--json"]);
    assert_eq!((unseen["failedInTable"].as_u64(), unseen["failedIndexed"].as_u64()), (Some(0), Some(0)), "{unseen}");
    assert_eq!(w.json(&["receipts", "list", "--status", "FAILED", "--json"]), serde_json::json!([]));
    let indexed = w.json(&["reconcile", "--force", "--older-than", "1h", "--scan", "--json"]);
    assert_eq!((indexed["failedIndexed"].as_u64(), indexed["failedInTable"].as_u64()), (Some(1), Some(1)), "{indexed}");
    let listed = w.json(&["receipts", "list", "--status", "FAILED", "--json"]);
    assert_eq!(listed[0]["submissionId"], "sub_legacy_failed", "{listed}");
    let again = w.json(&["reconcile", "--force", "--older-than", "1h", "--scan", "--json"]);
    assert_eq!(again["failedIndexed"], 0, "{again}");

    // The text report, for people.
    let text = w.run(&["reconcile", "--force", "--older-than", "15m"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("overdue  0"), "{text:?}");
}

/// The SQLite sink, but refusing the leads of some submissions, as a CRM that rejects a field
/// would.
pub(crate) struct Refusing {
    pub(crate) inner: Sink,
    pub(crate) refuse: &'static [&'static str],
}

impl LeadSink for Refusing {
    async fn upsert(&self, lead: &Lead, key: &str) -> Result<(), SinkError> {
        if self.refuse.contains(&lead.external_id.as_str()) {
            return Err(SinkError::Permanent { reason: "sink_rejected" });
        }
        self.inner.upsert(lead, key).await
    }
}

/// A sink that answers "try again" for one submission while `holding`, and writes the rest.
struct Holding {
    inner: Sink,
    held: &'static str,
    holding: std::sync::atomic::AtomicBool,
}

impl LeadSink for Holding {
    async fn upsert(&self, lead: &Lead, key: &str) -> Result<(), SinkError> {
        if lead.external_id == self.held && self.holding.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(SinkError::Retryable { reason: "sink_unavailable", retry_after: None });
        }
        self.inner.upsert(lead, key).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn receipts_are_listed_shown_and_a_failed_one_is_redriven_to_one_lead() {
    let w = world();
    let config = sdk_config(&w.store, &w.worker_key).await;
    let sqlite = || SinkConfig::Sqlite { path: w.leads_db().display().to_string() };
    w.deliver("sub_bad", 3 * 3_600_000);
    w.deliver("sub_ok", 2 * 3_600_000);
    w.deliver("sub_bad_2", 20_000);
    w.deliver("sub_bad_3", 10_000);
    // The stream's pass: the sink refuses sub_bad, sub_bad_2 and sub_bad_3 (FAILED), writes sub_ok.
    let poller = worker::poller(&config, TABLE, w.dir.0.join("checkpoint.json"));
    let refusing = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: Refusing {
            inner: Sink::connect(&sqlite()).await.unwrap(),
            refuse: &["sub_bad", "sub_bad_2", "sub_bad_3"],
        },
        receipts: worker::receipts(&config, TABLE),
    };
    worker::drain(&poller, &refusing).await;
    assert_eq!((w.status("sub_ok"), w.status("sub_bad")), ("COMPLETED".into(), "FAILED".into()));

    let listed = w.json(&["receipts", "list", "--all", "--json"]);
    let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|r| r["submissionId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["sub_bad", "sub_ok", "sub_bad_2", "sub_bad_3"], "oldest first");
    // Without --all, what needs attention (RECEIVED and FAILED, from their indexes).
    let attention = w.json(&["receipts", "list", "--json"]);
    let ids: Vec<&str> = attention.as_array().unwrap().iter().map(|r| r["submissionId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["sub_bad", "sub_bad_2", "sub_bad_3"], "no COMPLETED one");
    let failed = w.json(&["receipts", "list", "--status", "FAILED", "--json"]);
    assert_eq!(failed.as_array().unwrap().len(), 3);
    // The list reads the index, then each receipt consistently: an index entry that lags the
    // table (a receipt completed since) is left out.
    w.put_in_index("sub_ok", shared::receipt::FAILED_SHARD);
    let listed = w.json(&["receipts", "list", "--status", "FAILED", "--json"]);
    let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|r| r["submissionId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["sub_bad", "sub_bad_2", "sub_bad_3"], "oldest first, the completed one left out");
    assert_eq!(
        w.json(&["receipts", "list", "--status", "FAILED", "--since", "1h", "--json"]).as_array().unwrap().len(),
        2
    );
    w.store.ok(
        "DynamoDB_20120810.UpdateItem",
        &serde_json::json!({"TableName": TABLE, "Key": {"pk": {"S": delivery::key("sub_ok")}}, "UpdateExpression": "REMOVE failedShard"}),
    );
    // Reconcile counts them from their index (the LeadsFailed alarm's gauge), settling nothing.
    let counted = w.json(&["reconcile", "--force", "--older-than", "1m", "--json"]);
    assert_eq!((counted["overdue"].as_u64(), counted["failedInTable"].as_u64()), (Some(0), Some(3)), "{counted}");
    assert_eq!(failed[0]["failureReason"], "sink_rejected");
    assert!(failed[0]["failedAt"].is_string());
    assert_eq!(w.json(&["receipts", "list", "--all", "--since", "1h", "--json"]).as_array().unwrap().len(), 2);
    let table = w.run(&["receipts", "list", "--all"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.starts_with("PROFILE      SUBMISSION ID")
            && table.contains("sink_rejected")
            && table.ends_with("4 receipt(s)\n")
    );

    let shown = w.json(&["receipts", "show", "sub_bad", "--json"]);
    assert_eq!((shown["status"].as_str(), shown["failureReason"].as_str()), (Some("FAILED"), Some("sink_rejected")));
    assert_eq!(shown["leadKey"], "sub_bad");
    let text = String::from_utf8_lossy(&w.run(&["receipts", "show", "sub_bad"]).stdout).into_owned();
    for private in [delivery::VISITOR_EMAIL, delivery::VISITOR_NAME, delivery::VISITOR_MESSAGE] {
        assert!(!text.contains(private) && !shown.to_string().contains(private), "{private} shown: {text}");
    }
    let with_payload = w.json(&["receipts", "show", "sub_bad", "--payload", "--json"]);
    assert_eq!(with_payload["payload"]["data"]["formData"]["email"], delivery::VISITOR_EMAIL);

    // The sink accepts them now. A redrive reopens a FAILED receipt for the stream (the only
    // caller of the sink for it), and waits for its verdict.
    let healthy = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: Sink::connect(&sqlite()).await.unwrap(),
        receipts: worker::receipts(&config, TABLE),
    };
    let reopened = w.json(&["receipts", "redrive", "sub_bad", "--wait", "0s", "--json"]);
    assert_eq!((reopened[0]["was"].as_str(), reopened[0]["outcome"].as_str()), (Some("FAILED"), Some("reopened")));
    assert_eq!(w.status("sub_bad"), "RECEIVED");
    let item = w.store.get(TABLE, &delivery::key("sub_bad")).unwrap();
    assert!(item.get("failureReason").is_none() && item["redrivenAt"]["S"].is_string(), "{item}");
    assert!(item.get(shared::receipt::PENDING_SHARD).is_some(), "back in the pending index: {item}");
    assert!(item.get(shared::receipt::FAILED_SHARD).is_none(), "out of the failed index: {item}");
    // Listed as waiting, from the pending index.
    let waiting = w.json(&["receipts", "list", "--status", "RECEIVED", "--json"]);
    assert_eq!(
        waiting.as_array().map(|l| l.iter().map(|r| r["submissionId"].clone()).collect::<Vec<_>>()),
        Some(vec![serde_json::json!("sub_bad")]),
        "{waiting}"
    );
    // Received 3 hours ago but waiting only since now: reconcile leaves it to the stream.
    let left = w.json(&["reconcile", "--force", "--older-than", "1h", "--json"]);
    assert_eq!(
        (
            left["overdue"].as_u64(),
            left["skipped"].as_u64(),
            left["completed"].as_u64(),
            left["failedInTable"].as_u64()
        ),
        (Some(1), Some(1), Some(0), Some(2))
    );
    assert_eq!(w.status("sub_bad"), "RECEIVED");
    // The stream takes the reopened receipt (its MODIFY record is a waiting receipt).
    worker::drain(&poller, &healthy).await;
    assert_eq!(w.status("sub_bad"), "COMPLETED");
    assert!(w.store.get(TABLE, &delivery::key("sub_bad")).unwrap().get(shared::receipt::PENDING_SHARD).is_none());

    // Every FAILED one (two now), waiting for every one of the stream's verdicts, not the
    // first: the stream settles sub_bad_2 while sub_bad_3 is held back (retried) for a few of
    // the redrive's looks at the table, then lets it through.
    let redrive = {
        let args = ["receipts", "redrive", "--status", "FAILED", "--wait", "120s", "--json"];
        let mut binary = w.command(&args);
        std::thread::spawn(move || binary.output().unwrap())
    };
    let holding = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: Holding {
            inner: Sink::connect(&sqlite()).await.unwrap(),
            held: "sub_bad_3",
            holding: std::sync::atomic::AtomicBool::new(true),
        },
        receipts: worker::receipts(&config, TABLE),
    };
    // Both reopened first (the redrive reopens them oldest first, so sub_bad_2's record comes
    // first in the stream and is not held back behind sub_bad_3's).
    for _ in 0..300 {
        if w.status("sub_bad_2") == "RECEIVED" && w.status("sub_bad_3") == "RECEIVED" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for _ in 0..300 {
        poller.pass(&holding).await.unwrap();
        if w.status("sub_bad_2") == "COMPLETED" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!((w.status("sub_bad_2"), w.status("sub_bad_3")), ("COMPLETED".into(), "RECEIVED".into()));
    // Several of the redrive's looks (one each 0.5 s): one that stopped at the first verdict
    // would have answered by now.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    holding.sink.holding.store(false, std::sync::atomic::Ordering::SeqCst);
    for _ in 0..300 {
        poller.pass(&holding).await.unwrap();
        if w.status("sub_bad_3") == "COMPLETED" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let output = tokio::task::spawn_blocking(move || redrive.join().unwrap()).await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let redriven: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut outcomes: Vec<(&str, &str)> = redriven
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["submissionId"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect();
    outcomes.sort();
    assert_eq!(outcomes, [("sub_bad_2", "completed"), ("sub_bad_3", "completed")], "{redriven}");

    // Again: nothing changes.
    assert_eq!(w.json(&["receipts", "redrive", "sub_bad", "--json"])[0]["outcome"], "already_completed");
    assert_eq!(w.json(&["receipts", "redrive", "--status", "FAILED", "--json"]), Value::Array(vec![]));
    assert_eq!(w.leads(), [lead("sub_bad", 1), lead("sub_bad_2", 1), lead("sub_bad_3", 1), lead("sub_ok", 1)]);

    // A receipt still RECEIVED is settled by the redrive itself once the stream has given up
    // on it (older than its maximum record age), or with --force; younger, it may be in the
    // stream's hands, and two sink calls for one submission must not race.
    w.deliver("sub_young", 60_000);
    let young = w.json(&["receipts", "redrive", "sub_young", "--json"]);
    assert_eq!((young[0]["was"].as_str(), young[0]["outcome"].as_str()), (Some("RECEIVED"), Some("in_stream")));
    assert_eq!(w.status("sub_young"), "RECEIVED");
    let forced = w.json(&["receipts", "redrive", "sub_young", "--force", "--json"]);
    assert_eq!(forced[0]["outcome"], "completed");
    // Past the maximum record age, within its function's timeout and the slack: still young.
    w.deliver("sub_past_the_hour", 3_900_000);
    let past = w.json(&["receipts", "redrive", "sub_past_the_hour", "--json"]);
    assert_eq!(past[0]["outcome"], "in_stream", "{past}");
    assert_eq!(w.json(&["receipts", "redrive", "sub_past_the_hour", "--force", "--json"])[0]["outcome"], "completed");
    w.deliver("sub_stuck", 2 * 3_600_000);
    assert_eq!(w.json(&["receipts", "redrive", "sub_stuck", "--json"])[0]["outcome"], "completed");
    assert_eq!(w.leads().len(), 7);

    // A FAILED receipt past its expiry (TTL has not swept it yet) is not brought back.
    let mut expired = receipt(&delivery::body("sub_expired", "x", 1), now_millis() - 40 * 86_400_000).to_item();
    expired.insert("status".into(), shared::dynamo::AttributeValue::S("FAILED".into()));
    expired.remove(shared::receipt::PENDING_SHARD);
    put_item(&w.store, TABLE, &expired);
    assert_eq!(w.json(&["receipts", "redrive", "sub_expired", "--json"])[0]["outcome"], "expired");
    assert_eq!(w.status("sub_expired"), "FAILED");
    // In the failed index (as a receipt that failed and then expired is), it is not counted:
    // the LeadsFailed alarm ends when the lead can no longer be brought back.
    let mut indexed = receipt(&delivery::body("sub_expired", "x", 1), now_millis() - 40 * 86_400_000);
    indexed.status = shared::receipt::ReceiptStatus::Failed;
    put_item(&w.store, TABLE, &indexed.to_item());
    let items = w.store.get(TABLE, &delivery::key("sub_expired")).unwrap();
    assert!(items["failedShard"]["S"].is_string(), "{items}");
    let counted = w.json(&["reconcile", "--force", "--older-than", "1h", "--json"]);
    assert_eq!(counted["failedInTable"], 0, "{counted}");
}

#[test]
fn mistakes_get_errors_that_say_what_to_check() {
    let w = world();
    w.deliver("sub_1", 1_000);
    let unknown = w.run(&["receipts", "show", "sub_nope"]);
    assert!(!unknown.status.success());
    assert!(stderr(&unknown).contains(r#"no receipt for submission ID "sub_nope""#), "{}", stderr(&unknown));
    let unknown = w.run(&["receipts", "redrive", "sub_nope"]);
    assert!(!unknown.status.success());
    assert!(stderr(&unknown).contains("no receipt for submission ID"), "{}", stderr(&unknown));

    // A misspelt table: the operator's key, scoped to the real one, may not touch it (as in AWS)...
    let wrong_table = w.run_with(&["receipts", "list"], &[("RECEIPTS_TABLE", "reciepts")]);
    assert!(!wrong_table.status.success());
    assert!(stderr(&wrong_table).contains(r#"may not do this on table "reciepts""#), "{}", stderr(&wrong_table));
    // ...and a key allowed on that name finds no such table.
    let misspelt = w.store.operator_access_key("misspelt", "reciepts");
    let wrong_table = w.run_with(
        &["receipts", "list"],
        &[
            ("RECEIPTS_TABLE", "reciepts"),
            ("AWS_ACCESS_KEY_ID", misspelt.id.as_str()),
            ("AWS_SECRET_ACCESS_KEY", misspelt.secret.as_str()),
        ],
    );
    assert!(!wrong_table.status.success());
    assert!(stderr(&wrong_table).contains(r#"table "reciepts""#), "{}", stderr(&wrong_table));
    assert!(stderr(&wrong_table).contains("was not found"), "{}", stderr(&wrong_table));

    let bad_secret = w.run_with(&["receipts", "list"], &[("AWS_SECRET_ACCESS_KEY", "not-the-secret")]);
    assert!(!bad_secret.status.success());
    assert!(stderr(&bad_secret).contains("the AWS credentials may not do this"), "{}", stderr(&bad_secret));
    assert!(!stderr(&bad_secret).contains("not-the-secret"));

    // The edge's identity may only put receipts: it cannot list them.
    let edge = w.store.edge_access_key("edge-only", "receipts");
    let denied = w.run_with(
        &["receipts", "list"],
        &[("AWS_ACCESS_KEY_ID", edge.id.as_str()), ("AWS_SECRET_ACCESS_KEY", edge.secret.as_str())],
    );
    assert!(!denied.status.success());
    assert!(stderr(&denied).contains("may not do this on table \"receipts\" (AccessDenied"), "{}", stderr(&denied));

    let usage = w.run(&["receipts", "show"]);
    assert_eq!(usage.status.code(), Some(2), "a usage error");
    assert!(stderr(&usage).contains("<submissionId>") && stderr(&usage).contains("Usage: stream-worker receipts show"));
    let help = w.run(&["--help"]);
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("reconcile") && help.contains("receipts") && help.contains("<age>:"), "{help}");
    let reconcile = w.run_with(&["reconcile", "--force", "--older-than", "1m"], &[("LEAD_SINK", "")]);
    assert!(!reconcile.status.success());
    assert!(stderr(&reconcile).contains("LEAD_SINK"), "reconcile needs the sink: {}", stderr(&reconcile));

    // A table without the pending index (made by hand, not from the template).
    w.store.ok(
        "DynamoDB_20120810.CreateTable",
        &serde_json::json!({
            "TableName": "plain",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
    let plain = w.store.operator_access_key("plain", "plain");
    let on_plain = [
        ("RECEIPTS_TABLE", "plain"),
        ("AWS_ACCESS_KEY_ID", plain.id.as_str()),
        ("AWS_SECRET_ACCESS_KEY", plain.secret.as_str()),
    ];
    let no_index = w.run_with(&["reconcile", "--force", "--older-than", "1m"], &on_plain);
    assert!(!no_index.status.success());
    assert!(stderr(&no_index).contains(r#"table "plain" has no "pending" index"#), "{}", stderr(&no_index));
    assert!(w.run_with(&["reconcile", "--force", "--older-than", "1m", "--scan"], &on_plain).status.success());
    let no_failed_index = w.run_with(&["receipts", "list", "--status", "FAILED"], &on_plain);
    assert!(!no_failed_index.status.success());
    assert!(
        stderr(&no_failed_index).contains(r#"table "plain" has no "failed" index (create or update the table"#),
        "{}",
        stderr(&no_failed_index)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn receipts_of_every_profile_are_listed_shown_reconciled_and_redriven_by_their_profile() {
    let w = world();
    // A Tally response and a Typeform one, stored 3 hours ago, never delivered by the stream.
    let mut keys = Vec::new();
    for profile in [Profile::Tally, Profile::Typeform] {
        let body = senders::body(profile, "op-7", "from the operator test");
        let envelope = profile.read(&shared::headers::Headers::default(), &body).unwrap();
        let key = profile.key(&envelope.submission_id);
        let receipt = Receipt::new(&envelope, key.clone(), "req-op", now_millis() - 3 * 3_600_000, 30);
        put_item(&w.store, TABLE, &receipt.to_item());
        keys.push(key);
    }
    let listed = w.json(&["receipts", "list", "--json"]);
    let mut profiles: Vec<&str> = listed.as_array().unwrap().iter().map(|r| r["profile"].as_str().unwrap()).collect();
    profiles.sort();
    assert_eq!(profiles, ["tally", "typeform"]);
    let table = w.run(&["receipts", "list"]);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(table.lines().any(|l| l.starts_with("tally ") && l.contains(" op-7 ")), "{table}");

    let shown = w.json(&["receipts", "show", "op-7", "--profile", "tally", "--json"]);
    assert_eq!((shown["profile"].as_str(), shown["leadKey"].as_str()), (Some("tally"), Some("tally:op-7")));
    // Without --profile the ID is a Static Forms one, which does not exist.
    let missing = w.run(&["receipts", "show", "op-7"]);
    assert!(!missing.status.success() && stderr(&missing).contains("no receipt"), "{}", stderr(&missing));

    let settled = w.json(&["reconcile", "--force", "--older-than", "1h", "--json"]);
    assert_eq!(settled["completed"], 2, "{settled}");
    let leads: Vec<String> = w.leads().into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(leads, ["tally:op-7", "typeform:lT4Z3j:op-7"]);
    // A redrive names the profile too, and finds the receipt finished.
    let again = w.json(&["receipts", "redrive", "lT4Z3j:op-7", "--profile", "typeform", "--json"]);
    assert_eq!(
        (again[0]["profile"].as_str(), again[0]["outcome"].as_str()),
        (Some("typeform"), Some("already_completed"))
    );
    assert!(keys.iter().all(|k| w.store.get(TABLE, k).unwrap()["status"]["S"] == "COMPLETED"));
}
