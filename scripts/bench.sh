#!/usr/bin/env bash
# `npm run bench`: the speed comparison against the peers (see bench/README.md).
# Installs what is missing, builds the native tree and the three wasm builds,
# installs the benchmark peers (bench/package.json: onnxruntime-web,
# onnxruntime-node, tfjs; a separate npm project so `npm test` never installs
# them), then runs bench/js/run.js in one process tree.
#
#   npm run bench                         # default, about 10 minutes
#   npm run bench -- --quick              # a few rounds, about 3 minutes
#   npm run bench -- --json out.json --md out.md --workloads S2,S4
#   SA_BENCH_SKIP_BUILD=1 npm run bench   # skip setup and build (rerun)
#
# Options after `--` go to bench/js/run.js (`--help` lists them); relative
# file names are taken from the directory npm was started in.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CALLER_DIR="${INIT_CWD:-$PWD}"
cd "$ROOT"

if [ "${SA_BENCH_SKIP_BUILD:-0}" != 1 ]; then
  bash scripts/setup.sh
  bash scripts/build.sh native wasm wasm-relaxed wasm-nosimd wasm-threads wasm-relaxed-threads wasm-training package
fi
for f in web/dist/simd_attention_simd.wasm web/dist/simd_attention_relaxed.wasm \
         web/dist/simd_attention_nosimd.wasm web/dist/simd_attention_training.wasm \
         build/native/bench/kernels_bench; do
  [ -e "$f" ] || { echo "bench: $f is missing; run bash scripts/build.sh native wasm wasm-relaxed wasm-nosimd wasm-threads wasm-relaxed-threads wasm-training package" >&2; exit 1; }
done

# Measured FMA throughput per vector width (x86-64 only; the README's peak).
if [ "$(uname -m)" = x86_64 ]; then
  mkdir -p build/bench-js
  if [ ! -x build/bench-js/fma_peak ] || [ bench/js/native/fma_peak.c -nt build/bench-js/fma_peak ]; then
    cc -O2 -Wall -o build/bench-js/fma_peak bench/js/native/fma_peak.c
  fi
fi

# D1 through the C++ API's KV cache (not in the JS package yet): a preview,
# reported apart from the table. Not fatal if it does not build.
if [ ! -e build/bench-js/decode_bench.js ] || [ bench/js/native/decode_bench.cc -nt build/bench-js/decode_bench.js ] ||
   [ build/wasm/src/libsimd_attention.a -nt build/bench-js/decode_bench.js ] ||
   [ build/native/src/libsimd_attention.a -nt build/bench-js/decode_bench ]; then
  bash bench/js/tools/decode_bench.sh --build-only || echo "bench: D1 preview (decode_bench) did not build; skipped" >&2
fi

# The peers, from the npm registry only (no CDN, no model files). onnxruntime-node
# ships its CPU binaries in the package; its install script would only fetch
# optional CUDA files, so it is told to skip that (npm >= 11 does not run it
# unless approved anyway).
if [ ! -f bench/node_modules/.package-lock.json ] ||
   [ bench/node_modules/.package-lock.json -ot bench/package-lock.json ]; then
  echo "bench: npm ci --prefix bench"
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix bench --no-audit --no-fund
  touch bench/node_modules/.package-lock.json
fi

# Measure a snapshot of the package, so that a rebuild of web/dist while the
# benchmark runs (minutes) cannot mix two builds.
snap="$ROOT/build/bench-js/web-snapshot"
rm -rf "$snap" && mkdir -p "$snap" && cp -r web/package.json web/index.js web/src web/dist "$snap/"
cd "$CALLER_DIR"
# node-wasm.sh: with --experimental-wasm-relaxed-simd where the node needs it
# (Node 20), for the relaxed-SIMD rows. The peers load the same .wasm files
# either way (onnxruntime-web ships one SIMD build and only checks for
# relaxed SIMD when asked to; tfjs picks its SIMD build by its own flag).
SA_BENCH_WEB_DIR="$snap" exec bash "$ROOT/scripts/node-wasm.sh" --expose-gc "$ROOT/bench/js/run.js" "$@"
