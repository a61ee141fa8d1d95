#!/usr/bin/env bash
# Runs every check `make test` promises, in order, and ends with the test counts per runner.
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/test-logs
mkdir -p "$out" target/tmp
# Chromium leaves a profile per run in TMPDIR; keep those under target/.
export TMPDIR="$PWD/target/tmp" CHROMEDRIVER=/usr/bin/chromedriver

step() { printf '\n==> %s\n' "$*"; }

step "format"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check

step "the tests ARCHITECTURE.md names as holding its invariants exist"
python3 scripts/check-invariant-tests.py

step "every import points to a lower layer (ARCHITECTURE.md's layers)"
python3 scripts/check-layers.py --self-test
python3 scripts/check-layers.py

step "every relative link in the Markdown resolves"
python3 scripts/check-links.py --self-test
python3 scripts/check-links.py

step "clippy (native, all targets)"
cargo clippy --workspace --all-targets -- -D warnings
step "clippy (wasm32: shared, edge)"
cargo clippy -p webhook-shared --all-targets --target wasm32-unknown-unknown -- -D warnings
cargo clippy -p edge --all-targets --target wasm32-unknown-unknown -- -D warnings
step "clippy (the fuzz checks, a workspace of their own)"
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings

step "the benchmark, size and fuzz scripts compile (make bench, make size, make fuzz run outside make test)"
python3 -m py_compile bench/*.py
node --check bench/profile.mjs
node --check bench/core/run.mjs
node --check bench/floor-js/worker.js
python3 -m py_compile fuzz/seeds.py
bash -n scripts/fuzz.sh

step "no_std build of shared (wasm32-unknown-unknown, x86_64-unknown-none)"
make --no-print-directory no-std

step "build the edge Worker (worker-build, release)"
scripts/build-edge.sh

step "deploy the edge, offline (make deploy-edge DRY_RUN=1: wrangler deploy --dry-run)"
scripts/deploy-edge.sh --dry-run 2>&1 | tee "$out/bundle.log" | { grep -v '^\[custom build\]' || true; }

step "deploy the AWS half, offline (make deploy-aws DRY_RUN=1: cfn-lint, sam validate, cargo lambda build --arm64)"
scripts/deploy-aws.sh --dry-run 2>&1 | tee "$out/deploy-aws.log"

step "the template's promises (deploy/test_template.py)"
.tools/aws/bin/python -m unittest deploy/test_template.py 2>&1 | tee "$out/template.log"

step "the Tail Worker (node --test tail/: which lines ship, the abnormal-end line, the cut into calls, its calls against a PutLogEvents stand-in)"
node --test tail/ 2>&1 | tee "$out/tail.log"

step "the capacity model: its invariants, then make capacity (report and chart)"
{
  python3 -m unittest discover -s capacity -p 'test_*.py'
  python3 capacity/run.py
} 2>&1 | tee "$out/capacity.log"

step "native tests (unit, property, integration against workerd, ministack, PostgreSQL)"
# The Lambda-mode test runs the stream worker's binary.
cargo build -p stream-worker
cargo test --workspace 2>&1 | tee "$out/native.log"
step "the fuzz corpus, replayed through every target's checks (make fuzz fuzzes them)"
cargo test --manifest-path fuzz/Cargo.toml 2>&1 | tee -a "$out/native.log"

step "browser tests (headless Chromium)"
{
  cargo test -p webhook-shared --target wasm32-unknown-unknown
  # The edge's pure parts (config, SigV4); the runtime shell is tested in workerd above.
  cargo test -p edge --no-default-features --target wasm32-unknown-unknown
} 2>&1 | tee "$out/browser.log"

step "mutants of the change since CI last passed (.ci/verified; make mutants runs them all)"
base=(--since-verified)
[ -z "${MUTANTS_BASE:-}" ] || base=(--in-diff "$MUTANTS_BASE")
python3 scripts/mutants.py "${base[@]}" 2>&1 | tee "$out/mutants.log"

step "quick start: make dev, then make demo, then stop; the local stack, then STACK=aws (own ports and state folders)"
scripts/smoke-dev.sh 2>&1 | tee "$out/smoke.log"

step "summary (fails on a suite below its floor in scripts/test-floors.txt, or a missing figure)"
python3 scripts/check-tests.py "$out"
