#!/usr/bin/env bash
# Go's own checks on the fast what-if engine (toolchain/go/whatif), on the module
# toolchain/build.sh prepares for a Kueue release (toolchain/go/whatif/README.md).
#   toolchain/whatif.sh lint             gofmt -l (any file listed fails), go vet, staticcheck and
#                                        the function-length test, against the pinned release
#   toolchain/whatif.sh test [VERSION..] go test, against each release named (default: every
#                                        supported one, toolchain/go/kueue/<version>/)
# Each release's module is prepared once into the binary cache and then only linked, so a warm
# run takes seconds. The go commands use the engine build's flags, so they reuse its compiled
# packages.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=/dev/null
. "$here/pins.env"
src=$here/go/whatif
export GOTOOLCHAIN=local CGO_ENABLED=0

# goflags VERSION: the flags every go command on the engine runs with, for that release.
goflags() {
  KUEUE_VERSIONS=$1 bash "$here/build.sh" whatif_prepare || return
  printf '%s' "-modfile=$root/.toolchain/whatif/$1/go.mod -mod=readonly -trimpath -tags=osusergo,netgo,grpcnotrace"
}

lint() {
  local unformatted flags
  unformatted=$(cd "$src" && gofmt -l .)
  if [ -n "$unformatted" ]; then
    echo "whatif.sh: not gofmt-formatted (run gofmt -w on them): $unformatted" >&2
    return 1
  fi
  bash "$here/build.sh" staticcheck
  flags=$(goflags "$KUEUE_VERSION")
  ( cd "$src" && GOFLAGS=$flags go vet . )
  ( cd "$src" && GOFLAGS=$flags "$root/.toolchain/bin/staticcheck" . )
  ( cd "$src" && GOFLAGS=$flags go test -count=1 -run '^TestNoFunctionIsLongerThanTheLimit$' . )
  # The overlay's files, in the Kueue packages they join: staticcheck speaks of the whole
  # package, and only what it says of ours (zz_whatif.go) is ours to fix.
  local f pkgs="" found
  for f in "$src"/overlay/*.go; do
    pkgs+=" $(sed -n '1s|^// Added to \(sigs\.k8s\.io/kueue/[a-z0-9/]*\) at build time.*|\1|p' "$f")"
  done
  # shellcheck disable=SC2086 # one package a word
  found=$(cd "$src" && GOFLAGS=$flags "$root/.toolchain/bin/staticcheck" -tests=false $pkgs 2>&1 | grep zz_whatif.go || true)
  if [ -n "$found" ]; then
    echo "whatif.sh: staticcheck on the overlay (toolchain/go/whatif/overlay/<file> as zz_whatif.go):" >&2
    echo "$found" >&2
    return 1
  fi
}

tests() {
  local v flags versions=$*
  if [ -z "$versions" ]; then
    for v in "$here"/go/kueue/v*/; do v=${v%/}; versions+=" ${v##*/}"; done
  fi
  for v in $versions; do
    echo "whatif.sh: go test against Kueue $v" >&2
    flags=$(goflags "$v")
    ( cd "$src" && GOFLAGS=$flags go test -count=1 . )
  done
}

case ${1:-} in
  lint) lint ;;
  test) shift; tests "$@" ;;
  *) echo "usage: toolchain/whatif.sh lint | test [VERSION ...]" >&2; exit 2 ;;
esac
