//! The soak, small: about two thousand deliveries through the whole path while the store and
//! the sink fail on a schedule; nothing may be lost (`make soak` runs it at 20,000). A test
//! binary of its own, so its load never runs beside the integration suite's tests.

#[test]
fn a_small_soak_under_faults_loses_nothing() {
    let report = tests::soak::run(&tests::soak::Params::small(), |line| eprintln!("soak: {line}"));
    eprintln!("{}", report.to_markdown());
    assert_eq!(report.problems(), Vec::<String>::new(), "{}", report.to_markdown());
    // The faults were met: the store failed some attempts and the senders retried them.
    let failed: usize = report.by_status.iter().filter(|(s, _)| !s.starts_with('2')).map(|(_, n)| n).sum();
    assert!(failed > 0, "no attempt met a fault: {:?}", report.by_status);
    assert!(report.by_status.get("200").is_some_and(|&n| n > 0), "no duplicate was acknowledged as one");
}
