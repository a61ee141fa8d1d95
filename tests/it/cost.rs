//! The core's CPU cost grows with a body's size, not its square (SECURITY.md): the instructions
//! one delivery takes, counted by valgrind (deterministic, unlike a clock), at 64 and 256 KiB
//! (the largest body a Worker takes by default) of bodies built to be expensive
//! (`tests/bin/receive-cost.rs`, as `make bench`'s), less those of building the body.

use std::process::Command;

/// The instructions `receive-cost kind bytes [--build-only]` executes, as cachegrind counts
/// them, and what it printed.
fn instructions(kind: &str, bytes: usize, build_only: bool) -> (u64, String) {
    let output = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"])
        .arg(env!("CARGO_BIN_EXE_receive-cost"))
        .args([kind, &bytes.to_string()])
        .args(build_only.then_some("--build-only"))
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
        // The core's own instructions at a size: the run, less building the same body.
        let core = |bytes: usize| {
            let (whole, said) = instructions(kind, bytes, false);
            let (built, _) = instructions(kind, bytes, true);
            // The whole path was taken (no refusal that skipped the parse).
            assert!(said.starts_with(decided), "{kind} at {bytes}: {said}");
            whole - built
        };
        let (small, large) = (core(64 * 1024), core(256 * 1024));
        // Four times the size: about four times the instructions; a quadratic path, sixteen.
        let ratio = large as f64 / small as f64;
        assert!(ratio < 6.0, "{kind}: {small} then {large} instructions, {ratio:.2} times");
    }
}
