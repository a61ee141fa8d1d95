#!/usr/bin/env bash
# Builds the edge Worker into edge/build with worker-build, using the wasm-bindgen, wasm-opt and
# esbuild installed by scripts/setup.sh (worker-build would otherwise download them).
set -euo pipefail
cd "$(dirname "$0")/.."
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$(command -v wasm-bindgen)}"
export WASM_OPT_BIN="$PWD/node_modules/binaryen/bin/wasm-opt"
export ESBUILD_BIN="$PWD/node_modules/@esbuild/linux-x64/bin/esbuild"
worker-build --release edge
