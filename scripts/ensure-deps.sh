#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to run or test Critic:
# PostgreSQL (server binaries only; Critic starts its own cluster under .data/),
# protoc for `make generate`/`make verify`, and Node.js/npm for the tokenizer
# parity reference. Idempotent and quiet when everything is present.
set -euo pipefail

need=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || need+=(postgresql)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v runuser >/dev/null 2>&1 || need+=(util-linux)
[ "${CRITIC_WITH_TORCH:-0}" = 1 ] && { python3 -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch libopenblas0-pthread); }

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
