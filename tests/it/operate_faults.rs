//! The operator's commands when the store or the sink does not cooperate, run as the built
//! binary against ministack: a replica behind the table (reads by key must be consistent; the
//! indexes and `receipts list --all`'s scan are eventually consistent, and every key they give is read
//! again by key before anything is done), two redrives of one receipt at the same moment, a
//! redrive whose read is older than the latest failure, and reconcile and redrive against a
//! sink that refuses a lead or cannot take one now.

use std::process::{Output, Stdio};

use serde_json::Value;
use shared::dynamo::AttributeValue;
use shared::secret::SigningSecret;
use stream_worker::config::SinkConfig;
use stream_worker::handler::Handler;
use stream_worker::inventory::Reopen;
use stream_worker::sink::Sink;
use tests::aws::{put_item, receipt, sdk_config_at};
use tests::delivery;
use tests::now_millis;
use tests::proxy::{FaultProxy, Mode};
use tests::stub_http::WebhookStandIn;

use crate::operate::{stderr, world, World};

const TABLE: &str = "receipts";
/// When [`failed`]'s receipts failed.
const FAILED_AT: &str = "2026-11-30T10:00:00.000Z";

/// Stores `id`'s receipt as the stream left it after the sink refused its lead: `FAILED`,
/// received `age_ms` ago, out of the pending index.
fn failed(w: &World, id: &str, age_ms: u64) {
    let mut item = receipt(&delivery::body(id, delivery::VISITOR_MESSAGE, 1), now_millis() - age_ms).to_item();
    item.insert("status".into(), AttributeValue::S("FAILED".into()));
    item.insert("failureReason".into(), AttributeValue::S("sink_rejected".into()));
    item.insert("failedAt".into(), AttributeValue::S(FAILED_AT.into()));
    item.remove(shared::receipt::PENDING_SHARD);
    put_item(&w.store, TABLE, &item);
}

/// Runs `stream-worker <args>` with the store reached through `proxy`.
fn through(w: &World, proxy: &FaultProxy, args: &[&str]) -> Output {
    w.command(args).env("AWS_ENDPOINT_URL_DYNAMODB", proxy.endpoint()).output().unwrap()
}

fn json_of(output: &Output) -> Value {
    assert!(output.status.success(), "{}", stderr(output));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_by_key_are_consistent_so_reconcile_show_and_redrive_see_the_table_not_a_replica() {
    let w = world();
    let proxy = FaultProxy::start(w.store.port);
    proxy.set(Mode::StaleReads);
    w.deliver("sub_overdue", 2 * 3_600_000);
    failed(&w, "sub_failed", 2 * 3_600_000);

    // The stand-in bites: an eventually consistent read through it does not see the receipt,
    // a consistent one does.
    let client = aws_sdk_dynamodb::Client::new(&sdk_config_at(&proxy.endpoint(), &w.key).await);
    let key = aws_sdk_dynamodb::types::AttributeValue::S(delivery::key("sub_failed"));
    let read =
        |consistent| client.get_item().table_name(TABLE).key("pk", key.clone()).consistent_read(consistent).send();
    assert!(read(false).await.unwrap().item.is_none(), "an eventually consistent read sees the replica");
    assert!(read(true).await.unwrap().item.is_some(), "a consistent read sees the table");

    // Reconcile finds the receipt through the index, then reads it by key before acting.
    let settled = json_of(&through(&w, &proxy, &["reconcile", "--force", "--older-than", "1h", "--json"]));
    assert_eq!((settled["overdue"].as_u64(), settled["completed"].as_u64()), (Some(1), Some(1)), "{settled}");
    assert_eq!(w.status("sub_overdue"), "COMPLETED");
    // `receipts show` and `redrive` read by key too.
    let shown = json_of(&through(&w, &proxy, &["receipts", "show", "sub_overdue", "--json"]));
    assert_eq!(shown["status"], "COMPLETED", "{shown}");
    let redriven = json_of(&through(&w, &proxy, &["receipts", "redrive", "sub_failed", "--wait", "0s", "--json"]));
    assert_eq!((redriven[0]["was"].as_str(), redriven[0]["outcome"].as_str()), (Some("FAILED"), Some("reopened")));
    assert_eq!(w.status("sub_failed"), "RECEIVED");
}

#[test]
fn two_redrives_of_one_failed_receipt_at_once_reopen_it_once() {
    let w = world();
    failed(&w, "sub_twice", 3_600_000);
    // Both commands read the FAILED receipt; their reopening updates are held until both have
    // come, then reach the store together.
    let proxy = FaultProxy::start(w.store.port);
    proxy.set(Mode::Together("DynamoDB_20120810.UpdateItem".into(), 2));
    let start = || {
        let mut command = w.command(&["receipts", "redrive", "sub_twice", "--wait", "0s", "--json"]);
        command.env("AWS_ENDPOINT_URL_DYNAMODB", proxy.endpoint()).stdout(Stdio::piped()).stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let (first, second) = (start(), start());
    let mut outcomes: Vec<String> = [first, second]
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            let result = json_of(&output);
            assert_eq!(result[0]["was"], "FAILED", "both read it FAILED: {result}");
            result[0]["outcome"].as_str().unwrap().to_owned()
        })
        .collect();
    outcomes.sort();
    assert_eq!(proxy.gathered(), 2, "both reopening updates were held, then sent together");
    assert_eq!(outcomes, ["changed_meanwhile", "reopened"]);
    let item = w.store.get(TABLE, &delivery::key("sub_twice")).unwrap();
    assert_eq!(item["status"]["S"], "RECEIVED", "{item}");
}

#[test]
fn reconcile_reports_a_refused_lead_failed_and_an_unavailable_sink_retried_later() {
    let w = world();
    let sink = WebhookStandIn::start();
    for id in ["sub_refused", "sub_unavailable", "sub_accepted"] {
        w.deliver(id, 2 * 3_600_000);
    }
    sink.refuse(&delivery::key("sub_refused"), 422);
    sink.refuse(&delivery::key("sub_unavailable"), 503);
    let secret = delivery::signing_secret();
    let output = w
        .command(&["reconcile", "--force", "--older-than", "1h", "--json"])
        .env("LEAD_SINK", sink.url())
        .env("WEBHOOK_SINK_SECRET", &secret)
        .output()
        .unwrap();
    let report = json_of(&output);
    let counts: Vec<Option<u64>> = ["overdue", "completed", "failed", "retryLater", "notReached", "stillWaiting"]
        .iter()
        .map(|name| report[name].as_u64())
        .collect();
    assert_eq!(counts, [Some(3), Some(1), Some(1), Some(1), Some(0), Some(1)], "{report}");
    let status = |id| w.status(id);
    assert_eq!(
        [status("sub_refused"), status("sub_unavailable"), status("sub_accepted")],
        ["FAILED", "RECEIVED", "COMPLETED"]
    );
    // In the pending index exactly while RECEIVED.
    for (id, waiting) in [("sub_unavailable", true), ("sub_refused", false), ("sub_accepted", false)] {
        let item = w.store.get(TABLE, &delivery::key(id)).unwrap();
        assert_eq!(item.get(shared::receipt::PENDING_SHARD).is_some(), waiting, "{id}: {item}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_receipt_redriven_and_failed_again_since_it_was_read_is_not_reopened_by_the_stale_read() {
    let w = world();
    failed(&w, "sub_again", 3_600_000);
    let item = w.store.get(TABLE, &delivery::key("sub_again")).unwrap();
    let received_at = item["receivedAt"]["S"].as_str().unwrap().to_owned();
    let config = tests::aws::sdk_config(&w.store, &w.key).await;
    let receipts = tests::worker::receipts(&config, TABLE);
    let key = delivery::key("sub_again");
    let now = now_millis();
    let at = shared::time::iso8601_millis(now);
    // A redrive that read the receipt when it had failed before (or read it from a version
    // without failedAt): the receipt has been reopened and has failed again since.
    for seen in [Some("2026-11-30T09:00:00.000Z"), None] {
        let outcome = receipts.reopen(&key, &received_at, seen, &at, now / 1000).await.unwrap();
        assert_eq!(outcome, Reopen::Changed, "{seen:?}");
        assert_eq!(w.status("sub_again"), "FAILED");
    }
    // The failure it read is the one stored: reopened.
    let outcome = receipts.reopen(&key, &received_at, Some(FAILED_AT), &at, now / 1000).await.unwrap();
    assert_eq!(outcome, Reopen::Done);
    assert_eq!(w.status("sub_again"), "RECEIVED");
}

#[tokio::test(flavor = "multi_thread")]
async fn redrive_says_when_the_sink_refuses_again_cannot_take_it_now_or_the_receipt_is_gone() {
    let w = world();
    let sink = WebhookStandIn::start();
    let secret = delivery::signing_secret();
    failed(&w, "sub_refused_again", 2 * 3_600_000);
    sink.refuse(&delivery::key("sub_refused_again"), 422);
    // The stream, as the deployed function would take it, into the same sink.
    let config = tests::aws::sdk_config(&w.store, &w.worker_key).await;
    let poller = tests::worker::poller(&config, TABLE, w.dir.0.join("checkpoint.json"));
    let webhook = SinkConfig::Webhook { url: sink.url(), secret: SigningSecret::parse(&secret).unwrap() };
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: Sink::connect(&webhook).await.unwrap(),
        receipts: tests::worker::receipts(&config, TABLE),
    };
    tests::worker::drain(&poller, &handler).await;

    // Reopened, then refused again by the sink while the redrive waits: it says so.
    let redrive = {
        let mut command = w.command(&["receipts", "redrive", "sub_refused_again", "--wait", "120s", "--json"]);
        std::thread::spawn(move || command.output().unwrap())
    };
    for _ in 0..300 {
        poller.pass(&handler).await.unwrap();
        if redrive.is_finished() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let output = tokio::task::spawn_blocking(move || redrive.join().unwrap()).await.unwrap();
    let result = json_of(&output);
    assert_eq!((result[0]["outcome"].as_str(), result[0]["reason"].as_str()), (Some("failed"), Some("sink_rejected")));
    assert_eq!(sink.attempts(&delivery::key("sub_refused_again")), 1, "the stream's one call");

    // A receipt the stream gave up on, settled by the redrive itself while the sink cannot
    // take it: retry_later, and it stays waiting.
    w.deliver("sub_stuck", 2 * 3_600_000);
    sink.refuse(&delivery::key("sub_stuck"), 503);
    let output = w
        .command(&["receipts", "redrive", "sub_stuck", "--json"])
        .env("LEAD_SINK", sink.url())
        .env("WEBHOOK_SINK_SECRET", &secret)
        .output()
        .unwrap();
    let result = json_of(&output);
    assert_eq!(result[0]["outcome"], "retry_later", "{result}");
    assert_eq!(w.status("sub_stuck"), "RECEIVED");

    // Listed as FAILED, gone when the redrive reads it (TTL swept it in between):
    // receipt_gone, not an error. The list's own reads (of the listed attributes: a
    // ProjectionExpression follows ConsistentRead in the SDK's body) pass; the redrive's read of
    // the whole item (its body ends with ConsistentRead) is answered as an item not there.
    let proxy = FaultProxy::start(w.store.port);
    proxy.set(Mode::AnswerWhen(r#""ConsistentRead":true}"#.into(), 200, "{}".into()));
    let result = json_of(&through(&w, &proxy, &["receipts", "redrive", "--status", "FAILED", "--json"]));
    assert_eq!(
        (result[0]["submissionId"].as_str(), result[0]["outcome"].as_str()),
        (Some("sub_refused_again"), Some("receipt_gone"))
    );
}
