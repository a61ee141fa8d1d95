//! `scripts/deploy-edge.sh` for real, not its dry run: against `template.yaml` deployed to a
//! local AWS (IAM and STS answering for the stack's `EdgeUser` and `EdgeLogsUser`), with a
//! wrangler that keeps each Worker's secrets in a file (`tests/support/fake-wrangler.py`;
//! Cloudflare cannot be reached from here) and logs, at each secret write, what a Worker holding
//! them would meet. The first deploy deploys the Tail Worker before the edge and creates each
//! one's key and the sender's token, a second changes nothing, a rotation writes both halves of
//! each new key in one write while the old key still works and only then deactivates the old
//! one, a rotation whose write Cloudflare refuses deletes the key it made, and a rotation with
//! two keys left to either Worker's user is refused before either is rotated; with no
//! tail_consumers in wrangler.toml (the Free plan) the edge alone is deployed. The built Worker stores a delivery with each key it was given (the
//! old one refused once deactivated), and its Tail Worker, with the key it was given, ships the
//! edge's line into the stack's log group.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use tests::delivery;
use tests::edge::{Edge, Producer};
use tests::ministack::{AccessKey, Ministack};
use tests::stack::{self, edge_bindings, TABLE};
use tests::TempDir;

/// Runs the script with `args` against `aws`, its wrangler the stand-in keeping its state in
/// `dir`: whether it succeeded, and what it printed.
fn deploy_edge(aws: &Ministack, dir: &Path, args: &[&str]) -> (bool, String) {
    deploy_edge_with(aws, dir, args, false)
}

/// [`deploy_edge`], with every secret write refused by Cloudflare when `refused`.
fn deploy_edge_with(aws: &Ministack, dir: &Path, args: &[&str], refused: bool) -> (bool, String) {
    deploy_edge_from(&tests::process::repo_root(), aws, dir, args, refused)
}

/// [`deploy_edge_with`], the script and the files it reads taken from `root`.
fn deploy_edge_from(root: &Path, aws: &Ministack, dir: &Path, args: &[&str], refused: bool) -> (bool, String) {
    let mut command = Command::new(root.join("scripts/deploy-edge.sh"));
    if refused {
        command.env("FAKE_WRANGLER_REFUSE_WRITES", "1");
    }
    let output = command
        .args(args)
        .current_dir(root)
        .env("AWS_ENDPOINT_URL", aws.endpoint())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("STACK", "webhooks")
        .env("WRANGLER", dir.join("wrangler"))
        .env("FAKE_WRANGLER_STATE", dir.join("secrets.json"))
        .env("EDGE_ROTATION_WAIT", "0")
        .output()
        .expect("scripts/deploy-edge.sh runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

/// A new folder holding `wrangler`, the stand-in, which keeps its state beside it.
fn fake_wrangler(prefix: &str) -> TempDir {
    let dir = TempDir::new(prefix);
    let python = tests::process::repo_root().join(".tools/aws/bin/python");
    let fake = tests::process::repo_root().join("tests/support/fake-wrangler.py");
    let wrapper = format!("#!/bin/sh\nexec '{}' '{}' \"$@\"\n", python.display(), fake.display());
    std::fs::write(dir.0.join("wrangler"), wrapper).unwrap();
    Command::new("chmod").arg("+x").arg(dir.0.join("wrangler")).status().unwrap();
    dir
}

/// The edge Worker's secrets as the stand-in holds them, and its log of calls.
fn worker(dir: &Path) -> (Value, Vec<Value>) {
    of(dir, "edge")
}

/// The Tail Worker's secrets and its log of calls.
fn tail_worker(dir: &Path) -> (Value, Vec<Value>) {
    of(dir, "tail")
}

fn of(dir: &Path, name: &str) -> (Value, Vec<Value>) {
    let file = if name == "edge" { "secrets.json" } else { "secrets.json-tail" };
    let secrets = std::fs::read_to_string(dir.join(file)).map_or(Value::Null, |t| serde_json::from_str(&t).unwrap());
    let log = std::fs::read_to_string(dir.join("secrets.json.log")).unwrap_or_default();
    let calls = log.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|e| e["worker"] == name);
    (secrets, calls.collect())
}

/// Every call of both Workers, in order: `<worker> <call>`.
fn calls(dir: &Path) -> Vec<String> {
    let log = std::fs::read_to_string(dir.join("secrets.json.log")).unwrap_or_default();
    log.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| format!("{} {}", e["worker"].as_str().unwrap(), e["call"].as_str().unwrap()))
        .collect()
}

/// The edge with `edge`'s secrets, tailed by the Tail Worker with `tail`'s and the stack's log
/// group: the edge's line for one delivery arrives in the group.
fn shipped_with(aws: &Ministack, edge: &Value, tail: &Value, id: &str) -> bool {
    let text = |secrets: &Value, name: &str| secrets[name].as_str().unwrap().to_owned();
    let key = AccessKey { id: text(edge, "AWS_ACCESS_KEY_ID"), secret: text(edge, "AWS_SECRET_ACCESS_KEY") };
    let outputs = aws.stack_outputs("webhooks");
    let group = outputs["EdgeLogGroupName"].clone();
    let tail_key = AccessKey { id: text(tail, "AWS_ACCESS_KEY_ID"), secret: text(tail, "AWS_SECRET_ACCESS_KEY") };
    let tail_bindings = stack::tail_bindings(&aws.endpoint(), &tail_key, &group, &outputs["EdgeLogStreamName"]);
    let bindings =
        edge_bindings(&aws.endpoint(), &key, &[("WEBHOOK_BEARER_TOKENS", text(edge, "WEBHOOK_BEARER_TOKENS"))]);
    let worker = Edge::start_tailed(Producer::Edge, &bindings, &tail_bindings);
    let (bearer, idempotency) = (format!("Bearer {}", text(edge, "WEBHOOK_BEARER_TOKENS")), delivery::key(id));
    let headers =
        [("Content-Type", "application/json"), ("Authorization", bearer.as_str()), ("Idempotency-Key", &idempotency)];
    assert_eq!(
        worker.deliver(&headers, &delivery::body(id, delivery::VISITOR_MESSAGE, delivery::now_secs())).status,
        202
    );
    let arrived = || aws.log_lines().iter().any(|(g, line)| *g == group && line.contains(id));
    for _ in 0..100 {
        if arrived() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

/// The built Worker with `secrets`' key and token: the status of one new delivery.
fn delivered_with(aws: &Ministack, secrets: &Value, id: &str) -> u16 {
    let text = |name: &str| secrets[name].as_str().unwrap().to_owned();
    let key = AccessKey { id: text("AWS_ACCESS_KEY_ID"), secret: text("AWS_SECRET_ACCESS_KEY") };
    let token = text("WEBHOOK_BEARER_TOKENS");
    let edge = Edge::start(&edge_bindings(&aws.endpoint(), &key, &[("WEBHOOK_BEARER_TOKENS", token.clone())]));
    let (bearer, key) = (format!("Bearer {token}"), delivery::key(id));
    let headers = [("Content-Type", "application/json"), ("Authorization", bearer.as_str()), ("Idempotency-Key", &key)];
    edge.deliver(&headers, &delivery::body(id, delivery::VISITOR_MESSAGE, delivery::now_secs())).status
}

#[test]
fn the_edge_s_key_is_created_once_and_rotated_without_a_moment_the_worker_cannot_sign() {
    let aws = Ministack::start_whole_aws();
    let secret = aws.create_secret("webhooks/sink", r#"{"LEAD_SINK":"sqlite:///tmp/unused.db"}"#);
    stack::deploy(&aws, &secret);
    let dir = fake_wrangler("deploy-edge");
    let wrangler_toml = std::fs::read_to_string(tests::process::repo_root().join("wrangler.toml")).unwrap();
    // The script sets wrangler.toml's table and region to the stack's: they must already be
    // the stack's here, so this test never edits a file of the repository.
    assert!(
        wrangler_toml.contains(&format!("RECEIPTS_TABLE = \"{TABLE}\""))
            && wrangler_toml.contains("AWS_REGION = \"us-east-1\""),
        "wrangler.toml's RECEIPTS_TABLE and AWS_REGION are not the test stack's"
    );

    let tail_toml = std::fs::read_to_string(tests::process::repo_root().join("tail/wrangler.toml")).unwrap();
    // The same for the Tail Worker's log group, stream and region.
    assert!(
        tail_toml.contains(&format!("EDGE_LOG_GROUP = \"/webhook-receiver/{TABLE}/edge\""))
            && tail_toml.contains("EDGE_LOG_STREAM = \"edge\"")
            && tail_toml.contains("AWS_REGION = \"us-east-1\""),
        "tail/wrangler.toml's EDGE_LOG_GROUP, EDGE_LOG_STREAM and AWS_REGION are not the test stack's"
    );
    // The first deploy: the Tail Worker and its key, then the edge (whose tail_consumers names
    // the Tail Worker), one key (both halves in one write) and one token.
    let (ok, text) = deploy_edge(&aws, &dir.0, &[]);
    assert!(ok, "{text}");
    assert_eq!(
        calls(&dir.0),
        ["tail deploy", "tail secret bulk", "edge deploy", "edge secret bulk", "edge secret bulk"],
        "{text}"
    );
    let (first_tail, tail_log) = tail_worker(&dir.0);
    assert_eq!(tail_log[1]["names"], serde_json::json!(["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]));
    assert_eq!((tail_log[1]["signs"].as_bool(), tail_log[1]["keys"].as_object().unwrap().len()), (Some(true), 1));
    let (first, log) = worker(&dir.0);
    assert_eq!(log[1]["names"], serde_json::json!(["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]));
    assert_eq!((log[1]["signs"].as_bool(), log[1]["keys"].as_object().unwrap().len()), (Some(true), 1));
    let token = first["WEBHOOK_BEARER_TOKENS"].as_str().unwrap();
    assert!(token.len() >= 40 && text.contains(&format!("Authorization: Bearer {token}")), "shown once: {text}");
    assert_eq!(delivered_with(&aws, &first, "sub_first_key"), 202);
    assert!(
        shipped_with(&aws, &first, &first_tail, "sub_first_line"),
        "the Tail Worker's key puts into the stack's log group"
    );

    // Again: nothing new (no third key, no new token).
    let (ok, text) = deploy_edge(&aws, &dir.0, &[]);
    assert!(ok, "{text}");
    let (again, log) = worker(&dir.0);
    assert_eq!((&again, log.len()), (&first, 4), "only the deploy: {text}");
    let (tail_again, tail_log) = tail_worker(&dir.0);
    assert_eq!((&tail_again, tail_log.len()), (&first_tail, 3), "only the deploy: {text}");

    // A rotation Cloudflare refuses to write: the new key is deleted (no one could use it, and
    // it would take the user's second place), the Worker keeps its own.
    let (ok, text) = deploy_edge_with(&aws, &dir.0, &["--rotate-aws-key"], true);
    assert!(!ok && text.contains("it was deleted"), "{text}");
    assert_eq!(worker(&dir.0).0, first);
    assert_eq!(tail_worker(&dir.0).0, first_tail);

    // A rotation: the new pair in one write, signing, while the old key is still active (and
    // the only other one: the refused rotation's key is gone); then the old one deactivated.
    let (ok, text) = deploy_edge(&aws, &dir.0, &["--rotate-aws-key"]);
    assert!(ok, "{text}");
    let (rotated, log) = worker(&dir.0);
    let writes: Vec<&Value> = log.iter().skip(5).collect();
    assert_eq!(writes.len(), 1, "one secret write: {writes:?}");
    let (old, new) = (first["AWS_ACCESS_KEY_ID"].as_str().unwrap(), rotated["AWS_ACCESS_KEY_ID"].as_str().unwrap());
    assert_ne!(old, new);
    assert_eq!(writes[0]["names"], serde_json::json!(["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]));
    assert_eq!(writes[0]["signs"], true, "the Worker's new pair signs from the moment it has it");
    assert_eq!(writes[0]["keys"][old], "Active", "the old key still worked while the Worker switched");
    assert_eq!(writes[0]["keys"].as_object().unwrap().len(), 2, "{writes:?}");
    assert_eq!(rotated["WEBHOOK_BEARER_TOKENS"], first["WEBHOOK_BEARER_TOKENS"]);
    assert_eq!(delivered_with(&aws, &rotated, "sub_new_key"), 202);
    assert_eq!(delivered_with(&aws, &first, "sub_old_key"), 503, "the old key is deactivated");
    assert!(text.contains(&format!("--access-key-id {old}")), "how to delete it: {text}");

    // The Tail Worker's key, rotated the same way, after the edge's.
    let (rotated_tail, tail_log) = tail_worker(&dir.0);
    let writes: Vec<&Value> = tail_log.iter().skip(3).collect();
    assert_eq!(writes.len(), 1, "one secret write: {writes:?}");
    let (old, new) =
        (first_tail["AWS_ACCESS_KEY_ID"].as_str().unwrap(), rotated_tail["AWS_ACCESS_KEY_ID"].as_str().unwrap());
    assert_ne!(old, new);
    assert_eq!(writes[0]["signs"], true, "the Tail Worker's new pair signs from the moment it has it");
    assert_eq!(writes[0]["keys"][old], "Active", "the old key still worked while the Tail Worker switched");
    assert!(text.contains(&format!("--access-key-id {old}")), "how to delete it: {text}");
    assert!(shipped_with(&aws, &rotated, &rotated_tail, "sub_new_line"));
    assert!(!shipped_with(&aws, &rotated, &first_tail, "sub_old_line"), "the old key is deactivated");

    // Two keys (the old one not deleted yet): IAM allows no third, and nothing changes.
    let (ok, text) = deploy_edge(&aws, &dir.0, &["--rotate-aws-key"]);
    assert!(!ok && text.contains("already has two access keys"), "{text}");
    assert_eq!(worker(&dir.0).0, rotated);
    // The edge's old key deleted, the Tail Worker's not: neither Worker is rotated, never the
    // edge alone with the Tail Worker's rotation then refused.
    aws.delete_access_key_of_user_named("EdgeUser", first["AWS_ACCESS_KEY_ID"].as_str().unwrap());
    let (ok, text) = deploy_edge(&aws, &dir.0, &["--rotate-aws-key"]);
    assert!(!ok && text.contains("EdgeLogsUser") && text.contains("already has two access keys"), "{text}");
    assert_eq!(worker(&dir.0).0, rotated, "the edge was not rotated alone");
    assert_eq!(tail_worker(&dir.0).0, rotated_tail);
    assert_eq!(std::fs::read_to_string(tests::process::repo_root().join("wrangler.toml")).unwrap(), wrangler_toml);
    assert_eq!(std::fs::read_to_string(tests::process::repo_root().join("tail/wrangler.toml")).unwrap(), tail_toml);
    assert_eq!(aws.scan(TABLE).len(), 5, "a delivery with each key, and one per Tail Worker check");

    // The Free plan: wrangler.toml names no Tail Worker (a copy of the files the script reads,
    // without the tail_consumers line). The edge alone is deployed and keyed; no Tail Worker,
    // no key of EdgeLogsUser.
    let root = tests::process::repo_root();
    let free = TempDir::new("deploy-edge-free");
    for folder in ["scripts", "tail"] {
        std::fs::create_dir_all(free.0.join(folder)).unwrap();
    }
    std::fs::copy(root.join("scripts/deploy-edge.sh"), free.0.join("scripts/deploy-edge.sh")).unwrap();
    std::fs::copy(root.join("tail/wrangler.toml"), free.0.join("tail/wrangler.toml")).unwrap();
    let untailed: String =
        wrangler_toml.lines().filter(|l| !l.starts_with("tail_consumers")).map(|l| format!("{l}\n")).collect();
    assert_ne!(untailed.len(), wrangler_toml.len(), "wrangler.toml names its Tail Worker");
    std::fs::write(free.0.join("wrangler.toml"), untailed).unwrap();
    std::os::unix::fs::symlink(root.join(".tools"), free.0.join(".tools")).unwrap();
    let logs_keys = aws.access_key_ids_of_user_named("EdgeLogsUser");
    let state = fake_wrangler("deploy-edge-free-state");
    let (ok, text) = deploy_edge_from(&free.0, &aws, &state.0, &[], false);
    assert!(ok && text.contains("no tail_consumers"), "{text}");
    assert_eq!(calls(&state.0), ["edge deploy", "edge secret bulk", "edge secret bulk"], "{text}");
    assert_eq!(aws.access_key_ids_of_user_named("EdgeLogsUser"), logs_keys, "no key made for a Tail Worker");
    assert_eq!(worker(&state.0).1[1]["signs"], true, "{text}");
}
