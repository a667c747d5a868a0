#!/usr/bin/env bash
# `npm test`: installs what is missing, builds every tree, runs every suite.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh

run_ctest() {  # $1 = build dir
  echo "test: ctest $1"
  ctest --test-dir "$1" --output-on-failure -j"$(nproc)"
}
run_ctest build/native
run_ctest build/sanitize
run_ctest build/wasm
run_ctest build/wasm-relaxed
run_ctest build/wasm-nosimd
# The thread pool and the threaded splits under ThreadSanitizer.
echo "test: tsan"
# One kernel table is enough: the pool and the splits are the same code for all.
build/tsan/tests/threads_test --gtest_brief=1 \
  --gtest_filter='*/scalar:ThreadPool.*:SharedThreadPool.*'
# The C++ API under libFuzzer with ASan + UBSan, for a bounded time.
echo "test: fuzz"
bash scripts/fuzz.sh 60
# The npm package (web/) against the wasm builds copied into web/dist/.
echo "test: jest"
npm run --silent test:js
# index.d.ts against the code: a typed usage file, its must-fail lines, the option keys.
echo "test: types"
npm run --silent test:types
# The demos (web/demo/) in Debian's chromium, driven by playwright-core.
echo "test: browser"
npm run --silent test:browser
# Consumer apps against the packed tarball: Vite dev and build, webpack, an
# import map, each in chromium, on the page and in a module worker.
echo "test: bundlers"
npm run --silent test:bundlers
# The demo server: path checks, symlinks and non-regular files, a symlink race.
echo "test: server"
npm run --silent test:server
