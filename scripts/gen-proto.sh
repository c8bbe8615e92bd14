#!/usr/bin/env bash
# Regenerates the Go code of the Connect API from schema/critic/**/*.proto.
#
#   scripts/gen-proto.sh            write into schema/gen (what is committed)
#   scripts/gen-proto.sh --verify   generate into a temp dir and fail if it
#                                   differs from the committed files
#
# Output must not depend on the machine, so:
#   - the plugins are pinned (installed into $(go env GOPATH)/bin when missing
#     or at another version);
#   - protoc itself is the system one (Debian's protobuf-compiler), but the
#     only trace its version leaves in the output — the "// 	protoc  vX.Y"
#     header line protoc-gen-go writes — is normalised to "(unknown)" (what
#     protoc-gen-go writes when the compiler does not say), so another protoc
#     release cannot cause drift;
#   - files are listed in sorted order and generated with paths=source_relative.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12      # = google.golang.org/protobuf in go.mod
PROTOC_GEN_CONNECT_GO_VERSION=v1.21.1 # = connectrpc.com/connect in go.mod

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mode=write
case "${1:-}" in
  "") ;;
  --verify) mode=verify ;;
  *) echo "usage: $0 [--verify]" >&2; exit 2 ;;
esac

command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
# The well-known types (struct.proto, timestamp.proto) ship with Debian's
# protobuf-compiler under /usr/include; other installs put them next to protoc.
wkt=""
for d in /usr/include /usr/local/include "$(dirname "$(command -v protoc)")/../include"; do
  if [ -f "$d/google/protobuf/struct.proto" ]; then wkt=$d; break; fi
done
[ -n "$wkt" ] || { echo "google/protobuf/struct.proto not found: apt-get install protobuf-compiler (or libprotobuf-dev)" >&2; exit 1; }

gobin="$(go env GOPATH)/bin"
export PATH="$gobin:$PATH"
ensure() { # ensure NAME MODULE VERSION VERSION_OUTPUT
  local name=$1 module=$2 version=$3 want=$4
  if [ "$("$gobin/$name" --version 2>/dev/null || true)" != "$want" ]; then
    echo "installing $module@$version into $gobin" >&2
    GOBIN="$gobin" GOFLAGS=-mod=mod go install "$module@$version"
  fi
}
ensure protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION" "protoc-gen-go $PROTOC_GEN_GO_VERSION"
ensure protoc-gen-connect-go connectrpc.com/connect/cmd/protoc-gen-connect-go "$PROTOC_GEN_CONNECT_GO_VERSION" "${PROTOC_GEN_CONNECT_GO_VERSION#v}"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

mapfile -t protos < <(cd schema && find critic -name '*.proto' | LC_ALL=C sort)
[ "${#protos[@]}" -gt 0 ] || { echo "no .proto files under schema/critic" >&2; exit 1; }
protoc -I schema -I "$wkt" \
  --plugin=protoc-gen-go="$gobin/protoc-gen-go" \
  --plugin=protoc-gen-connect-go="$gobin/protoc-gen-connect-go" \
  --go_out="$out" --go_opt=paths=source_relative \
  --connect-go_out="$out" --connect-go_opt=paths=source_relative \
  "${protos[@]/#/schema/}"
find "$out" -name '*.pb.go' -exec sed -i -E 's#^// \tprotoc +v.*$#// \tprotoc        (unknown)#' {} +

case $mode in
  write)
    rm -rf schema/gen
    mkdir -p schema/gen
    cp -R "$out"/. schema/gen/
    echo "generated schema/gen from ${#protos[@]} proto file(s)" >&2
    ;;
  verify)
    if ! diff -ru schema/gen "$out" >&2; then
      echo "schema/gen is stale: run scripts/gen-proto.sh (make generate) and commit the result" >&2
      exit 1
    fi
    echo "schema/gen is up to date" >&2
    ;;
esac
