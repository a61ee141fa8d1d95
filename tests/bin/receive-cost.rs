//! One delivery through the core's receive path (authentication, the envelope's JSON, the
//! receipt and its PutItem), its body built to be expensive at a given size, as `make bench`'s
//! hostile bodies are. `it::cost` runs it under valgrind to count the instructions it takes at
//! two sizes: `receive-cost <keys|escapes|arrays|deep> <bytes> [--build-only]` (the body built
//! and not received: what to subtract). It prints what the core decided, so a run that took a
//! shortcut (a refusal) shows.

#![allow(clippy::print_stdout, clippy::expect_used)] // a test's helper: its answer is its stdout

use shared::auth::AuthPolicy;
use shared::headers::Headers;
use shared::profile::Profile;
use shared::receive::{receive, Delivery, Policy, Step};
use shared::secret::Credential;

/// The form `kind` filling about `bytes` bytes, as bench/edge.py's `hostile` builds it.
fn form(kind: &str, bytes: usize) -> String {
    match kind {
        "keys" => format!("{{{}}}", (0..bytes / 16).map(|i| format!("\"k{i:06}\":{i}")).collect::<Vec<_>>().join(",")),
        "escapes" => format!("{{\"m\":\"{}\"}}", "\\u00e9\\n".repeat(bytes / 8)),
        // formData at level 3: 25 objects, an array, then elements 3 deep reach level 31.
        "arrays" | "deep" => {
            let mut elements = vec!["[1,[2,[3]]]"; bytes / 12];
            if kind == "deep" {
                *elements.last_mut().expect("at least one element") = "[1,[2,[[3]]]]";
            }
            format!("{}[{}]{}", "{\"k\":".repeat(25), elements.join(","), "}".repeat(25))
        }
        other => panic!("no kind {other}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (kind, bytes) = (args[1].as_str(), args[2].parse::<usize>().expect("a size in bytes"));
    let body = format!(
        r#"{{"event":"form.submitted","timestamp":1,"data":{{"submissionId":"cost-1","formData":{}}}}}"#,
        form(kind, bytes)
    );
    if args.get(3).is_some_and(|a| a == "--build-only") {
        println!("built {}", std::hint::black_box(body).len());
        return;
    }
    let auth = AuthPolicy { bearer_tokens: vec![Credential::new(b"cost-token")], ..AuthPolicy::default() };
    let mut policy = Policy::single(Profile::StaticForms, auth, "receipts");
    policy.max_body_bytes = 1 << 20;
    let headers = Headers::new(vec![
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer cost-token"),
        ("Idempotency-Key", "staticforms:form.submitted:cost-1"),
    ]);
    let delivery = Delivery {
        profile: Profile::StaticForms,
        headers: &headers,
        body: body.as_bytes(),
        request_id: "req-cost",
        now_millis: 1_796_019_713_123,
    };
    match receive(&policy, &delivery) {
        Step::Store(put) => println!("store {}", put.request.body.len()),
        Step::Respond(outcome, _) => println!("respond {}", outcome.response().status),
    }
}
