#!/usr/bin/env bash
# `npm start`: installs what is missing, builds, and walks the worked example
# (B=2, T=10, d_model=512, 8 heads) natively and in wasm under node.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh native wasm
echo
echo "=== native ($(uname -m)) ==="
build/native/bench/worked_example
echo "=== wasm-simd128 under node $(node --version) ==="
node build/wasm/bench/worked_example.js
