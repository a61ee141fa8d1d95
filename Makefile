# The two commands a newcomer needs: `make test` and `make dev`. See README.md.
.PHONY: setup test check dev demo build-edge no-std browser-test mutants bench size fuzz soak capacity deploy-aws deploy-edge

# Installs what the tests need (pinned, idempotent; quick when everything is present).
setup:
	scripts/setup.sh

# Everything CI checks: fmt, clippy, the no_std builds, the Worker build and bundle, native
# tests (with the integration suite against workerd and ministack), and the browser tests.
test: setup
	scripts/test.sh

# The inner loop for contributors: fmt, the layers, clippy and the unit and property tests of the
# crates a change touches (CRATES="shared stream-worker" names them). make test is the gate.
check:
	scripts/check.sh

# shared built without std for the Worker's target and for a target with no operating system:
# no I/O, no clock, no environment and no randomness can be reached from it (make test runs it).
no-std:
	cargo build -p webhook-shared --target wasm32-unknown-unknown
	# sha2's x86 intrinsics do not build for a soft-float target; its portable code does.
	cargo build -p webhook-shared --target x86_64-unknown-none --features sha2/force-soft

# The edge Worker, into edge/build.
build-edge: setup
	scripts/build-edge.sh

# Mutation testing: every mutant of shared, the stream worker and the edge's configuration and
# signer, against the tests that cover them; the summary lands in target/mutants/summary.md
# (docs/testing.md). make test runs the mutants of the change since CI last passed.
mutants: setup
	python3 scripts/mutants.py

# Every benchmark on 127.0.0.1 (edge CPU against the floors, where the time goes, upload size,
# the stream worker against the store's ceiling), into target/bench/report.md and report.json.
# BENCH_QUICK=1 for a short run. docs/performance.md.
bench:
	scripts/setup.sh bench
	python3 bench/run.py

# Fuzzes every target in fuzz/ for FUZZ_SECONDS each (default 60) with cargo fuzz on nightly;
# `make test` replays the corpus on stable. docs/testing.md.
fuzz:
	scripts/fuzz.sh

# The whole path under load while the store and the sink fail on a schedule: 20,000
# deliveries, then nothing lost and memory flat, into target/soak/report.md. docs/testing.md.
soak: setup
	cargo build -p stream-worker
	scripts/build-edge.sh
	cargo bench --profile dev -p tests --bench soak

# The capacity model at 1 to 10,000 deliveries/s, the cost per million, and simulated bursts
# above a CRM's limit (deterministic; SEED=n for another run): target/capacity/report.md and
# backlog.svg. Python's standard library only. docs/capacity.md.
capacity:
	python3 capacity/run.py $(if $(SEED),--seed $(SEED))

# What the Worker's Wasm is made of, by crate and by function: target/size/report.md.
size:
	scripts/setup.sh bench
	python3 bench/size.py

# Only the browser tests (headless Chromium).
browser-test: setup
	mkdir -p target/tmp
	TMPDIR=$(CURDIR)/target/tmp CHROMEDRIVER=/usr/bin/chromedriver cargo test -p webhook-shared --target wasm32-unknown-unknown
	TMPDIR=$(CURDIR)/target/tmp CHROMEDRIVER=/usr/bin/chromedriver cargo test -p edge --no-default-features --target wasm32-unknown-unknown

# The whole path on 127.0.0.1: DynamoDB-compatible store, the Worker, the stream worker.
# Runs until Ctrl-C; ports from DYNAMODB_PORT (4566) and EDGE_PORT (8787).
dev: setup
	scripts/dev.sh

# With `make dev` running in another terminal: a scenario and a summary table.
demo:
	python3 scripts/demo.py

# Production (docs/deploying.md). The AWS half first: table, stream worker, reconcile, alarms.
# DRY_RUN=1 runs the offline checks only (lint, sam validate, the arm64 build; the bundle).
deploy-aws: setup
	scripts/deploy-aws.sh $(if $(DRY_RUN),--dry-run)

# The Cloudflare half, pointed at the stack deploy-aws made. ROTATE_AWS_KEY=1 rotates the
# edge's AWS access key without downtime.
deploy-edge: setup
	scripts/deploy-edge.sh $(if $(DRY_RUN),--dry-run,$(if $(ROTATE_AWS_KEY),--rotate-aws-key))
