#!/usr/bin/env bash
# Proves the README's quick start: `make dev` comes up, `make demo` shows leads == unique
# submissions, and stopping the stack leaves nothing running. Uses its own state folder and
# free ports, so it does not disturb a developer's own `make dev`.
set -euo pipefail
cd "$(dirname "$0")/.."

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export DEV_STATE=target/dev-smoke DYNAMODB_PORT EDGE_PORT
DYNAMODB_PORT=$(free_port)
EDGE_PORT=$(free_port)
rm -rf "$DEV_STATE"
mkdir -p "$DEV_STATE"

scripts/dev.sh >target/dev-smoke.log 2>&1 &
dev=$!
stop() {
  kill -TERM "$dev" 2>/dev/null || true
  wait "$dev" 2>/dev/null || true
}
trap stop EXIT

for _ in $(seq 1800); do
  [ -f "$DEV_STATE/stack.json" ] && break
  kill -0 "$dev" 2>/dev/null || { cat target/dev-smoke.log; echo "smoke: make dev exited early" >&2; exit 1; }
  sleep 0.1
done
[ -f "$DEV_STATE/stack.json" ] || { cat target/dev-smoke.log; echo "smoke: make dev did not come up in 180 s" >&2; exit 1; }
pids=$(python3 -c 'import json,sys; print(" ".join(str(p) for p in json.load(open(sys.argv[1]))["pids"].values()))' "$DEV_STATE/stack.json")

python3 scripts/demo.py

stop
trap - EXIT
for pid in $pids; do
  if kill -0 "$pid" 2>/dev/null; then
    echo "smoke: process $pid is still running after the stack stopped" >&2
    exit 1
  fi
done
echo "smoke: the stack stopped cleanly"
