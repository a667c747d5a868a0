#!/usr/bin/env bash
# `npm test`: installs what is missing, builds every tree, runs every suite.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
# Each step's start, with the seconds since npm test began.
step() { echo "test: $* (at $((SECONDS - started)) s)"; }

bash scripts/setup.sh
step build
SA_BUILD_FOR=test bash scripts/build.sh

run_ctest() {  # $1 = build dir
  step "ctest $1"
  ctest --test-dir "$1" --output-on-failure -j"$(nproc)"
}
run_ctest build/native
run_ctest build/sanitize
run_ctest build/wasm
run_ctest build/wasm-relaxed
run_ctest build/wasm-nosimd
# The thread pool and the threaded splits under ThreadSanitizer.
step tsan
# One kernel table is enough: the pool and the splits are the same code for all.
build/tsan/tests/threads_test --gtest_brief=1 \
  --gtest_filter='*/scalar:ThreadPool.*:SharedThreadPool.*'
# The C++ API under libFuzzer with ASan + UBSan, for a bounded time.
step fuzz
bash scripts/fuzz.sh 60
# The npm package (web/) against the wasm builds copied into web/dist/.
step jest
npm run --silent test:js
# index.d.ts against the code: a typed usage file, its must-fail lines, the option keys.
step types
npm run --silent test:types
# The demos (web/demo/) in Debian's chromium, driven by playwright-core.
step browser
npm run --silent test:browser
# Consumer apps against the packed tarball: Vite dev and build, webpack, an
# import map, each in chromium, on the page and in a module worker.
step bundlers
npm run --silent test:bundlers
# The demo server: path checks, symlinks and non-regular files, a symlink race.
step server
npm run --silent test:server
step "done"
