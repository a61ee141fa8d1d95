#!/usr/bin/env bash
# `make check`: the contributor's inner loop, on the crates a change touches (what differs from
# HEAD, staged or not, and new files): formatting, the layers, clippy with warnings as errors,
# and the crates' own unit and property tests. Minutes on a warm tree; `make test` stays the
# full gate (the integration suite, the browser, the Worker's build, the mutants).
# `make check CRATES="shared stream-worker"` names the crates instead.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A package=([shared]=webhook-shared [edge]=edge [stream-worker]=stream-worker [tests]=tests)
if [[ -n "${CRATES:-}" ]]; then
  read -r -a crates <<< "$CRATES"
else
  changed=$( (git diff --name-only HEAD; git ls-files --others --exclude-standard) | sort -u)
  crates=()
  for crate in shared edge stream-worker tests fuzz; do
    if grep -q "^$crate/" <<< "$changed"; then crates+=("$crate"); fi
  done
  # A change to shared, or to the workspace's manifests, reaches every crate: all of them.
  if [[ " ${crates[*]} " == *" shared "* ]] || grep -qE '^(Cargo\.toml|Cargo\.lock)$' <<< "$changed"; then
    crates=(shared edge stream-worker tests fuzz)
  fi
fi
if [[ ${#crates[@]} -eq 0 ]]; then
  cargo fmt --all -- --check
  python3 scripts/check-layers.py
  python3 scripts/check-links.py
  echo "check: no crate differs from HEAD (name some: make check CRATES=\"shared stream-worker\")"
  exit 0
fi
echo "check: ${crates[*]}"

cargo fmt --all -- --check
python3 scripts/check-layers.py
python3 scripts/check-links.py
for crate in "${crates[@]}"; do
  case "$crate" in
    fuzz)
      cargo fmt --manifest-path fuzz/Cargo.toml -- --check
      cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
      cargo test --manifest-path fuzz/Cargo.toml
      ;;
    tests)
      # The integration suite's library and its unit tests; the suite itself is make test's.
      cargo clippy -p tests --all-targets -- -D warnings
      cargo test -p tests --lib
      ;;
    shared|edge|stream-worker)
      cargo clippy -p "${package[$crate]}" --all-targets -- -D warnings
      cargo test -p "${package[$crate]}" --lib
      ;;
    *)
      echo "check: no crate called $crate (shared, edge, stream-worker, tests, fuzz)" >&2
      exit 2
      ;;
  esac
done
echo "check: passed (${crates[*]}); make test is the full gate"
