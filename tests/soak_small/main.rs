//! The soak, small: deliveries through the whole path while the store and the sink fail on a
//! schedule; nothing may be lost (`make soak` runs it at 20,000). Once on the store with the
//! stream worker's binary polling it, once on `template.yaml` deployed to a local AWS. A test
//! binary of its own, so its load never runs beside the integration suite's tests; its two
//! tests take turns.

use std::sync::Mutex;

use tests::soak::{run, Params};

/// One soak at a time: each loads both cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn soak(params: &Params) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let report = run(params, |line| eprintln!("soak: {line}"));
    eprintln!("{}", report.to_markdown());
    assert_eq!(report.problems(), Vec::<String>::new(), "{}", report.to_markdown());
    // No process of ours grew (`make soak`'s rule, on this run's samples: the Worker's and, on
    // the test topology, the stream worker's), and there were samples to judge: every process
    // sampled, with a resident size in both quarters.
    assert_eq!(report.memory_problems(), Vec::<String>::new(), "{}", report.to_markdown());
    let sampled: Vec<&String> = report.memory.keys().collect();
    let expected = if params.deployed { 2 } else { 3 };
    assert_eq!(sampled.len(), expected, "{sampled:?}");
    assert!(report.memory.values().all(|(early, late, _)| *early > 0.0 && *late > 0.0), "{:?}", report.memory);
    // The faults were met: the store failed some attempts and the senders retried them.
    let failed: usize = report.by_status.iter().filter(|(s, _)| !s.starts_with('2')).map(|(_, n)| n).sum();
    assert!(failed > 0, "no attempt met a fault: {:?}", report.by_status);
    assert!(report.by_status.get("200").is_some_and(|&n| n > 0), "no duplicate was acknowledged as one");
}

#[test]
fn a_small_soak_under_faults_loses_nothing() {
    soak(&Params::small());
}

/// The same counts on the deployed topology: the stack's mapping invokes the deployed stream
/// function under its role, and exactly-once is counted at the sink's raw requests.
#[test]
fn a_small_soak_through_the_deployed_stack_loses_nothing() {
    soak(&Params::small_deployed());
}
