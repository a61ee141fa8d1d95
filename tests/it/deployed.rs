//! The production topology on a local AWS: `template.yaml` deployed as it is by
//! `scripts/deploy-aws.sh` to ministack (CloudFormation with the SAM transform, the stream
//! mapping with its filter and partial batch responses, the functions run as local processes
//! under their roles' policies, the sink's settings in Secrets Manager), the built Worker
//! signing with a key of the stack's `EdgeUser`, and leads written by the deployed function.
//! Exactly-once is counted where it happens: in the sink's raw requests. Only the path that
//! succeeds is run here: a failing batch (partial batch responses, bisection, the
//! failed-batches queue) and the deployed reconcile function are not exercised yet.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::json;
use shared::profile::Profile;
use tests::delivery;
use tests::edge::Edge;
use tests::ministack::Ministack;
use tests::senders;
use tests::stub_http::WebhookStandIn;

const TABLE: &str = "receipts";

/// Deploys the stack with `scripts/deploy-aws.sh` (its local mode), the function being the
/// binary the suite tests.
fn deploy(aws: &Ministack, sink_secret_arn: &str) {
    let output = Command::new(tests::repo_root().join("scripts/deploy-aws.sh"))
        .current_dir(tests::repo_root())
        .env("AWS_ENDPOINT_URL", aws.endpoint())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("SINK_SECRET_ARN", sink_secret_arn)
        .env("STACK_NAME", "webhooks")
        .env("TABLE_NAME", TABLE)
        .env("LAMBDA_BOOTSTRAP", tests::stream_worker_binary())
        .output()
        .expect("scripts/deploy-aws.sh runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the local deploy failed:\n{text}");
    assert!(text.contains("Successfully created/updated stack"), "{text}");
}

#[test]
fn every_profile_s_deliveries_become_one_lead_each_through_the_deployed_stack() {
    let aws = Ministack::start_whole_aws();
    let sink = WebhookStandIn::start();
    let settings = json!({"LEAD_SINK": sink.url(), "WEBHOOK_SINK_SECRET": delivery::signing_secret()});
    let secret = aws.create_secret("webhooks/sink", &settings.to_string());
    deploy(&aws, &secret);
    // The edge signs with a key of the stack's own EdgeUser (PutItem on the table, nothing else).
    let key = aws.access_key_of_user_named("EdgeUser");
    let mut bindings = vec![
        ("RECEIPTS_TABLE", TABLE.to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("DYNAMODB_ENDPOINT", aws.endpoint()),
        ("AWS_ACCESS_KEY_ID", key.id.clone()),
        ("AWS_SECRET_ACCESS_KEY", key.secret.clone()),
        ("WEBHOOK_BEARER_TOKENS", delivery::BEARER.to_owned()),
    ];
    bindings.extend(senders::bindings());
    let edge = Edge::start(&bindings);

    // Two submissions per profile, each sent, retried, and sent three more times at once.
    let mut statuses: BTreeMap<String, Vec<u16>> = BTreeMap::new();
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
            statuses.insert(receipt_key, seen);
        }
    }
    for (key, seen) in &statuses {
        let stored = seen.iter().filter(|s| **s == 202).count();
        assert_eq!((seen[0], stored), (202, 1), "{key}: one 202, then 200s: {seen:?}");
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
}
