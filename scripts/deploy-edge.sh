#!/usr/bin/env bash
# The Cloudflare half: deploys the edge Worker and its Tail Worker (tail/, which ships the edge's
# log lines to the stack's EdgeLogGroup) pointed at the stack `make deploy-aws` made, and gives
# them their secrets.
#
#   scripts/deploy-edge.sh                   deploy; on the first run also create each Worker's
#                                            AWS access key (the edge's: PutItem on the table;
#                                            the Tail Worker's: PutLogEvents into the edge's log
#                                            stream) and a sender bearer token (printed once)
#   scripts/deploy-edge.sh --rotate-aws-key  a new access key for each Worker, each live in one
#                                            step, then the old ones deactivated (delete them later)
#   scripts/deploy-edge.sh --dry-run         build and bundle both offline, print the upload sizes
#
# The Tail Worker needs the Workers Paid plan: with the `tail_consumers` line removed from
# wrangler.toml (the Free plan), it is neither deployed nor given a key, and the edge alone is.
#
# STACK names the CloudFormation stack (default: stack_name in samconfig.toml). Needs AWS
# credentials allowed to read the stack and manage the two users' keys, and wrangler logged in
# (`npx wrangler login`, or CLOUDFLARE_API_TOKEN). For the tests (tests/it/deploy_edge.rs):
# WRANGLER runs another wrangler, EDGE_ROTATION_WAIT shortens the 30 s a rotation waits for the
# Worker's new version to reach every location.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=deploy
case "${1:-}" in
  --dry-run) mode=dry-run ;;
  --rotate-aws-key) mode=rotate ;;
  "") ;;
  *) echo "usage: $0 [--dry-run | --rotate-aws-key]" >&2; exit 2 ;;
esac
say() { printf 'deploy-edge: %s\n' "$*"; }
wrangler() { WRANGLER_SEND_METRICS=false WRANGLER_HIDE_BANNER=true "${WRANGLER:-node_modules/.bin/wrangler}" "$@"; }
python=.tools/aws/bin/python

if [ "$mode" = dry-run ]; then
  # Bundles exactly what `wrangler deploy` would upload ([build] runs scripts/build-edge.sh).
  CLOUDFLARE_CF_FETCH_ENABLED=false wrangler deploy --dry-run --outdir target/wrangler-dry-run
  # --outdir is relative to the config's folder; the bundle belongs in the project's target/.
  CLOUDFLARE_CF_FETCH_ENABLED=false wrangler deploy --dry-run --config tail/wrangler.toml --outdir "$PWD/target/wrangler-dry-run-tail"
  exit 0
fi

# Whether the edge names its Tail Worker (the Free plan has none: docs/deploying.md).
tailed=false
grep -Eq '^[[:space:]]*(\[\[)?[[:space:]]*tail_consumers' wrangler.toml && tailed=true

stack=${STACK:-$(sed -n 's/^stack_name *= *"\(.*\)"/\1/p' samconfig.toml 2>/dev/null | head -1)}
[ -n "$stack" ] || { echo "deploy-edge: set STACK, or run make deploy-aws first (it writes samconfig.toml)" >&2; exit 1; }
region=${AWS_REGION:-$(sed -n 's/^region *= *"\(.*\)"/\1/p' samconfig.toml 2>/dev/null | head -1)}
[ -n "$region" ] || { echo "deploy-edge: set AWS_REGION" >&2; exit 1; }

# output <OutputKey>: a value from the stack's outputs.
output() {
  STACK="$stack" REGION="$region" KEY="$1" "$python" -c '
import os, sys, boto3
stack = boto3.client("cloudformation", region_name=os.environ["REGION"]).describe_stacks(StackName=os.environ["STACK"])["Stacks"][0]
outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
name, key = os.environ["STACK"], os.environ["KEY"]
if key not in outputs:
    sys.exit(f"deploy-edge: the stack {name} has no output {key}: it was made by an older template; run make deploy-aws first")
print(outputs[key])'
}
table=$(output ReceiptsTableName)
user=$(output EdgeUserName)
logs_user=$(output EdgeLogsUserName)
log_group=$(output EdgeLogGroupName)
log_stream=$(output EdgeLogStreamName)
say "stack $stack in $region: table $table, edge user $user; log group $log_group, Tail Worker user $logs_user"

# The table and region live in wrangler.toml's [vars], so any later `wrangler deploy` keeps
# them (a deploy replaces the Worker's vars with the file's): set them to the stack's.
toml_var() { sed -n "s/^$1 = \"\(.*\)\"/\1/p" wrangler.toml; }
if [ "$(toml_var RECEIPTS_TABLE)" != "$table" ] || [ "$(toml_var AWS_REGION)" != "$region" ]; then
  sed -i "s/^RECEIPTS_TABLE = .*/RECEIPTS_TABLE = \"$table\"/; s/^AWS_REGION = .*/AWS_REGION = \"$region\"/" wrangler.toml
  say "wrangler.toml now says RECEIPTS_TABLE = \"$table\", AWS_REGION = \"$region\" (commit it)"
fi
# The same for the Tail Worker's log group, stream and region.
tail_var() { sed -n "s/^$1 = \"\(.*\)\"/\1/p" tail/wrangler.toml; }
if [ "$(tail_var EDGE_LOG_GROUP)" != "$log_group" ] || [ "$(tail_var EDGE_LOG_STREAM)" != "$log_stream" ] ||
  [ "$(tail_var AWS_REGION)" != "$region" ]; then
  sed -i "s|^EDGE_LOG_GROUP = .*|EDGE_LOG_GROUP = \"$log_group\"|; s|^EDGE_LOG_STREAM = .*|EDGE_LOG_STREAM = \"$log_stream\"|; s|^AWS_REGION = .*|AWS_REGION = \"$region\"|" tail/wrangler.toml
  say "tail/wrangler.toml now says EDGE_LOG_GROUP = \"$log_group\", EDGE_LOG_STREAM = \"$log_stream\", AWS_REGION = \"$region\" (commit it)"
fi

# key_count <user>: how many access keys the user has (IAM allows two).
key_count() {
  USER_NAME="$1" REGION="$region" "$python" -c '
import os, boto3
print(len(boto3.client("iam", region_name=os.environ["REGION"]).list_access_keys(UserName=os.environ["USER_NAME"])["AccessKeyMetadata"]))'
}

# new_access_key <file> <user>: writes the user's new access key as a wrangler secrets file,
# once IAM accepts it (a new key can be refused for a few seconds); prints the old keys' IDs.
new_access_key() {
  USER_NAME="$2" REGION="$region" "$python" -c '
import json, os, sys, boto3
iam = boto3.client("iam", region_name=os.environ["REGION"])
user = os.environ["USER_NAME"]
old = [k["AccessKeyId"] for k in iam.list_access_keys(UserName=user)["AccessKeyMetadata"]]
if len(old) >= 2:
    sys.exit(f"deploy-edge: {user} already has two access keys (the most IAM allows); delete the one the Worker does not sign with first (after a rotation, the inactive one)")
key = iam.create_access_key(UserName=user)["AccessKey"]
import time
sts = boto3.client("sts", region_name=os.environ["REGION"],
                   aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"])
for attempt in range(30):
    try:
        sts.get_caller_identity()
        break
    except Exception:
        time.sleep(2)
else:
    sys.exit(f"deploy-edge: the new key {key['AccessKeyId']} was not accepted within 60 s; nothing was changed in the Worker")
with open(sys.argv[1], "w") as f:
    json.dump({"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}, f)
print(" ".join(old))' "$1"
}
secrets_file=$(mktemp)
trap 'rm -f "$secrets_file"' EXIT

# give_worker_new_key <user> [wrangler options]: puts the new key in $secrets_file into the
# Worker, or, when the Worker does not take it, deletes that key (no one else holds its secret)
# and stops: the Worker keeps the key it has.
give_worker_new_key() {
  local owner=$1
  shift
  if ! wrangler secret bulk "$secrets_file" "$@"; then
    SECRETS_FILE="$secrets_file" USER_NAME="$owner" REGION="$region" "$python" -c '
import json, os, boto3
key = json.load(open(os.environ["SECRETS_FILE"]))["AWS_ACCESS_KEY_ID"]
boto3.client("iam", region_name=os.environ["REGION"]).delete_access_key(UserName=os.environ["USER_NAME"], AccessKeyId=key)'
    echo "deploy-edge: the Worker did not take the new key; it was deleted, and the Worker's key is unchanged" >&2
    exit 1
  fi
}

# rotate <user> [wrangler options]: a new key for that Worker, both halves in one new version
# (never a mismatched pair), then, once every location has it, the old keys deactivated.
rotate() {
  local owner=$1 old
  shift
  old=$(new_access_key "$secrets_file" "$owner")
  give_worker_new_key "$owner" "$@"
  wait=${EDGE_ROTATION_WAIT:-30}
  say "$owner's Worker signs with the new key; waiting $wait s for the new version to reach every location"
  sleep "$wait"
  for id in $old; do
    USER_NAME="$owner" KEY_ID="$id" REGION="$region" "$python" -c '
import os, boto3
boto3.client("iam", region_name=os.environ["REGION"]).update_access_key(UserName=os.environ["USER_NAME"], AccessKeyId=os.environ["KEY_ID"], Status="Inactive")'
    say "deactivated the old key $id; once deliveries are answered 202/200 and the edge's lines arrive, delete it:"
    say "  aws iam delete-access-key --user-name $owner --access-key-id $id"
  done
}

if [ "$mode" = rotate ]; then
  # Both users checked first, so IAM's two-key limit never stops a rotation halfway.
  owners=("$user")
  $tailed && owners+=("$logs_user")
  for owner in "${owners[@]}"; do
    count=$(key_count "$owner")
    if [ "$count" -ge 2 ]; then
      echo "deploy-edge: $owner already has two access keys (the most IAM allows); delete the one its Worker does not sign with first (after a rotation, the inactive one); nothing was changed" >&2
      exit 1
    fi
  done
  rotate "$user"
  $tailed && rotate "$logs_user" --config tail/wrangler.toml
  exit 0
fi

# The Tail Worker first: the edge's tail_consumers names it, and a deploy naming a Worker that
# does not exist is refused.
if $tailed; then
  say "deploying the Tail Worker"
  wrangler deploy --config tail/wrangler.toml
  if ! have_tail=$(wrangler secret list --format json --config tail/wrangler.toml); then
    echo "deploy-edge: could not list the Tail Worker's secrets; nothing was changed" >&2
    exit 1
  fi
  if ! grep -q '"AWS_ACCESS_KEY_ID"' <<<"$have_tail"; then
    say "creating the Tail Worker's access key (logs:PutLogEvents into $log_group only)"
    new_access_key "$secrets_file" "$logs_user" >/dev/null
    give_worker_new_key "$logs_user" --config tail/wrangler.toml
  fi
else
  say "wrangler.toml names no tail_consumers (the Free plan): the edge's lines stay in Workers Logs, no Tail Worker is deployed"
fi

say "deploying the Worker"
wrangler deploy

# Which secrets the Worker has. A listing that fails must not pass for "none": that would
# replace the live sender credential and add a third access key.
if ! have=$(wrangler secret list --format json); then
  echo "deploy-edge: could not list the Worker's secrets; nothing was changed" >&2
  exit 1
fi
if ! grep -q '"AWS_ACCESS_KEY_ID"' <<<"$have"; then
  say "creating the edge's access key (dynamodb:PutItem on $table only)"
  new_access_key "$secrets_file" "$user" >/dev/null
  give_worker_new_key "$user"
fi
if ! grep -q '"WEBHOOK_' <<<"$have"; then
  token=$("$python" -c 'import secrets; print(secrets.token_urlsafe(32))')
  printf '{"WEBHOOK_BEARER_TOKENS": "%s"}' "$token" >"$secrets_file"
  wrangler secret bulk "$secrets_file"
  say "sender credential created. Give Static Forms this header (shown once):"
  say "  Authorization: Bearer $token"
fi
say "done: GET https://<your worker>/healthz answers 200 when the configuration is complete"
