#!/usr/bin/env bash
# `npm start`: installs what is missing, builds the npm package (all three wasm
# builds into web/dist/) and serves the in-browser demos (web/demo/) on
# http://localhost:8080/ until Ctrl-C.
#
#   npm start                      # port 8080
#   PORT=9000 npm start            # or: npm start -- --port 9000
#   npm start -- --host 0.0.0.0    # reachable from other devices (e.g. a phone)
#
# The worked example on the command line: bash scripts/build.sh native &&
# build/native/bench/worked_example (or node build/wasm/bench/worked_example.js).
set -euo pipefail
cd "$(dirname "$0")/.."

port="${PORT:-8080}"
host="${HOST:-127.0.0.1}"
while [ $# -gt 0 ]; do
  case "$1" in
    --port|-p) port="${2:?--port needs a value}"; shift 2 ;;
    --port=*) port="${1#*=}"; shift ;;
    --host) host="${2:?--host needs a value}"; shift 2 ;;
    --host=*) host="${1#*=}"; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "start: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done

bash scripts/setup.sh
bash scripts/build.sh wasm wasm-relaxed wasm-nosimd wasm-threads wasm-relaxed-threads wasm-training package
echo
exec node web/demo/server.mjs --port "$port" --host "$host"
