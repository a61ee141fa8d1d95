//! `make soak`: the soak at full size (20,000 deliveries, 64 senders, faults every few seconds)
//! on 127.0.0.1; writes target/soak/report.md and fails when anything was lost or a process's
//! memory grew. `SOAK_SUBMISSIONS` and `SOAK_CONCURRENCY` change its size; `SOAK_STACK=deployed`
//! runs it on `template.yaml` deployed to a local AWS (the mapping invoking the deployed stream
//! function; the sink's faults latency only, as that mapping moves past what a function
//! reports failed, and the rest of its batch).

#![allow(clippy::unwrap_used)]

fn main() {
    let mut params = tests::soak::Params::full();
    let number = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<usize>().ok());
    if let Some(n) = number("SOAK_SUBMISSIONS") {
        params.submissions = n;
    }
    if let Some(n) = number("SOAK_CONCURRENCY") {
        params.concurrency = n;
    }
    params.deployed = std::env::var("SOAK_STACK").is_ok_and(|stack| stack == "deployed");
    let report = tests::soak::run(&params, |line| eprintln!("soak: {line}"));
    let text = report.to_markdown();
    let out = tests::repo_root().join("target/soak");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("report.md"), &text).unwrap();
    eprintln!("{text}\nsoak: written to target/soak/report.md");
    let problems: Vec<String> = report.problems().into_iter().chain(report.memory_problems()).collect();
    if !problems.is_empty() {
        eprintln!("soak: FAILED\n{}", problems.join("\n"));
        std::process::exit(1);
    }
}
