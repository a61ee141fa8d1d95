#!/usr/bin/env bash
# The AWS half: builds the stream worker for Lambda and deploys template.yaml with SAM.
#
#   scripts/deploy-aws.sh             cfn-lint, sam validate, build, then `sam deploy` (guided
#                                     the first time, which writes samconfig.toml; later runs
#                                     reuse it)
#   scripts/deploy-aws.sh --dry-run   everything but the deploy, offline (what CI runs)
#
# ARCH=x86_64 builds and deploys for x86_64 instead of arm64 (the template's Architecture).
#
# A local AWS: with AWS_ENDPOINT_URL set (ministack, which runs CloudFormation with the SAM
# transform and provided.al2023 functions as local processes), the same template is deployed
# there, non-interactively, with the function built for this machine: SINK_SECRET_ARN (the full
# ARN of a secret there), STACK_NAME (webhooks), TABLE_NAME (receipts), and LAMBDA_BOOTSTRAP
# (a prebuilt stream-worker binary; else `cargo build --release`). tests/it/deployed.rs runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

dry_run=false
case "${1:-}" in
  --dry-run) dry_run=true ;;
  "") ;;
  *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac
arch=${ARCH:-arm64}
say() { printf 'deploy-aws: %s\n' "$*"; }
# cargo-lambda finds zig through the python3 of its own venv: that venv comes first.
export SAM_CLI_TELEMETRY=0 PATH="$PWD/.tools/cargo-lambda/bin:$PWD/.tools/aws/bin:$PATH"

say "linting template.yaml"
cfn-lint template.yaml
# sam validate runs SAM's translator (offline): a misspelt event property fails here, which
# --lint (cfn-lint's rules) lets through; --lint adds cfn-lint's rules on the transformed template.
region=${AWS_REGION:-us-east-1}
sam validate --region "$region" --template-file template.yaml >/dev/null
sam validate --region "$region" --lint --template-file template.yaml >/dev/null

if [ -n "${AWS_ENDPOINT_URL:-}" ] && ! $dry_run; then
  : "${SINK_SECRET_ARN:?a local deploy needs SINK_SECRET_ARN, the full ARN of the sink secret there}"
  case "$(uname -m)" in
    x86_64) host_arch=x86_64 ;;
    aarch64 | arm64) host_arch=arm64 ;;
    *) echo "deploy-aws: no Lambda architecture for $(uname -m)" >&2; exit 2 ;;
  esac
  bootstrap=${LAMBDA_BOOTSTRAP:-}
  if [ -z "$bootstrap" ]; then
    say "building the stream worker for this machine (cargo build --release)"
    cargo build --release -p stream-worker --quiet
    bootstrap=target/release/stream-worker
  fi
  # A folder of this deploy's own: two local deploys at once (the test suite runs them in
  # parallel) must never read each other's half-written template or binary.
  mkdir -p target/lambda-local
  work=$(mktemp -d "$PWD/target/lambda-local/deploy.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  code=$work/stream-worker
  mkdir -p "$code"
  cp "$bootstrap" "$code/bootstrap"
  # The template as it is, but for where the code is: this machine's build, not the arm64 one.
  sed "s|CodeUri: target/lambda/stream-worker/|CodeUri: $code/|" template.yaml >"$work/template.yaml"
  [ "$(grep -c "CodeUri: $code/" "$work/template.yaml")" = 2 ] ||
    { echo "deploy-aws: template.yaml's CodeUri lines changed; update the local deploy" >&2; exit 1; }
  export AWS_REGION=$region AWS_DEFAULT_REGION=$region
  bucket=sam-artifacts-local
  .tools/aws/bin/python - "$bucket" <<'PY'
import sys, boto3
s3 = boto3.client("s3")
if sys.argv[1] not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
    s3.create_bucket(Bucket=sys.argv[1])
PY
  say "deploying stack ${STACK_NAME:-webhooks} to $AWS_ENDPOINT_URL ($host_arch)"
  sam deploy --template-file "$work/template.yaml" --stack-name "${STACK_NAME:-webhooks}" \
    --s3-bucket "$bucket" --region "$region" --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND \
    --no-confirm-changeset --no-fail-on-empty-changeset --parameter-overrides \
    "SinkSecretArn=$SINK_SECRET_ARN" "Architecture=$host_arch" "TableName=${TABLE_NAME:-receipts}"
  exit 0
fi

case "$arch" in
  arm64) target_flag=--arm64 ;;
  x86_64) target_flag=--x86-64 ;;
  *) echo "ARCH must be arm64 or x86_64, not $arch" >&2; exit 2 ;;
esac
say "building the stream worker for $arch (cargo lambda build --release $target_flag)"
cargo lambda build --release "$target_flag" -p stream-worker --quiet
bootstrap=target/lambda/stream-worker/bootstrap
[ -x "$bootstrap" ] || { echo "deploy-aws: $bootstrap was not built" >&2; exit 1; }
machine=$(od -An -tx1 -j18 -N2 "$bootstrap" | tr -d ' \n')
case "$arch:$machine" in
  arm64:b700 | x86_64:3e00) ;;
  *) echo "deploy-aws: $bootstrap is not a $arch executable (ELF machine $machine)" >&2; exit 1 ;;
esac
say "built $bootstrap ($(du -k "$bootstrap" | cut -f1) KiB, $arch)"

if $dry_run; then
  say "dry run: template valid, function built; nothing deployed"
  exit 0
fi

# The template's CodeUri is the folder cargo lambda just built (it is what `sam build`'s
# cargo-lambda builder would produce), so `sam deploy` packages it as it is.
# A first create that cannot reserve reconcile's execution fails and rolls back, leaving the
# retained table behind (the retry then fails with "already exists"): refused here first.
if [ -f samconfig.toml ]; then
  stack=$(sed -n 's/^stack_name *= *"\(.*\)"/\1/p' samconfig.toml | head -1)
  saved_region=$(sed -n 's/^region *= *"\(.*\)"/\1/p' samconfig.toml | head -1)
  reconcile=$(python3 deploy/overrides.py samconfig.toml | sed -n 's/^ReconcileConcurrency=//p')
  .tools/aws/bin/python deploy/concurrency.py "$stack" "${saved_region:-$region}" "${reconcile:-1}"
  # The saved parameters with Architecture put in its place: --parameter-overrides alone would
  # replace samconfig.toml's whole list (SinkSecretArn, AlarmEmail, ...).
  mapfile -t overrides < <(python3 deploy/overrides.py samconfig.toml "Architecture=$arch")
  sam deploy --template-file template.yaml --parameter-overrides "${overrides[@]}"
else
  say "first deploy: SAM asks for the stack name, region and parameters (SinkSecretArn, AlarmEmail, ...)"
  say "and saves the answers in samconfig.toml"
  # No stack name or answers yet: says which ReconcileConcurrency this account can take.
  .tools/aws/bin/python deploy/concurrency.py - "$region" 1
  sam deploy --guided --template-file template.yaml --capabilities CAPABILITY_IAM \
    --parameter-overrides "Architecture=$arch"
fi
