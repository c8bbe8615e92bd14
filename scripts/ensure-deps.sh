#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to run or test Critic:
# PostgreSQL (server binaries only; Critic starts its own cluster under .data/),
# protoc for `make generate`/`make verify`, and Node.js/npm for the tokenizer
# parity reference, and versitygw, the S3 server the blob-store tests run
# against. Idempotent and quiet when everything is present.
set -euo pipefail

need=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || need+=(postgresql)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
[ -f /usr/include/google/protobuf/struct.proto ] || need+=(libprotobuf-dev) # well-known types for make generate/verify
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v runuser >/dev/null 2>&1 || need+=(util-linux)
# PyTorch, the reference of the engine's golden tests and benchmarks, on OpenBLAS's
# OpenMP build: python3-torch alone brings the reference BLAS (~10× slower), and the
# pthread build spins against torch's own OpenMP threads (gpuworker/scripts/torch_env.sh).
if [ "${CRITIC_WITH_TORCH:-0}" = 1 ]; then
  "${CRITIC_PYTHON:-/usr/bin/python3}" -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch) # Debian's torch is Debian's python's
  [ -e /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3 ] || [ "$(uname -m)" != x86_64 ] || need+=(libopenblas0-openmp)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # Debian starts a system cluster on install; Critic runs its own.
  if [[ " ${need[*]} " == *" postgresql "* ]] && command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl stop postgresql >/dev/null 2>&1 || true
  fi
fi

# versitygw (posix backend) is the S3 server of platform/blob's tests: unlike
# gofakes3 it verifies SigV4, so tampered or expired presigned URLs really
# fail. Built from source with the Go toolchain (~1-2 min, once).
VERSITYGW_MODULE=github.com/versity/versitygw/cmd/versitygw@v1.8.0
if command -v go >/dev/null 2>&1; then
  gobin="$(go env GOBIN)"
  [ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
  if ! command -v versitygw >/dev/null 2>&1 && [ ! -x "$gobin/versitygw" ]; then
    echo "installing: $VERSITYGW_MODULE"
    # GOFLAGS cleared: the caller's -mod=mod is for this repository, and
    # `go install module@version` builds outside it.
    GOFLAGS= go install "$VERSITYGW_MODULE"
  fi
else
  echo "go is not on PATH: skipping versitygw (the S3 blob-store tests install it on first run)" >&2
fi
