//! `scripts/deploy-edge.sh` for real, not its dry run: against `template.yaml` deployed to a
//! local AWS (IAM and STS answering for the stack's `EdgeUser`), with a wrangler that keeps the
//! Worker's secrets in a file (`tests/support/fake-wrangler.py`; Cloudflare cannot be reached
//! from here) and logs, at each secret write, what a Worker holding them would meet. The first
//! deploy creates the edge's key and the sender's token, a second changes nothing, a rotation
//! writes both halves of the new key in one write while the old key still works and only then
//! deactivates the old one, a rotation whose write Cloudflare refuses deletes the key it made,
//! and a rotation with two keys left is refused. The built Worker
//! stores a delivery with each key it was given, and the old one is refused once deactivated.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use tests::delivery;
use tests::edge::Edge;
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
    let root = tests::process::repo_root();
    let mut command = Command::new(root.join("scripts/deploy-edge.sh"));
    if refused {
        command.env("FAKE_WRANGLER_REFUSE_WRITES", "1");
    }
    let output = command
        .args(args)
        .current_dir(&root)
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

/// The Worker's secrets as the stand-in holds them, and its log of calls.
fn worker(dir: &Path) -> (Value, Vec<Value>) {
    let secrets =
        std::fs::read_to_string(dir.join("secrets.json")).map_or(Value::Null, |t| serde_json::from_str(&t).unwrap());
    let log = std::fs::read_to_string(dir.join("secrets.json.log")).unwrap_or_default();
    (secrets, log.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
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
    let dir = TempDir::new("deploy-edge");
    let python = tests::process::repo_root().join(".tools/aws/bin/python");
    let fake = tests::process::repo_root().join("tests/support/fake-wrangler.py");
    let wrapper = format!("#!/bin/sh\nexec '{}' '{}' \"$@\"\n", python.display(), fake.display());
    std::fs::write(dir.0.join("wrangler"), wrapper).unwrap();
    Command::new("chmod").arg("+x").arg(dir.0.join("wrangler")).status().unwrap();
    let wrangler_toml = std::fs::read_to_string(tests::process::repo_root().join("wrangler.toml")).unwrap();
    // The script sets wrangler.toml's table and region to the stack's: they must already be
    // the stack's here, so this test never edits a file of the repository.
    assert!(
        wrangler_toml.contains(&format!("RECEIPTS_TABLE = \"{TABLE}\""))
            && wrangler_toml.contains("AWS_REGION = \"us-east-1\""),
        "wrangler.toml's RECEIPTS_TABLE and AWS_REGION are not the test stack's"
    );

    // The first deploy: the Worker, then one key (both halves in one write) and one token.
    let (ok, text) = deploy_edge(&aws, &dir.0, &[]);
    assert!(ok, "{text}");
    let (first, log) = worker(&dir.0);
    let calls: Vec<&str> = log.iter().map(|e| e["call"].as_str().unwrap()).collect();
    assert_eq!(calls, ["deploy", "secret bulk", "secret bulk"], "{text}");
    assert_eq!(log[1]["names"], serde_json::json!(["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]));
    assert_eq!((log[1]["signs"].as_bool(), log[1]["keys"].as_object().unwrap().len()), (Some(true), 1));
    let token = first["WEBHOOK_BEARER_TOKENS"].as_str().unwrap();
    assert!(token.len() >= 40 && text.contains(&format!("Authorization: Bearer {token}")), "shown once: {text}");
    assert_eq!(delivered_with(&aws, &first, "sub_first_key"), 202);

    // Again: nothing new (no third key, no new token).
    let (ok, text) = deploy_edge(&aws, &dir.0, &[]);
    assert!(ok, "{text}");
    let (again, log) = worker(&dir.0);
    assert_eq!((&again, log.len()), (&first, 4), "only the deploy: {text}");

    // A rotation Cloudflare refuses to write: the new key is deleted (no one could use it, and
    // it would take the user's second place), the Worker keeps its own.
    let (ok, text) = deploy_edge_with(&aws, &dir.0, &["--rotate-aws-key"], true);
    assert!(!ok && text.contains("it was deleted"), "{text}");
    assert_eq!(worker(&dir.0).0, first);

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

    // Two keys (the old one not deleted yet): IAM allows no third, and nothing changes.
    let (ok, text) = deploy_edge(&aws, &dir.0, &["--rotate-aws-key"]);
    assert!(!ok && text.contains("already has two access keys"), "{text}");
    assert_eq!(worker(&dir.0).0, rotated);
    assert_eq!(std::fs::read_to_string(tests::process::repo_root().join("wrangler.toml")).unwrap(), wrangler_toml);
    assert_eq!(aws.scan(TABLE).len(), 2);
}
