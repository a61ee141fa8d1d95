#!/usr/bin/env bash
# Installs every tool the tests and the local stack need, pinned, skipping what is already
# present at the right version, so a second run takes seconds. See ../shared/TOOLCHAIN.md for
# why each recipe is the way it is (this machine reaches only the package registries).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*"; }

rust_targets() {
  local installed
  installed=$(rustup target list --installed)
  # aarch64-unknown-linux-gnu: the Lambda function's default architecture (arm64).
  for target in wasm32-unknown-unknown x86_64-unknown-none aarch64-unknown-linux-gnu; do
    grep -qx "$target" <<<"$installed" || rustup target add "$target"
  done
}

apt_packages() {
  local missing=()
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  [ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
  # The PostgreSQL TLS tests make their CA and server certificate with it.
  [ -x /usr/bin/openssl ] || missing+=(openssl)
  # it::cost counts the core's instructions with it (a count, not a clock).
  [ -x /usr/bin/valgrind ] || missing+=(valgrind)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} (about a minute)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# wasm-bindgen's CLI must equal the wasm-bindgen crate in Cargo.lock exactly.
wasm_bindgen_cli() {
  local want have
  want=$(cargo pkgid wasm-bindgen | sed 's/.*@//')
  have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
  if [ "$have" != "$want" ]; then
    log "installing wasm-bindgen-cli $want (2-5 minutes)"
    # Not --locked: the locked tree wants a webpki-roots release the registry here lacks.
    cargo install -q wasm-bindgen-cli --version "=$want"
  fi
}

worker_build() {
  local want=0.8.7
  if [ "$(worker-build --version 2>/dev/null | awk '{print $NF}')" != "$want" ]; then
    log "installing worker-build $want (several minutes)"
    cargo install -q worker-build --version "=$want"
  fi
}

# cargo-mutants: `make mutants` and the mutants of a change in `make test` (docs/testing.md).
cargo_mutants() {
  local want=27.1.0
  if [ "$(cargo mutants --version 2>/dev/null | awk '{print $NF}')" != "$want" ]; then
    log "installing cargo-mutants $want (about 2 minutes)"
    cargo install -q cargo-mutants --locked --version "=$want"
  fi
}

# wrangler (with workerd and Miniflare), binaryen's wasm-opt and esbuild, pinned by package-lock.json.
node_tools() {
  local stamp=node_modules/.installed-package-lock.json
  if [ ! -x node_modules/.bin/wrangler ] || ! cmp -s package-lock.json "$stamp"; then
    log "installing npm packages from package-lock.json"
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json "$stamp"
  fi
}

# The DynamoDB-compatible server the tests run, with SigV4 checks (ministack, from PyPI), and
# beside it the SAM translator, so that its CloudFormation deploys template.yaml as it is (the
# local AWS of tests/it/deployed.rs). boto3 pinned to ministack's botocore.
ministack() {
  venv_tool ministack ministack==1.5.33 aws-sam-translator==1.115.0 boto3==1.43.106
}

# A Python tool in its own venv under .tools/<name>: `venv_tool <name> <probe module> <pins...>`,
# reinstalled only when a pinned version differs.
venv_tool() {
  local name=$1 venv=.tools/$1
  shift
  local pins=("$@") ok=true pin
  for pin in "${pins[@]}"; do
    [ "$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('${pin%%==*}'))" 2>/dev/null)" = "${pin#*==}" ] || ok=false
  done
  if ! $ok; then
    log "installing ${pins[*]}"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}"
  fi
}

rust_targets
apt_packages
wasm_bindgen_cli
worker_build
node_tools
ministack
# `setup.sh bench`: only what `make bench` and `make size` use (a fresh `make bench` is timed).
if [ "${1:-}" = bench ]; then
  log "ready (for the benchmarks)"
  exit 0
fi
cargo_mutants
# cargo-lambda (with zig) builds the Lambda function for arm64; see ../shared/TOOLCHAIN.md.
venv_tool cargo-lambda cargo-lambda==1.9.2
# The SAM CLI (sam validate, sam deploy) and cfn-lint, for template.yaml and the deploy scripts.
venv_tool aws aws-sam-cli==1.170.0 cfn-lint==1.58.0
log "ready"
