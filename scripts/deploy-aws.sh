#!/usr/bin/env bash
# The AWS half: builds the stream worker for Lambda and deploys template.yaml with SAM.
#
#   scripts/deploy-aws.sh             cfn-lint, sam validate, build, then `sam deploy` (guided
#                                     the first time, which writes samconfig.toml; later runs
#                                     reuse it)
#   scripts/deploy-aws.sh --dry-run   everything but the deploy, offline (what CI runs)
#
# ARCH=x86_64 builds and deploys for x86_64 instead of arm64 (the template's Architecture).
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
if [ -f samconfig.toml ]; then
  # The saved parameters with Architecture put in its place: --parameter-overrides alone would
  # replace samconfig.toml's whole list (SinkSecretArn, AlarmEmail, ...).
  mapfile -t overrides < <(python3 deploy/overrides.py samconfig.toml "Architecture=$arch")
  sam deploy --template-file template.yaml --parameter-overrides "${overrides[@]}"
else
  say "first deploy: SAM asks for the stack name, region and parameters (SinkSecretArn, AlarmEmail, ...)"
  say "and saves the answers in samconfig.toml"
  sam deploy --guided --template-file template.yaml --capabilities CAPABILITY_IAM \
    --parameter-overrides "Architecture=$arch"
fi
