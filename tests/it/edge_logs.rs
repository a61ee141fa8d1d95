//! The edge's log lines reach CloudWatch Logs through its Tail Worker (tail/index.mjs), both in
//! workerd, signing with a key at `template.yaml`'s `EdgeLogsUser` policy against the store's
//! CloudWatch Logs: each line arrives as the edge wrote it (EMF block included, so CloudWatch
//! extracts the metrics), an invocation that throws gets a metric line without its message, and
//! a key without the policy ships nothing.

use serde_json::{json, Value};
use tests::edge::{Edge, Producer};
use tests::ministack::{AccessKey, Ministack};
use tests::policies::edge_logs_policy;
use tests::process::wait_until;
use tests::stack::{self, edge_bindings, TABLE};

use crate::edge_receiver::{body, deliver, headers};

const GROUP: &str = "webhooks-EdgeLogGroup-1A2B3C";
const STREAM: &str = "edge";

/// The store with the receipts table and the edge's log group and stream, as the stack has them.
fn store() -> Ministack {
    let store = Ministack::start();
    store.create_receipts_table(TABLE);
    store.ok("Logs_20140328.CreateLogGroup", &json!({"logGroupName": GROUP}));
    store.ok("Logs_20140328.CreateLogStream", &json!({"logGroupName": GROUP, "logStreamName": STREAM}));
    store
}

fn tail_bindings(store: &Ministack, key: &AccessKey) -> Vec<(&'static str, String)> {
    stack::tail_bindings(&store.endpoint(), key, GROUP, STREAM)
}

/// The messages in the edge's log stream, oldest first (`GetLogEvents`).
fn shipped(store: &Ministack) -> Vec<String> {
    let answer = store.ok(
        "Logs_20140328.GetLogEvents",
        &json!({"logGroupName": GROUP, "logStreamName": STREAM, "startFromHead": true}),
    );
    answer["events"]
        .as_array()
        .expect("GetLogEvents lists events")
        .iter()
        .map(|e| e["message"].as_str().expect("a message").to_owned())
        .collect()
}

fn shipped_at_least(store: &Ministack, n: usize) -> Vec<String> {
    wait_until("the edge's lines in its log group", 20, || shipped(store).len() >= n);
    shipped(store)
}

/// The metric values an EMF line declares, as CloudWatch extracts them: (dimension set as
/// `name=value` pairs, metric name, value) for each set and metric of each directive.
fn extracted(line: &str) -> Vec<(Vec<String>, String, Value)> {
    let record: Value = serde_json::from_str(line).expect("an EMF line is JSON");
    let mut out = Vec::new();
    for directive in record["_aws"]["CloudWatchMetrics"].as_array().expect("an EMF block") {
        assert_eq!(directive["Namespace"], "WebhookReceiver", "{line}");
        for set in directive["Dimensions"].as_array().expect("dimension sets") {
            let pairs: Vec<String> = set
                .as_array()
                .expect("a dimension set")
                .iter()
                .map(|name| {
                    let name = name.as_str().expect("a dimension name");
                    format!("{name}={}", record[name].as_str().expect("each dimension a string member"))
                })
                .collect();
            for metric in directive["Metrics"].as_array().expect("metrics") {
                let name = metric["Name"].as_str().expect("a metric name").to_owned();
                out.push((pairs.clone(), name.clone(), record[&name].clone()));
            }
        }
    }
    out
}

#[test]
fn the_edges_lines_arrive_in_its_log_group_as_it_wrote_them() {
    let store = store();
    let edge_key = store.edge_access_key("edge", TABLE);
    let logs_key = store.access_key_with("edge-logs", &edge_logs_policy(GROUP, STREAM));
    let edge = Edge::start_tailed(
        Producer::Edge,
        &edge_bindings(&store.endpoint(), &edge_key, &[]),
        &tail_bindings(&store, &logs_key),
    );

    let payload = body("sub_tail_1");
    assert_eq!(deliver(&edge, &headers("sub_tail_1"), &payload).status, 202);
    assert_eq!(deliver(&edge, &headers("sub_tail_1"), &payload).status, 200, "the retry is a duplicate");
    assert_eq!(edge.deliver(&[("Content-Type", "application/json")], &payload).status, 401);
    let written: Vec<String> =
        edge.logs_exactly(3).iter().map(|l| l.split_once(' ').expect("<level> <line>").1.to_owned()).collect();

    // The three and the sentinel's /healthz line, each exactly as the edge wrote it. Each
    // request's Tail Worker invocation makes its own call, and two may arrive in either order.
    let mut lines = shipped_at_least(&store, 4);
    assert_eq!(lines.len(), 4, "{lines:#?}");
    let healthz = lines.iter().position(|l| l.contains(r#""outcome":"ok""#)).expect("the sentinel's line");
    lines.remove(healthz);
    let (mut lines, mut written) = (lines, written);
    lines.sort();
    written.sort();
    assert_eq!(lines, written, "shipped verbatim");
    let metrics: Vec<_> = lines.iter().flat_map(|l| extracted(l)).filter(|(_, name, _)| name == "Deliveries").collect();
    let by = |dimension: &str| -> Vec<String> {
        let mut found: Vec<String> = metrics
            .iter()
            .filter(|(set, _, _)| set[0].starts_with(dimension))
            .map(|(set, _, _)| set[0].clone())
            .collect();
        found.sort();
        found
    };
    assert_eq!(by("outcome="), ["outcome=duplicate", "outcome=stored", "outcome=unauthenticated"]);
    assert_eq!(by("answer="), ["answer=2xx", "answer=2xx", "answer=4xx"]);
    assert!(metrics.iter().all(|(_, _, value)| *value == json!(1)), "{metrics:?}");
}

#[test]
fn an_invocation_that_throws_is_a_metric_line_without_its_message() {
    let store = store();
    let logs_key = store.access_key_with("edge-logs", &edge_logs_policy(GROUP, STREAM));
    let worker = Edge::start_tailed(Producer::Throws, &[], &tail_bindings(&store, &logs_key));
    assert_eq!(worker.request("POST", "/webhooks/staticforms", &[], b"{}").status, 500);

    let lines = shipped_at_least(&store, 1);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let record: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(record["outcome"], "exception", "{record}");
    assert_eq!(record["exception"], "Error", "{record}");
    assert_eq!(record["answer"], "5xx", "{record}");
    // The exception's message (here with an e-mail address) never leaves the Worker.
    assert!(!lines[0].contains("ada@example.com") && !lines[0].contains("defect"), "{}", lines[0]);
    let metrics = extracted(&lines[0]);
    assert_eq!(
        metrics,
        [
            (vec!["outcome=exception".to_owned()], "Deliveries".to_owned(), json!(1)),
            (vec!["answer=5xx".to_owned()], "Deliveries".to_owned(), json!(1)),
        ]
    );
}

#[test]
fn a_key_without_the_logs_policy_ships_nothing_and_says_so() {
    let store = store();
    let edge_key = store.edge_access_key("edge", TABLE);
    // The edge's own key: PutItem on the table, no CloudWatch Logs action.
    let edge = Edge::start_tailed(
        Producer::Edge,
        &edge_bindings(&store.endpoint(), &edge_key, &[]),
        &tail_bindings(&store, &edge_key),
    );
    assert_eq!(deliver(&edge, &headers("sub_tail_2"), &body("sub_tail_2")).status, 202);
    // The Tail Worker's own line, by status and count only.
    let lines = edge.logs(2);
    let refused = lines.iter().find(|l| l.contains("edge-tail")).expect("the Tail Worker says it could not ship");
    assert!(refused.contains(r#""outcome":"not_shipped""#) && refused.contains(r#""status":4"#), "{refused}");
    assert!(shipped(&store).is_empty());
}
