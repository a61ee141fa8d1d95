#!/usr/bin/env bash
# `make dev`: the whole path on this machine, on 127.0.0.1 only, until Ctrl-C or SIGTERM.
#   ministack (DynamoDB + Streams + IAM + CloudWatch Logs, SigV4 checked)   DYNAMODB_PORT, default 4566
#   the built edge Worker in workerd (wrangler dev)      EDGE_PORT, default 8787, with its
#     Tail Worker (tail/) shipping the edge's lines into the local CloudWatch Logs
#   the lead inbox (scripts/lead-inbox.py, INBOX_PORT, default 8790): what a CRM taking signed
#     webhooks sees; it stores each lead, with the fields scripts/dev-mapping.toml maps, in
#     .dev/leads.db. Both stacks write through the webhook sink, with that lead mapping.
#   STACK=local (the default): stream-worker poll
#   STACK=aws: the production topology. ministack as a whole local AWS, template.yaml deployed
#     to it by scripts/deploy-aws.sh (table, stream mapping, the stream and reconcile functions
#     under their roles, the sink's secret in Secrets Manager, the mapping in it), and the
#     Worker signing with a key of the stack's EdgeUser.
# Every process is started in its own process group and stopped with it on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

DYNAMODB_PORT=${DYNAMODB_PORT:-4566}
EDGE_PORT=${EDGE_PORT:-8787}
REGION=us-east-1
TABLE=receipts
EDGE_LOG_GROUP=/webhook-receiver/$TABLE/edge
STATE=${DEV_STATE:-.dev}
STACK=${STACK:-local}
INBOX_PORT=${INBOX_PORT:-8790}
mkdir -p "$STATE"

say() { printf 'dev: %s\n' "$*"; }
die() { printf 'dev: %s\n' "$*" >&2; exit 1; }
case "$STACK" in local | aws) ;; *) die "STACK is local (the default) or aws, not $STACK" ;; esac

# One stack at a time: a live PID from the last run means it is still up.
if [ -f "$STATE/pids" ]; then
  for pid in $(cat "$STATE/pids"); do
    if kill -0 "$pid" 2>/dev/null; then
      die "the local stack is already running (PID $pid; see $STATE/stack.json). Stop it with Ctrl-C in its terminal, or: kill -TERM -$pid"
    fi
  done
fi
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port_busy "$DYNAMODB_PORT" && die "port $DYNAMODB_PORT is in use; choose another with DYNAMODB_PORT=<port> make dev"
port_busy "$EDGE_PORT" && die "port $EDGE_PORT is in use; choose another with EDGE_PORT=<port> make dev"
port_busy "$INBOX_PORT" && die "port $INBOX_PORT is in use; choose another with INBOX_PORT=<port> make dev"

say "building the edge Worker and the stream worker"
scripts/build-edge.sh >"$STATE/build.log" 2>&1 || { tail -20 "$STATE/build.log"; die "the Worker build failed (log: $STATE/build.log)"; }
cargo build -q -p stream-worker

pids=()
names=()
cleanup() {
  trap - EXIT INT TERM
  if [ ${#pids[@]} -gt 0 ]; then
    say "stopping ${pids[*]}"
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    done
  fi
  rm -f "$STATE/pids" "$STATE/stack.json"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started() { names+=("$1"); pids+=("$2"); printf '%s\n' "${pids[@]}" >"$STATE/pids"; }
wait_for() { # what, seconds, command...
  local what=$1 seconds=$2; shift 2
  for _ in $(seq $((seconds * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "$what did not come up within ${seconds} s (logs in $STATE/)"
}

STORE=http://127.0.0.1:$DYNAMODB_PORT
say "starting ministack on 127.0.0.1:$DYNAMODB_PORT"
mkdir -p "$STATE/ministack"
# STACK=aws: every service, and the functions it runs reach it through the SDK's variable.
services=(SERVICES=dynamodb,dynamodbstreams,iam,logs)
[ "$STACK" = aws ] && services=(AWS_ENDPOINT_URL="$STORE")
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AUTH=true BIND_HOST=127.0.0.1 GATEWAY_PORT="$DYNAMODB_PORT" \
  "${services[@]}" TMPDIR="$PWD/$STATE/ministack" \
  setsid .tools/ministack/bin/ministack >"$STATE/ministack.log" 2>&1 </dev/null &
started ministack $!
wait_for ministack 30 curl -sf "$STORE/_ministack/health"

# Setup calls use the root key, which ministack does not check; the edge and the worker sign
# with an IAM user's key, which it does.
root_auth="AWS4-HMAC-SHA256 Credential=test/20260101/$REGION/SERVICE/aws4_request, SignedHeaders=host;x-amz-date, Signature=0"
iam() {
  curl -sf -X POST "$STORE/" -H "X-Amz-Date: 20260101T000000Z" -H "Authorization: ${root_auth/SERVICE/iam}" \
    -H 'Content-Type: application/x-www-form-urlencoded' --data-urlencode Version=2010-05-08 "$@"
}
logs() { # target, JSON body
  curl -s -X POST "$STORE/" -H "X-Amz-Date: 20260101T000000Z" -H "Authorization: ${root_auth/SERVICE/logs}" \
    -H 'Content-Type: application/x-amz-json-1.1' -H "X-Amz-Target: Logs_20140328.$1" -d "$2"
}
ddb() { # target, JSON body
  curl -s -X POST "$STORE/" -H "X-Amz-Date: 20260101T000000Z" -H "Authorization: ${root_auth/SERVICE/dynamodb}" \
    -H 'Content-Type: application/x-amz-json-1.0' -H "X-Amz-Target: DynamoDB_20120810.$1" -d "$2"
}
user_key() { # user, policy JSON; prints "<key id> <secret>"
  iam --data-urlencode Action=CreateUser --data-urlencode UserName="$1" >/dev/null || true
  iam --data-urlencode Action=PutUserPolicy --data-urlencode UserName="$1" --data-urlencode PolicyName=ddb \
    --data-urlencode "PolicyDocument=$2" >/dev/null
  local xml
  xml=$(iam --data-urlencode Action=CreateAccessKey --data-urlencode UserName="$1")
  printf '%s %s\n' "$(sed -n 's:.*<AccessKeyId>\(.*\)</AccessKeyId>.*:\1:p' <<<"$xml")" \
    "$(sed -n 's:.*<SecretAccessKey>\(.*\)</SecretAccessKey>.*:\1:p' <<<"$xml")"
}
# The sink, in both stacks: the webhook sink, signing with a fresh secret, into the local lead
# inbox, with the lead mapping of scripts/dev-mapping.toml.
MAPPING=scripts/dev-mapping.toml
SINK_URL=http://127.0.0.1:$INBOX_PORT/leads
sink_secret="whsec_$(python3 -c 'import base64, secrets; print(base64.b64encode(secrets.token_bytes(32)).decode())')"
say "starting the lead inbox on 127.0.0.1:$INBOX_PORT"
LEAD_INBOX_SECRET="$sink_secret" setsid python3 scripts/lead-inbox.py --port "$INBOX_PORT" --db "$STATE/leads.db" \
  >"$STATE/lead-inbox.log" 2>&1 </dev/null &
started lead_inbox $!
wait_for "the lead inbox" 10 grep -q listening "$STATE/lead-inbox.log"
# The worker's sink settings are these alone: none from the caller's environment (a secret's
# ARN, a mapping's text), and no proxy between it and the inbox.
sink_env=(env -u SINK_SECRET_ARN -u LEAD_MAPPING NO_PROXY=127.0.0.1,localhost LEAD_SINK="$SINK_URL"
  WEBHOOK_SINK_SECRET="$sink_secret" LEAD_MAPPING_FILE=$MAPPING)
# The mapping is checked before anything runs with it: a wrong line is named here.
"${sink_env[@]}" RECEIPTS_TABLE=$TABLE AWS_REGION=$REGION target/debug/stream-worker mapping check >"$STATE/mapping.log" 2>&1 || { cat "$STATE/mapping.log"; die "$MAPPING is refused"; }
if [ "$STACK" = aws ]; then
  settings=$(SINK="$SINK_URL" SECRET="$sink_secret" MAPPING="$MAPPING" python3 -c 'import json, os
print(json.dumps({"Name": "webhooks-dev/sink", "SecretString": json.dumps(
    {"LEAD_SINK": os.environ["SINK"], "WEBHOOK_SINK_SECRET": os.environ["SECRET"],
     "LEAD_MAPPING": open(os.environ["MAPPING"]).read()})}))')
  created=$(curl -s -X POST "$STORE/" -H "X-Amz-Date: 20260101T000000Z" -H "Authorization: ${root_auth/SERVICE/secretsmanager}" \
    -H 'Content-Type: application/x-amz-json-1.1' -H "X-Amz-Target: secretsmanager.CreateSecret" -d "$settings")
  secret_arn=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["ARN"])' "$created") ||
    die "could not create the sink's secret: $created"
  say "deploying template.yaml to the local AWS (scripts/deploy-aws.sh, log: $STATE/deploy.log)"
  AWS_ENDPOINT_URL="$STORE" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_SESSION_TOKEN= AWS_REGION=$REGION \
    SINK_SECRET_ARN="$secret_arn" STACK_NAME=webhooks TABLE_NAME=$TABLE LAMBDA_BOOTSTRAP=target/debug/stream-worker \
    scripts/deploy-aws.sh >"$STATE/deploy.log" 2>&1 || { tail -20 "$STATE/deploy.log"; die "the local deploy failed"; }
  # The Worker signs with a key of the stack's EdgeUser, exactly as make deploy-edge sets it up.
  edge_user=$(iam --data-urlencode Action=ListUsers | { grep -o '<UserName>[^<]*EdgeUser[^<]*</UserName>' || true; } |
    sed 's:</*UserName>::g' | head -1)
  [ -n "$edge_user" ] || die "the deployed stack has no EdgeUser"
  xml=$(iam --data-urlencode Action=CreateAccessKey --data-urlencode UserName="$edge_user")
  EDGE_KEY_ID=$(sed -n 's:.*<AccessKeyId>\(.*\)</AccessKeyId>.*:\1:p' <<<"$xml")
  EDGE_SECRET_KEY=$(sed -n 's:.*<SecretAccessKey>\(.*\)</SecretAccessKey>.*:\1:p' <<<"$xml")
  # The Tail Worker signs with a key of the stack's EdgeLogsUser, as make deploy-edge sets it up.
  logs_user=$(iam --data-urlencode Action=ListUsers | { grep -o '<UserName>[^<]*EdgeLogsUser[^<]*</UserName>' || true; } |
    sed 's:</*UserName>::g' | head -1)
  [ -n "$logs_user" ] || die "the deployed stack has no EdgeLogsUser"
  xml=$(iam --data-urlencode Action=CreateAccessKey --data-urlencode UserName="$logs_user")
  LOGS_KEY_ID=$(sed -n 's:.*<AccessKeyId>\(.*\)</AccessKeyId>.*:\1:p' <<<"$xml")
  LOGS_SECRET_KEY=$(sed -n 's:.*<SecretAccessKey>\(.*\)</SecretAccessKey>.*:\1:p' <<<"$xml")
  # An operator's key for `stream-worker receipts` and `reconcile` (docs/operating.md).
  TABLE_ARN="arn:aws:dynamodb:$REGION:*:table/$TABLE"
  read -r ACCESS_KEY_ID SECRET_ACCESS_KEY < <(user_key local-operator "{\"Version\":\"2012-10-17\",\"Statement\":[
    {\"Effect\":\"Allow\",\"Action\":[\"dynamodb:GetItem\",\"dynamodb:UpdateItem\",\"dynamodb:Query\",\"dynamodb:Scan\",\"dynamodb:DescribeTable\"],
     \"Resource\":[\"$TABLE_ARN\",\"$TABLE_ARN/index/*\"]}]}")
  [ -n "$EDGE_KEY_ID" ] && [ -n "$EDGE_SECRET_KEY" ] && [ -n "$ACCESS_KEY_ID" ] && [ -n "$SECRET_ACCESS_KEY" ] &&
    [ -n "$LOGS_KEY_ID" ] && [ -n "$LOGS_SECRET_KEY" ] || die "could not create the IAM access keys"
else
  # Two identities, each with what it does and nothing more: the edge's is template.yaml's
  # EdgeUser (PutItem on the table), so a call the Worker's code adds fails here as in production;
  # the local stream worker's (its poll mode also finds the stream with DescribeTable) also runs
  # the operator's commands (list: Scan; reconcile: Query on the pending index).
  TABLE_ARN="arn:aws:dynamodb:$REGION:*:table/$TABLE"
  read -r EDGE_KEY_ID EDGE_SECRET_KEY < <(user_key local-edge \
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"dynamodb:PutItem\",\"Resource\":\"$TABLE_ARN\"}]}")
  read -r ACCESS_KEY_ID SECRET_ACCESS_KEY < <(user_key local-worker "{\"Version\":\"2012-10-17\",\"Statement\":[
    {\"Effect\":\"Allow\",\"Action\":[\"dynamodb:DescribeTable\",\"dynamodb:GetItem\",\"dynamodb:BatchGetItem\",\"dynamodb:UpdateItem\",\"dynamodb:Scan\",\"dynamodb:Query\"],
     \"Resource\":[\"$TABLE_ARN\",\"$TABLE_ARN/index/*\"]},
    {\"Effect\":\"Allow\",\"Action\":[\"dynamodb:DescribeStream\",\"dynamodb:GetRecords\",\"dynamodb:GetShardIterator\",\"dynamodb:ListStreams\"],
     \"Resource\":[\"$TABLE_ARN/stream/*\",\"*\"]}]}")
  # The edge's log group and stream, and the Tail Worker's key: template.yaml's EdgeLogGroup,
  # EdgeLogStream and EdgeLogsUser (PutLogEvents into that stream; ministack checks the group).
  logs CreateLogGroup "{\"logGroupName\":\"$EDGE_LOG_GROUP\"}" >/dev/null
  logs CreateLogStream "{\"logGroupName\":\"$EDGE_LOG_GROUP\",\"logStreamName\":\"edge\"}" >/dev/null
  GROUP_ARN="arn:aws:logs:$REGION:*:log-group:$EDGE_LOG_GROUP"
  read -r LOGS_KEY_ID LOGS_SECRET_KEY < <(user_key local-edge-logs \
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"logs:PutLogEvents\",\"Resource\":[\"$GROUP_ARN:log-stream:edge\",\"$GROUP_ARN\"]}]}")
  [ -n "$EDGE_KEY_ID" ] && [ -n "$EDGE_SECRET_KEY" ] && [ -n "$ACCESS_KEY_ID" ] && [ -n "$SECRET_ACCESS_KEY" ] &&
    [ -n "$LOGS_KEY_ID" ] && [ -n "$LOGS_SECRET_KEY" ] || die "could not create the IAM access keys"

  # The table, as production has it (deploy/receipts-table.json: key pk, stream with images, the
  # sparse pending and failed indexes), TTL on expiresAt (idempotent).
  created=$(ddb CreateTable "$(TABLE="$TABLE" python3 -c 'import json, os, sys
table = json.load(open("deploy/receipts-table.json"))
table["TableName"] = os.environ["TABLE"]
print(json.dumps(table))')")
  case "$created" in *TableDescription*|*ResourceInUseException*) ;; *) die "CreateTable failed: $created" ;; esac
  ddb UpdateTimeToLive "{\"TableName\":\"$TABLE\",\"TimeToLiveSpecification\":{\"Enabled\":true,\"AttributeName\":\"expiresAt\"}}" >/dev/null

fi

# Local secrets: created once from the example, with a fresh bearer token.
if [ ! -f .dev.vars ]; then
  token=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
  sed "s/^WEBHOOK_BEARER_TOKENS=.*/WEBHOOK_BEARER_TOKENS=$token/" .dev.vars.example >.dev.vars
  say "created .dev.vars with a new bearer token"
fi
# Every registered sender profile (`stream-worker profiles`) is enabled and gets a local
# secret in the variable it names, added once (also to a .dev.vars made before it existed).
target/debug/stream-worker profiles >"$STATE/profiles.json"
python3 - "$STATE/profiles.json" <<'PY'
import base64, json, re, secrets, sys
with open(".dev.vars") as f:
    present = {m.group(1) for m in re.finditer(r"^(\w+)=", f.read(), re.M)}
for profile in json.load(open(sys.argv[1])):
    auth = profile["auth"]
    if "variable" not in auth or auth["variable"] in present:
        continue
    secret = secrets.token_urlsafe(24)
    if auth["scheme"] == "standard-webhooks":
        secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    with open(".dev.vars", "a") as f:
        f.write(f"{auth['variable']}={secret}\n")
    print(f"dev: added a local {auth['variable']} to .dev.vars", file=sys.stderr)
PY
first_value() { sed -n "s/^$1=\([^,]*\).*/\1/p" .dev.vars | head -1; }
BEARER=$(first_value WEBHOOK_BEARER_TOKENS)
PROFILES=$(python3 -c 'import json, sys; print(",".join(p["name"] for p in json.load(open(sys.argv[1]))))' "$STATE/profiles.json")

# The Tail Worker's settings: it ships the edge's lines into this store's CloudWatch Logs, as
# it does into the stack's. wrangler dev reads a .dev.vars beside each configuration, so this
# stack's copy of tail/wrangler.toml (its code the repository's) and its .dev.vars are in
# $STATE, never shared with another stack.
mkdir -p "$STATE/tail"
sed "s|^main = .*|main = \"$PWD/tail/index.mjs\"|" tail/wrangler.toml >"$STATE/tail/wrangler.toml"
cat >"$STATE/tail/.dev.vars" <<VARS
AWS_ACCESS_KEY_ID=$LOGS_KEY_ID
AWS_SECRET_ACCESS_KEY=$LOGS_SECRET_KEY
AWS_REGION=$REGION
EDGE_LOG_GROUP=$EDGE_LOG_GROUP
EDGE_LOG_STREAM=edge
LOGS_ENDPOINT=$STORE
VARS

say "starting the edge Worker and its Tail Worker on 127.0.0.1:$EDGE_PORT"
WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_HIDE_BANNER=true \
  setsid node_modules/.bin/wrangler dev -c wrangler.toml -c "$STATE/tail/wrangler.toml" \
  --ip 127.0.0.1 --port "$EDGE_PORT" --show-interactive-dev-session=false \
  --var "DYNAMODB_ENDPOINT:$STORE" --var "AWS_REGION:$REGION" --var "RECEIPTS_TABLE:$TABLE" \
  --var "AWS_ACCESS_KEY_ID:$EDGE_KEY_ID" --var "AWS_SECRET_ACCESS_KEY:$EDGE_SECRET_KEY" \
  --var "WEBHOOK_PROFILES:$PROFILES" \
  >"$STATE/edge.log" 2>&1 </dev/null &
started edge $!
EDGE=http://127.0.0.1:$EDGE_PORT
wait_for "the edge Worker" 120 curl -sf "$EDGE/healthz"

if [ "$STACK" = local ]; then
  say "starting stream-worker poll"
  "${sink_env[@]}" AWS_REGION=$REGION AWS_ENDPOINT_URL_DYNAMODB="$STORE" AWS_ENDPOINT_URL_DYNAMODB_STREAMS="$STORE" \
    AWS_ACCESS_KEY_ID="$ACCESS_KEY_ID" AWS_SECRET_ACCESS_KEY="$SECRET_ACCESS_KEY" AWS_SESSION_TOKEN= \
    RECEIPTS_TABLE=$TABLE POLL_CHECKPOINT="$STATE/stream-checkpoint.json" \
    setsid target/debug/stream-worker poll >"$STATE/stream-worker.log" 2>&1 </dev/null &
  started stream_worker $!
  wait_for "the stream worker" 30 grep -q "polling the stream" "$STATE/stream-worker.log"
fi

STACK_NOTE="local: stream-worker poll, with the stream worker's own key"
if [ "$STACK" = aws ]; then
  STACK_NOTE="aws: template.yaml deployed here (stream mapping, functions under their roles)"
fi
PIDS=$(paste -d= <(printf '%s\n' "${names[@]}") <(printf '%s\n' "${pids[@]}") | paste -sd,)
python3 - "$STATE/stack.json" "$STATE/profiles.json" <<PY
import json, re, sys
# Each profile's route and the secret (or, for Static Forms, the bearer token) its sender needs.
with open(".dev.vars") as f:
    local = dict(re.findall(r"^(\w+)=([^,\n]*)", f.read(), re.M))
secrets = {p["name"]: local.get(p["auth"].get("variable", ""), "$BEARER") for p in json.load(open(sys.argv[2]))}
json.dump({
    "edge_url": "$EDGE", "dynamodb_endpoint": "$STORE", "region": "$REGION", "table": "$TABLE",
    "access_key_id": "$ACCESS_KEY_ID", "secret_access_key": "$SECRET_ACCESS_KEY",
    "edge_secret_access_key": "$EDGE_SECRET_KEY", "edge_log_group": "$EDGE_LOG_GROUP",
    "bearer_token": "$BEARER", "leads_db": "$STATE/leads.db",
    "profiles": {name: {"url": "$EDGE/webhooks/" + name, "secret": secret} for name, secret in secrets.items()},
    "stack": "$STACK", "sink_secret": "${sink_secret:-}",
    "pids": {name: int(pid) for name, pid in (part.split("=") for part in "$PIDS".split(","))},
}, open(sys.argv[1], "w"), indent=2)
PY

cat <<BANNER

  The local stack is up (details in $STATE/stack.json, logs in $STATE/*.log).

    stack     $STACK_NOTE
    edge      $EDGE   (POST /webhooks/{$PROFILES}, GET /healthz)
    DynamoDB  $STORE   table "$TABLE", signatures checked
    leads     the lead inbox, 127.0.0.1:$INBOX_PORT, into $STATE/leads.db (sqlite3 $STATE/leads.db 'select * from leads')
    mapping   $MAPPING: each lead's mapped answers in its fields column

  Send a delivery:

    curl -i $EDGE/webhooks/staticforms \\
      -H 'Content-Type: application/json' \\
      -H "Authorization: Bearer \$(sed -n 's/^WEBHOOK_BEARER_TOKENS=\([^,]*\).*/\\1/p' .dev.vars)" \\
      -H 'Idempotency-Key: staticforms:form.submitted:sub_hello_1' \\
      -d '{"event":"form.submitted","timestamp":1796019713,"data":{"submissionId":"sub_hello_1","formData":{"name":"Ada","email":"ada@example.com","message":"Hello"}}}'

  Then, in another terminal: make demo.  Ctrl-C stops everything.

BANNER

# Run until a part stops on its own or we are told to stop; cleanup stops the rest.
wait -n "${pids[@]}"
die "a part of the stack stopped on its own; see $STATE/*.log"
