#!/usr/bin/env bash
# Builds the edge Worker into edge/build with worker-build, using the wasm-bindgen, wasm-opt and
# esbuild installed by scripts/setup.sh (worker-build would otherwise download them).
# `make bench` passes another crate (bench/floor-rs) and `make size` another output folder
# (relative to the crate) and options for cargo: scripts/build-edge.sh [crate [out-dir [cargo options]]].
set -euo pipefail
cd "$(dirname "$0")/.."
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$(command -v wasm-bindgen || true)}"
export WASM_OPT_BIN="$PWD/node_modules/binaryen/bin/wasm-opt"
export ESBUILD_BIN="$PWD/node_modules/@esbuild/linux-x64/bin/esbuild"
# A missing tool is an error here, not a download (this machine reaches only the registries).
for tool in "$WASM_BINDGEN_BIN" "$WASM_OPT_BIN" "$ESBUILD_BIN" "$(command -v worker-build || true)"; do
  [ -n "$tool" ] && [ -x "$tool" ] || {
    echo "build-edge: missing ${tool:-wasm-bindgen or worker-build}; run scripts/setup.sh (make setup)" >&2
    exit 1
  }
done
worker-build --release --out-dir "${2:-build}" "${1:-edge}" "${@:3}"
