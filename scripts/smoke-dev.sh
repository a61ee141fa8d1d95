#!/usr/bin/env bash
# Proves the README's quick start, for both stacks: `make dev` comes up, `make demo` shows
# leads == unique submissions and the mapped lead's fields (counted where the leads land: the
# lead inbox behind the webhook sink of stream-worker poll, or with STACK=aws of the deployed
# function), and stopping the stack leaves
# nothing running. Uses its own state folders and free ports, so it does not disturb a
# developer's own `make dev`. A second `make dev` must refuse (checked on the local stack).
set -euo pipefail
cd "$(dirname "$0")/.."

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
smoke() { # local | aws
  export STACK=$1 DEV_STATE=target/dev-smoke-$1 DYNAMODB_PORT EDGE_PORT INBOX_PORT
  DYNAMODB_PORT=$(free_port)
  EDGE_PORT=$(free_port)
  INBOX_PORT=$(free_port)
  rm -rf "$DEV_STATE"
  mkdir -p "$DEV_STATE"
  local log=target/dev-smoke-$1.log stack_copy=target/dev-smoke-$1-stack.json
  echo "smoke: STACK=$1"

  scripts/dev.sh >"$log" 2>&1 &
  dev=$!
  stop() {
    kill -TERM "$dev" 2>/dev/null || true
    wait "$dev" 2>/dev/null || true
  }
  trap stop EXIT

  for _ in $(seq 1800); do
    [ -f "$DEV_STATE/stack.json" ] && break
    kill -0 "$dev" 2>/dev/null || { cat "$log"; echo "smoke: make dev exited early" >&2; exit 1; }
    sleep 0.1
  done
  [ -f "$DEV_STATE/stack.json" ] || { cat "$log"; echo "smoke: make dev did not come up in 180 s" >&2; exit 1; }
  # Every process of the stack: make dev itself and all its descendants (wrangler's workerd,
  # ministack's children), not only the group leaders stack.json names.
  descendants() {
    local pid=$1 child
    for child in $(ps -o pid= --ppid "$pid"); do
      echo "$child"
      descendants "$child"
    done
  }
  pids="$dev $(descendants "$dev" | tr '\n' ' ')"
  leaders=$(python3 -c 'import json,sys; print(" ".join(str(p) for p in json.load(open(sys.argv[1]))["pids"].values()))' "$DEV_STATE/stack.json")
  for pid in $leaders; do
    grep -qw "$pid" <<<"$pids" || { echo "smoke: stack.json names PID $pid, which is not part of make dev" >&2; exit 1; }
  done
  echo "smoke: the stack runs as $(wc -w <<<"$pids") processes"

  # A second make dev on the same state folder must refuse, and leave the first one running.
  if [ "$1" = local ]; then
  if second=$(timeout 120 scripts/dev.sh 2>&1); then
    echo "smoke: a second make dev started while the first was running" >&2
    exit 1
  fi
  grep -q 'already running' <<<"$second" || { echo "smoke: a second make dev failed without saying why: $second" >&2; exit 1; }
  kill -0 "$dev" || { echo "smoke: the second make dev stopped the first" >&2; exit 1; }
  echo "smoke: a second make dev refused: ${second#dev: }"
  fi

  python3 scripts/demo.py | tee "$DEV_STATE/demo.log"
  # make dev removes stack.json when it stops; the log check below needs its credentials.
  cp "$DEV_STATE/stack.json" "$stack_copy"

  # Again just before the stop: anything the stack started since is checked too.
  pids="$pids $(descendants "$dev" | tr '\n' ' ')"
  stop
  trap - EXIT
  # An orphan is reaped by init a moment after it exits; give each a few seconds.
  alive() { local state; state=$(ps -o stat= -p "$1") && [ "${state:0:1}" != Z ]; }
  for pid in $pids; do
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      echo "smoke: process $pid ($(ps -o args= -p "$pid")) is still running after the stack stopped" >&2
      exit 1
    fi
  done
  echo "smoke: the stack stopped cleanly"

  # Nothing the stack or the scripts wrote holds a credential or the demo's personal data (the
  # store's own log is the stand-in's, not ours, and is left out).
  local logs=("$log" "$DEV_STATE/edge.log" "$DEV_STATE/build.log" "$DEV_STATE/demo.log" "$DEV_STATE/lead-inbox.log" "$DEV_STATE/mapping.log")
  if [ "$1" = local ]; then logs+=("$DEV_STATE/stream-worker.log"); else logs+=("$DEV_STATE/deploy.log"); fi
  python3 scripts/check-log-hygiene.py --stack "$stack_copy" "${logs[@]}"
}

smoke local
smoke aws
