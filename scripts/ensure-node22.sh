#!/usr/bin/env bash
# Installs Node.js 22 (npm's `node` package, which ships the binary) under
# .tmp/node22 and the real OpenTelemetry/GenAI instrumentation libraries of
# e2e/otelsdk (npm ci, pinned by its package-lock.json). The current majors
# of those libraries need Node 22+; Debian 12's is 20. Prints the path of the
# node binary. Idempotent and quiet when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
node="$root/.tmp/node22/node_modules/node/bin/node"
if ! "$node" --version 2>/dev/null | grep -q '^v22\.'; then
  mkdir -p .tmp/node22
  npm install --prefix .tmp/node22 --no-audit --no-fund --loglevel=error node@22 >&2
  "$node" --version >/dev/null
fi
lock=e2e/otelsdk/package-lock.json
stamp=e2e/otelsdk/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
  (cd e2e/otelsdk && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
echo "$node"
