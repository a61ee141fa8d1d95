//! The production topology on a local AWS: `template.yaml` deployed as it is by
//! `scripts/deploy-aws.sh` to ministack (CloudFormation with the SAM transform, the stream
//! mapping with its filter and partial batch responses, the functions run as local processes
//! under their roles' policies, the sink's settings in Secrets Manager), the built Worker
//! signing with a key of the stack's `EdgeUser`, and leads written by the deployed function.
//! Exactly-once is counted where it happens: in the sink's raw requests. Then what production
//! leans on when the sink says no: the deployed reconcile function, invoked under its role,
//! settles a receipt the stream left waiting; an operator's key redrives a FAILED one through
//! the deployed mapping; and the functions' EMF lines carry every metric the alarms watch, and
//! with the Worker's, every metric the deployed dashboard shows.
//!
//! What the local AWS cannot show (docs/deploying.md): ministack 1.5.33's
//! DynamoDB stream mappings ignore `batchItemFailures` and `BisectBatchOnFunctionError` (a
//! batch the function answers is passed, a batch it fails is retried whole until
//! `MaximumRecordAgeInSeconds`), so a record the sink refused is not retried by the mapping here
//! as AWS retries it; the handler's partial batch responses are proven against the Streams
//! stand-in (`stream_worker.rs`), and the failed-batches queue (reached after an hour) only by
//! the template test.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::json;
use shared::profile::Profile;
use tests::delivery;
use tests::edge::{Edge, Producer};
use tests::ministack::Ministack;
use tests::senders;
use tests::stack::{self, TABLE};
use tests::stub_http::WebhookStandIn;
use tests::template::{alarm_metrics, dashboard_metrics, AlarmMetric, WidgetMetric};

/// The stack deployed with a webhook sink, its lead mapping in the sink's secret (each
/// profile's email as `reply_to`, and its name as the constant `source`), and the built Worker
/// signing with the `EdgeUser`'s key.
struct Deployed {
    aws: Ministack,
    sink: WebhookStandIn,
    edge: Edge,
}

fn deployed() -> Deployed {
    let sink = WebhookStandIn::start();
    let mapping: String = Profile::ALL
        .iter()
        .map(|p| format!("[{0}.fields]\nemail = \"reply_to\"\n[{0}.constants]\nsource = \"{0}\"\n", p.name()))
        .collect();
    let settings = json!({
        "LEAD_SINK": sink.url(), "WEBHOOK_SINK_SECRET": delivery::signing_secret(), "LEAD_MAPPING": mapping
    });
    let stack::Deployed { aws, edge, .. } = stack::Deployed::start(&settings, false, &senders::bindings());
    Deployed { aws, sink, edge }
}

impl Deployed {
    /// Sends a submission of `profile` once; the edge's status.
    fn send(&self, profile: Profile, id: &str) -> u16 {
        let body = senders::body(profile, id, "through the deployed stack");
        let headers = senders::headers(profile, id, &body, None);
        let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        self.edge.request("POST", profile.path(), &refs, &body).status
    }

    fn status(&self, key: &str) -> String {
        let item = self.aws.get(TABLE, key).unwrap_or_else(|| panic!("no receipt {key}"));
        item["status"]["S"].as_str().unwrap_or_default().to_owned()
    }

    /// The sink's accepted requests for the submission `key`.
    fn accepted(&self, key: &str) -> usize {
        let state = self.sink.state.lock().unwrap();
        state.accepted.iter().filter(|r| r.header("idempotency-key") == Some(key)).count()
    }
}

#[test]
fn every_profile_s_deliveries_become_one_lead_each_through_the_deployed_stack() {
    let Deployed { aws, sink, edge } = deployed();

    // Two submissions per profile, each sent, retried, and sent three more times at once.
    let mut statuses: BTreeMap<String, (Profile, Vec<u16>)> = BTreeMap::new();
    for profile in Profile::ALL {
        for n in 0..2 {
            let id = format!("dep{n}-{}", profile.name());
            let body = senders::body(profile, &id, "through the deployed stack");
            let headers = senders::headers(profile, &id, &body, None);
            let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let (receipt_key, _) = senders::keys(profile, &id);
            let mut seen = vec![edge.request("POST", profile.path(), &refs, &body).status];
            seen.push(edge.request("POST", profile.path(), &refs, &body).status);
            let raced: Vec<u16> = std::thread::scope(|scope| {
                let copies: Vec<_> =
                    (0..3).map(|_| scope.spawn(|| edge.request("POST", profile.path(), &refs, &body).status)).collect();
                copies.into_iter().map(|c| c.join().unwrap()).collect()
            });
            seen.extend(raced);
            statuses.insert(receipt_key, (profile, seen));
        }
    }
    for (key, (profile, seen)) in &statuses {
        // The first is the 2xx its sender counts as success (202; 200 for Webflow), the rest 200.
        assert_eq!(seen[0], profile.acknowledgement().status(), "{key}: {seen:?}");
        assert!(seen[1..].iter().all(|s| *s == 200), "{key}: {seen:?}");
    }

    // The deployed function, invoked by the mapping, writes each lead and marks each receipt.
    let completed =
        || aws.scan(TABLE).iter().filter(|item| item["status"]["S"] == "COMPLETED").count() == statuses.len();
    tests::wait_until("every receipt COMPLETED by the deployed function", 120, completed);
    // Counted at the sink: per receipt, exactly one accepted request, with one webhook-id.
    let state = sink.state.lock().unwrap();
    let mut by_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for request in &state.accepted {
        let key = request.header("idempotency-key").unwrap_or_default().to_owned();
        by_key.entry(key).or_default().push(request.header("webhook-id").unwrap_or_default().to_owned());
    }
    let keys: BTreeSet<&String> = statuses.keys().collect();
    assert_eq!(by_key.keys().collect::<BTreeSet<_>>(), keys, "a lead for each submission and nothing else");
    for (key, ids) in &by_key {
        assert_eq!(ids.len(), 1, "{key}: one request, not {ids:?}");
    }
    // The mapping in the secret reached the deployed function: each lead's `fields`.
    for request in &state.accepted {
        let key = request.header("idempotency-key").unwrap_or_default();
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        let (profile, _) = &statuses[key];
        let expected = json!({"reply_to": body["email"], "source": profile.name()});
        assert_eq!(body["fields"], expected, "{key}");
        assert!(body["email"].as_str().is_some_and(|e| e.contains('@')), "{key}: {body}");
    }
}

#[test]
fn what_the_sink_refused_is_settled_by_the_deployed_reconcile_and_an_operator_s_redrive() {
    let stack = deployed();
    let profile = Profile::StaticForms;
    let (late, _) = senders::keys(profile, "dep-late");
    let (refused, _) = senders::keys(profile, "dep-refused");

    // The sink is down for one submission: the deployed function tries it, the receipt waits.
    stack.sink.refuse(&late, 503);
    assert_eq!(stack.send(profile, "dep-late"), 202);
    tests::wait_until("the deployed function tried the late lead", 60, || stack.sink.attempts(&late) >= 1);
    // The sink refuses another one for good (a 400): the function marks it FAILED.
    stack.sink.refuse(&refused, 400);
    assert_eq!(stack.send(profile, "dep-refused"), 202);
    tests::wait_until("the refused receipt FAILED", 60, || stack.status(&refused) == "FAILED");
    assert_eq!(stack.status(&late), "RECEIVED");

    // Three hours pass for the late receipt (its receivedAt moved back, as the clock would):
    // past ReconcileOlderThan (2 h), when the stream has given up on it. Here the stream gave
    // up at once: ministack passes a batch the function answered, batchItemFailures and all
    // (see the module's doc), where AWS would retry the record for its hour. Should a later
    // ministack retry it, the mapping and reconcile would both write the late lead once the
    // sink accepts it, and `accepted(&late) == 1` below would say so.
    let three_hours_ago = shared::time::iso8601_millis(tests::now_millis() - 3 * 3600 * 1000);
    stack.aws.ok(
        "DynamoDB_20120810.UpdateItem",
        &json!({"TableName": TABLE, "Key": {"pk": {"S": late}}, "UpdateExpression": "SET receivedAt = :t",
                "ExpressionAttributeValues": {":t": {"S": three_hours_ago}}}),
    );
    // That MODIFY is a waiting receipt too: the function tries it once more, still refused.
    tests::wait_until("the function saw the late receipt again", 60, || stack.sink.attempts(&late) >= 2);
    stack.sink.accept(&late);
    stack.sink.accept(&refused);

    // The schedule's invocation of the deployed reconcile, under its role: it reads the pending
    // index, the sink's settings from the secret, writes the lead and marks the receipt.
    let reconcile = stack.aws.function_named("ReconcileFunction");
    // EventBridge's Scheduled Event, as documented (the schedule invokes asynchronously; this
    // call waits for the report the function returns, which a scheduled run discards).
    let event = json!({
        "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "Scheduled Event",
        "source": "aws.events", "account": "000000000000", "time": "2026-12-01T00:00:00Z", "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:000000000000:rule/webhooks-Every15Minutes"], "detail": {}
    });
    let answer = stack.aws.invoke(&reconcile, &event);
    assert_eq!((answer.status, answer.header("x-amz-function-error")), (200, None), "{}", answer.body);
    let report = answer.json();
    assert_eq!((report["overdue"].as_u64(), report["completed"].as_u64()), (Some(1), Some(1)), "{report}");
    assert_eq!(report["failedInTable"], 1, "the refused receipt, counted from the failed index: {report}");
    assert_eq!(stack.status(&late), "COMPLETED");
    assert_eq!(stack.accepted(&late), 1, "one lead for the late submission");

    // An operator redrives the FAILED one with their own key (its policy: read and update
    // receipts, nothing more); the deployed mapping takes the reopened receipt to the sink.
    let operator = stack.aws.operator_access_key("operator", TABLE);
    let output = Command::new(tests::stream_worker_binary())
        .args(["receipts", "redrive", "dep-refused", "--wait", "60s", "--json"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL_DYNAMODB", stack.aws.endpoint())
        .env("AWS_ACCESS_KEY_ID", &operator.id)
        .env("AWS_SECRET_ACCESS_KEY", &operator.secret)
        .env("RECEIPTS_TABLE", TABLE)
        .env("LEAD_SINK", stack.sink.url())
        .env("WEBHOOK_SINK_SECRET", delivery::signing_secret())
        .output()
        .expect("stream-worker runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let redriven: serde_json::Value = serde_json::from_str(&stdout).expect("--json");
    assert_eq!((redriven[0]["was"].as_str(), redriven[0]["outcome"].as_str()), (Some("FAILED"), Some("completed")));
    assert_eq!(stack.status(&refused), "COMPLETED");
    assert_eq!(stack.accepted(&refused), 1, "one lead for the redriven submission");

    // The edge's answers the Edge401 and Edge5xx alarms count, as its Tail Worker ships them
    // into the stack's EdgeLogGroup with a key of the stack's EdgeLogsUser: a delivery without
    // credentials, and one to an edge whose store cannot be reached (a second Worker, tailed
    // the same way).
    let unauthenticated = stack.edge.request("POST", profile.path(), &[("Content-Type", "application/json")], b"{}");
    assert_eq!(unauthenticated.status, 401);
    let outputs = stack.aws.stack_outputs("webhooks");
    let (group, log_stream) = (&outputs["EdgeLogGroupName"], &outputs["EdgeLogStreamName"]);
    // A store that is down, seen from the Worker: the proxy holds its port and closes each
    // connection (a bare free port could be taken by another process meanwhile).
    let down = tests::proxy::FaultProxy::start(tests::free_port());
    down.set(tests::proxy::Mode::Refuse);
    let cut_off = Edge::start_tailed(
        Producer::Edge,
        &stack::edge_bindings(&down.endpoint(), &stack.aws.access_key_of_user_named("EdgeUser"), &[]),
        &stack::tail_bindings(
            &stack.aws.endpoint(),
            &stack.aws.access_key_of_user_named("EdgeLogsUser"),
            group,
            log_stream,
        ),
    );
    let body = delivery::body("dep-cut-off", delivery::VISITOR_MESSAGE, delivery::now_secs());
    let bearer = format!("Bearer {}", delivery::BEARER);
    let key = delivery::key("dep-cut-off");
    let headers = [("Content-Type", "application/json"), ("Authorization", bearer.as_str()), ("Idempotency-Key", &key)];
    assert_eq!(cut_off.deliver(&headers, &body).status, 503);
    let edge_lines = || -> Vec<String> {
        stack.aws.log_lines().into_iter().filter(|(g, _)| g == group).map(|(_, line)| line).collect()
    };
    tests::wait_until("the edge's 401 and 5xx lines in its log group", 30, || {
        let lines = edge_lines();
        lines.iter().any(|l| l.contains(r#""outcome":"unauthenticated""#))
            && lines.iter().any(|l| l.contains(r#""answer":"5xx""#))
    });

    // Every metric an alarm on the code's namespace watches was written by a deployed function
    // or the edge (EMF in a log group of the stack), with the alarm's dimensions.
    let emitted = emitted_metrics(&stack.aws.log_lines());
    let watched = alarm_metrics("WebhookReceiver");
    assert!(watched.len() >= 2, "the alarms on the code's metrics: {watched:?}");
    let missing: Vec<&AlarmMetric> =
        watched.iter().filter(|m| !emitted.contains(&(m.name.clone(), m.dimensions.clone()))).collect();
    assert!(missing.is_empty(), "alarms on metrics no deployed function wrote: {missing:?}\nwritten: {emitted:?}");

    // The dashboard deployed with the stack, and every metric of the code's namespace its
    // widgets show was written: by a deployed function, or by the Worker (its log lines, in
    // the log group its Tail Worker ships them to). SEARCH widgets match any value of an
    // unfiltered dimension.
    let dashboards = stack.aws.dashboards();
    let (_, deployed) =
        dashboards.iter().find(|(name, _)| name.ends_with("-webhooks")).expect("the template's dashboard");
    let alarms: Vec<&str> =
        deployed["widgets"][1]["properties"]["alarms"].as_array().unwrap().iter().filter_map(|a| a.as_str()).collect();
    assert_eq!(alarms.len(), 11, "every alarm, the silence alarm too: {alarms:?}");
    // The stack's outputs name where the operator looks: the dashboard, the log groups, the
    // sink secret.
    let (dashboard_name, _) = dashboards.iter().find(|(name, _)| name.ends_with("-webhooks")).unwrap();
    assert_eq!(
        outputs.get("DashboardUrl").map(String::as_str),
        Some(format!("https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#dashboards/dashboard/{dashboard_name}").as_str()),
        "{outputs:?}"
    );
    let groups: BTreeSet<String> = stack.aws.log_lines().into_iter().map(|(group, _)| group).collect();
    assert_ne!(outputs.get("StreamWorkerLogGroupName"), outputs.get("ReconcileLogGroupName"), "{outputs:?}");
    for output in ["StreamWorkerLogGroupName", "ReconcileLogGroupName", "EdgeLogGroupName"] {
        assert!(outputs.get(output).is_some_and(|group| groups.contains(group)), "{output}: {outputs:?} {groups:?}");
    }
    assert!(
        outputs.get("SinkSettingsSecretArn").is_some_and(|arn| arn.contains(":secret:webhooks/sink")),
        "{outputs:?}"
    );
    assert!(alarms.iter().all(|a| a.starts_with("arn:aws:cloudwatch:") && a.contains(":alarm:")), "{alarms:?}");
    assert_eq!(
        deployed["widgets"].as_array().unwrap().len(),
        tests::template::dashboard_body()["widgets"].as_array().unwrap().len()
    );
    // (The Worker's lines among them: its Tail Worker shipped them into EdgeLogGroup.)
    let emitted = emitted_metrics(&stack.aws.log_lines());
    let shown = dashboard_metrics("WebhookReceiver");
    // Eleven: deliveries, latency p50 and p99, waiting, overdue, FAILED now, retried, written,
    // failed, absorbed, failed by reason (a new widget changes this count on purpose).
    assert_eq!(shown.len(), 11, "the dashboard's metrics of the code's namespace: {shown:?}");
    let unwritten: Vec<&WidgetMetric> = shown
        .iter()
        .filter(|m| {
            !emitted.iter().any(|(name, dimensions)| {
                *name == m.name
                    && dimensions.len() == m.dimensions.len()
                    && dimensions
                        .iter()
                        .zip(&m.dimensions)
                        .all(|((n, v), (wn, wv))| n == wn && wv.as_ref().is_none_or(|wv| wv == v))
            })
        })
        .collect();
    assert!(unwritten.is_empty(), "widgets on metrics nothing wrote: {unwritten:?}\nwritten: {emitted:?}");
}

/// The (metric name, dimensions) of every EMF line in `lines` of the namespace the alarms watch
/// that CloudWatch would turn into a datapoint (the specification: a numeric `_aws.Timestamp`,
/// each metric's value a number or an array of numbers at the root, dimension values strings).
fn emitted_metrics(lines: &[(String, String)]) -> BTreeSet<(String, Vec<(String, String)>)> {
    let mut emitted = BTreeSet::new();
    let numeric = |value: &serde_json::Value| {
        value.is_number() || value.as_array().is_some_and(|all| !all.is_empty() && all.iter().all(|v| v.is_number()))
    };
    for (_, line) in lines {
        let Ok(object) = serde_json::from_str::<serde_json::Value>(line.trim()) else { continue };
        if !object["_aws"]["Timestamp"].is_number() {
            continue;
        }
        for directive in object["_aws"]["CloudWatchMetrics"].as_array().cloned().unwrap_or_default() {
            if directive["Namespace"] != "WebhookReceiver" {
                continue;
            }
            for set in directive["Dimensions"].as_array().cloned().unwrap_or_default() {
                let names: Vec<&str> =
                    set.as_array().map(|all| all.iter().filter_map(|n| n.as_str()).collect()).unwrap_or_default();
                if !names.iter().all(|name| object[*name].is_string()) {
                    continue;
                }
                let mut dimensions: Vec<(String, String)> =
                    names.iter().map(|name| ((*name).to_owned(), object[*name].as_str().unwrap().to_owned())).collect();
                dimensions.sort();
                for metric in directive["Metrics"].as_array().cloned().unwrap_or_default() {
                    let name = metric["Name"].as_str().unwrap_or_default();
                    if numeric(&object[name]) {
                        emitted.insert((name.to_owned(), dimensions.clone()));
                    }
                }
            }
        }
    }
    emitted
}
