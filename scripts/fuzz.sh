#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 5s each). `go test -fuzz`
# accepts one target per run, so targets are listed and run one by one.
set -euo pipefail
t="${1:-5s}"
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $f ($t)"
    go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg" >/tmp/critic-fuzz.log 2>&1 || { cat /tmp/critic-fuzz.log; exit 1; }
  done
done
echo "fuzz: all targets passed"
