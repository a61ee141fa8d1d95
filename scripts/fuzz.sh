#!/usr/bin/env bash
# `make fuzz`: fuzzes every target in fuzz/ for FUZZ_SECONDS each (default 60), starting from
# the seed corpus, and prints what each run did. New inputs go to target/fuzz-corpus/<target>
# (the repository's corpus is only read); a failing input lands in fuzz/artifacts/<target>/
# and the run fails. Keep such an input as fuzz/corpus/<target>/<name> (tests/corpus.rs then
# replays it in `make test`) and write the unit test it calls for. FUZZ_TARGETS picks targets.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
want=0.13.2
log() { printf 'fuzz: %s\n' "$*"; }

# libFuzzer needs the nightly compiler's instrumentation; the machine has one (rustup).
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  log "no nightly toolchain: install one with rustup (cargo fuzz needs it); the corpus replay runs on stable in make test"
  exit 1
fi
if [ "$(cargo fuzz --version 2>/dev/null | awk '{print $NF}')" != "$want" ]; then
  log "installing cargo-fuzz $want (about a minute)"
  cargo install -q cargo-fuzz --locked --version "=$want"
fi

targets=${FUZZ_TARGETS:-$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^fuzz$')}
failed=()
summary=()
for target in $targets; do
  scratch=target/fuzz-corpus/$target
  mkdir -p "$scratch"
  before=$(ls "$scratch" | wc -l)
  log "$target: ${seconds} s from $(ls fuzz/corpus/"$target" | wc -l) seeds"
  out=target/fuzz-corpus/$target.log
  # No sanitizer (the code forbids unsafe; coverage guidance is what matters), debug assertions
  # on (overflow checks); one job, the machine has two cores.
  if cargo +nightly fuzz run --fuzz-dir fuzz --features libfuzzer --sanitizer none --debug-assertions \
      "$target" "$scratch" "fuzz/corpus/$target" -- -max_total_time="$seconds" -print_final_stats=1 \
      >"$out" 2>&1; then
    result=ok
  else
    result=FAILED
    failed+=("$target")
    tail -n 40 "$out"
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$out" | tail -1 | awk '{print $2}')
  corpus=$(( $(ls "$scratch" | wc -l) - before ))
  summary+=("$(printf '%-14s %-7s %10s runs  %6s edges  %6s new inputs' "$target" "$result" "${runs:-?}" "${cov:-?}" "$corpus")")
done

log "summary (${seconds} s per target; logs in target/fuzz-corpus/<target>.log)"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  log "failing inputs are in fuzz/artifacts/<target>/: ${failed[*]}"
  exit 1
fi
