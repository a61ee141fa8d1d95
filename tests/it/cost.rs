//! The core's CPU cost grows with a body's size, not its square (SECURITY.md): the instructions
//! one delivery takes, counted by valgrind (deterministic, unlike a clock), at 16 and 64 KiB
//! of bodies built to be expensive (`tests/src/bin/receive-cost.rs`, as `make bench`'s).

use std::process::Command;

/// The instructions `receive-cost kind bytes` executes, as cachegrind counts them, and what
/// the core decided.
fn instructions(kind: &str, bytes: usize) -> (u64, String) {
    let output = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"])
        .arg(env!("CARGO_BIN_EXE_receive-cost"))
        .args([kind, &bytes.to_string()])
        .output()
        .expect("valgrind (make setup installs it)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let refs = stderr
        .lines()
        .find_map(|line| line.split_once("I   refs:").map(|(_, n)| n.trim().replace(',', "")))
        .unwrap_or_else(|| panic!("no instruction count: {stderr}"));
    (refs.parse().unwrap(), String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

#[test]
fn the_core_s_cost_grows_with_the_body_s_size_not_its_square() {
    for (kind, decided) in [("keys", "store"), ("escapes", "store"), ("arrays", "store"), ("deep", "respond 400")] {
        let (process, _) = instructions(kind, 0);
        let (small, small_decided) = instructions(kind, 16 * 1024);
        let (large, large_decided) = instructions(kind, 64 * 1024);
        // The whole path was taken, at both sizes (no refusal that skipped the parse).
        assert!(small_decided.starts_with(decided) && large_decided.starts_with(decided), "{kind}: {small_decided}");
        let (small, large) = (small - process, large - process);
        // Four times the size: about four times the instructions; a quadratic path, sixteen.
        let ratio = large as f64 / small as f64;
        assert!(ratio < 6.0, "{kind}: {small} then {large} instructions, {ratio:.2} times");
    }
}
