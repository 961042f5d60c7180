#!/usr/bin/env bash
# Builds the pinned toolchain from Go modules into .toolchain/bin (gitignored).
# Binaries are cached outside the clone, keyed by pin + wrapper go.sum + Go version,
# so a fresh clone on a warm machine only links them (seconds); the Go module and
# build caches (GOMODCACHE, GOCACHE) are the go command's usual ones and are reused.
# Usage: toolchain/build.sh [tool ...]   (default: all). Timings go to .toolchain/timings.tsv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=/dev/null
. "$here/pins.env"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
cache=${GPU_QUEUES_CACHE:-$HOME/.cache/gpu-queues}/toolchain
bin=$root/.toolchain/bin
mkdir -p "$bin" "$cache"
timings=$root/.toolchain/timings.tsv
gover=$(go env GOVERSION)

log() { printf 'toolchain: %s\n' "$*" >&2; }

# module_dir WRAPPER MODULE: the module's source folder in the module cache, downloaded
# first if needed (`go list -m` alone reports nothing for a module not yet downloaded).
module_dir() {
  (cd "$here/go/$1" && go mod download "$2" && go list -m -f '{{.Dir}}' "$2")
}

# key DIR EXTRA...: a short hash naming one build of a wrapper module.
key() { local d=$1; shift; { cat "$here/go/$d/go.mod" "$here/go/$d/go.sum"; [ -d "$here/go/$d/src" ] && cat "$here/go/$d"/src/*; echo "$gover $*"; } | sha256sum | cut -c1-16; }

# Two checkouts may build into one cache at once: each binary is built under its own lock
# (flock on <binary>.lock; the second waits, then finds it built), in a private temporary
# directory, and renamed into place whole, so nobody sees or moves a half-written file.
# lock FILE / unlock: hold (release) the lock of one cached binary.
lock() { exec {lock_fd}>"$1.lock"; flock "$lock_fd"; }
unlock() { exec {lock_fd}>&-; }

# compile NAME DIR PKG LDFLAGS OUT [MODFILE]: go build into OUT (caller holds OUT's lock).
compile() {
  local name=$1 dir=$2 pkg=$3 ldflags=$4 out=$5 modfile=${6:-} tmp start
  log "building $name ($pkg) ..."
  start=$(date +%s)
  tmp=$(mktemp -d "$out.XXXXXX")
  if ! ( cd "$here/go/$dir"
         go build -trimpath ${modfile:+-modfile="$modfile"} -tags osusergo,netgo,grpcnotrace -ldflags "-s -w $ldflags" -o "$tmp/$name" "$pkg" ); then
    rm -rf "$tmp"; return 1
  fi
  mv -f "$tmp/$name" "$out" # a rename within the cache: atomic
  rm -rf "$tmp"
  printf '%s\t%s\tbuilt\t%ss\n' "$name" "${out##*-}" "$(( $(date +%s) - start ))" | tee -a "$timings" >&2
}

# sources DIR PKG: a hash of a package of our own (PKG a path in the wrapper, ./...), so that
# its binary's key moves with its code; nothing for an upstream package.
sources() { case $2 in ./*) cat "$here/go/$1/${2#./}"/*.go | sha256sum | cut -c1-16 ;; esac; }

# build NAME DIR PKG LDFLAGS: build one binary into the cache unless there, then link it.
build() {
  local name=$1 dir=$2 pkg=$3 ldflags=$4 out src
  src=$(sources "$dir" "$pkg")
  out=$cache/$name-$(key "$dir" "$pkg" "$ldflags" ${src:+"$src"})
  if [ ! -x "$out" ]; then
    lock "$out"
    if [ ! -x "$out" ]; then compile "$name" "$dir" "$pkg" "$ldflags" "$out"; fi
    unlock
  fi
  place "$out" "$name"
}

# place FILE NAME: hard link (copy across filesystems) into .toolchain/bin. Not a symlink:
# pulumi looks for its language host beside its own resolved path, and the language host
# for its executor script, so they must all appear to live in one folder.
place() {
  local dest=$bin/$2
  [ "$2" = pulumi-resource-kubernetes ] && dest=$root/.toolchain/plugins/$2 # installed by toolchain/run, not on PATH
  mkdir -p "$(dirname "$dest")"
  ln -f "$1" "$dest" 2>/dev/null || cp -f "$1" "$dest"
}

k8s() {
  local minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  local date=2026-01-01T00:00:00Z fl=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    fl+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    fl+=" -X $p.gitCommit=$KUBERNETES_VERSION -X $p.gitTreeState=clean -X $p.buildDate=$date"
  done
  for t in kube-apiserver kube-controller-manager kubectl; do
    build "$t" kubernetes "k8s.io/kubernetes/cmd/$t" "$fl"
  done
  # The release's scheduler with the sandbox's two tie-breaking plugins (their package says why).
  build kube-scheduler kubernetes ./scheduler "$fl"
}
etcd() { build etcd etcd go.etcd.io/etcd/server/v3 ""; }
# Kueue: one wrapper per supported release (toolchain/go/kueue/<version>/), each built into
# the cache once and linked as kueue-<version>; `kueue` is the pinned one. The sandbox runs the
# binary matching its controller pod's image tag, so an upgrade rehearsal has both at hand.
# KUEUE_VERSIONS (space separated) limits which releases `kueue` builds; default: every one.
kueue_release() {
  local v=$1 fl="-X sigs.k8s.io/kueue/pkg/version.GitVersion=$1 -X sigs.k8s.io/kueue/pkg/version.GitCommit=$1"
  [ -f "$here/go/kueue/$v/go.mod" ] || { log "no wrapper toolchain/go/kueue/$v: toolchain/gen-wrappers.sh kueue $v"; exit 2; }
  # Cached as kueue-<key> like before per-release wrappers (the key hashes go.mod, go.sum and
  # the version ldflags, so each release has its own); linked as kueue-<version>.
  build kueue "kueue/$v" sigs.k8s.io/kueue/cmd/kueue "$fl"
  place "$bin/kueue" "kueue-$v"
  whatif_release "$v"
  # The sandbox renders the release manifest from the module's config/ offline, inside its
  # namespace: a cached binary does not mean the module is in this machine's module cache.
  module_dir "kueue/$v" sigs.k8s.io/kueue >/dev/null
}
# The fast what-if engine (toolchain/go/whatif, docs/what-if.md): built against each Kueue
# release like its controller, linked as gpuq-whatif-<version>. Kueue's scheduler test hooks
# are package-internal, so the build uses a throwaway copy of the release's module with the
# engine's small files (toolchain/go/whatif/overlay) added to their packages, in a
# temporary folder removed afterwards (`go build -overlay` refuses files in the module cache).
# whatif_rewrites OVERLAY KUEUE_DIR VERSION: the rewrites of OVERLAY/rewrites.tsv (ties in name
# order instead of Go's random map order; the file says why) applied to the copy in KUEUE_DIR,
# each where its releases column (a shell pattern; empty: every release) matches VERSION.
whatif_rewrites() {
  local file fn from to releases
  while IFS=$'\t' read -r file fn from to releases; do
    case $file in '#'* | '') continue ;; esac
    # shellcheck disable=SC2254 # the column is a pattern
    case $3 in ${releases:-*}) ;; *) continue ;; esac
    awk -v fn="$fn" -v from="$from" -v to="$to" -f "$1/rewrite.awk" "$2/$file" >"$2/$file.whatif" || return 1
    mv -f "$2/$file.whatif" "$2/$file"
  done <"$1/rewrites.tsv"
}
# whatif_overlay OVERLAY KUEUE_DIR: each OVERLAY/*.go added to the package its first line names
# ("// Added to sigs.k8s.io/kueue/<package> at build time ..."), as zz_whatif.go.
whatif_overlay() {
  local f pkg
  for f in "$1"/*.go; do
    pkg=$(sed -n '1s|^// Added to sigs\.k8s\.io/kueue/\([a-z0-9/]*\) at build time.*|\1|p' "$f")
    if [ -z "$pkg" ] || [ ! -d "$2/$pkg" ]; then
      echo "build.sh: $f names no package of the release's module on its first line" >&2
      return 1
    fi
    cp "$f" "$2/$pkg/zz_whatif.go"
  done
}
whatif_release() {
  local v=$1 src=$here/go/whatif out work kdir start
  out=$cache/gpuq-whatif-$(key "kueue/$v" whatif "$(cat "$src"/*.go "$src"/overlay/* | sha256sum | cut -c1-16)")
  if [ ! -x "$out" ]; then
    lock "$out"
    if [ ! -x "$out" ]; then
      log "building gpuq-whatif against Kueue $v ..."
      start=$(date +%s)
      kdir=$(module_dir "kueue/$v" sigs.k8s.io/kueue)
      work=$(mktemp -d "$out.XXXXXX")
      cp "$here/go/kueue/$v/go.mod" "$here/go/kueue/$v/go.sum" "$src"/*.go "$work/"
      cp -r "$kdir" "$work/kueue" && chmod -R u+w "$work/kueue"
      if ! whatif_overlay "$src/overlay" "$work/kueue" || ! whatif_rewrites "$src/overlay" "$work/kueue" "$v"; then
        rm -rf "$work"; unlock; exit 1
      fi
      printf '\nreplace sigs.k8s.io/kueue => ./kueue\n' >>"$work/go.mod"
      if ! ( cd "$work" && go build -trimpath -tags osusergo,netgo,grpcnotrace -ldflags "-s -w" -o gpuq-whatif . ); then
        rm -rf "$work"; unlock; exit 1
      fi
      mv -f "$work/gpuq-whatif" "$out"
      rm -rf "$work"
      printf '%s\t%s\tbuilt\t%ss\n' gpuq-whatif "$v" "$(( $(date +%s) - start ))" | tee -a "$timings" >&2
    fi
    unlock
  fi
  place "$out" "gpuq-whatif-$v"
}
kueue() {
  local v versions=${KUEUE_VERSIONS:-}
  if [ -z "$versions" ]; then
    for v in "$here"/go/kueue/v*/; do v=${v%/}; versions+=" ${v##*/}"; done
  fi
  case " $versions " in *" $KUEUE_VERSION "*) ;; *) versions+=" $KUEUE_VERSION" ;; esac
  for v in $versions; do kueue_release "$v"; done
  place "$bin/kueue-$KUEUE_VERSION" kueue
  place "$bin/gpuq-whatif-$KUEUE_VERSION" gpuq-whatif
}
kwok() {
  local fl="-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$KUBERNETES_VERSION"
  build kwok kwok sigs.k8s.io/kwok/cmd/kwok "$fl"
  build kwokctl kwok sigs.k8s.io/kwok/cmd/kwokctl "$fl"
  # The sandbox reads kwok's stages from its module, offline (sandbox/cluster.py): there even
  # when the binaries came from the cache.
  module_dir kwok sigs.k8s.io/kwok >/dev/null
}
actionlint() { build actionlint actionlint github.com/rhysd/actionlint/cmd/actionlint ""; }
pulumi() { build pulumi pulumi github.com/pulumi/pulumi/pkg/v3/cmd/pulumi "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION"; }

# Our Python language host (toolchain/go/pulumi-language-python, see its README):
# upstream's module is not served by the proxy. The executor script it runs comes
# from the pinned sdk/v3 module, copied beside the binary (never into the repo).
language_python() {
  build pulumi-language-python pulumi-language-python ./src "-X main.version=$PULUMI_VERSION"
  local sdk
  sdk=$(module_dir pulumi-language-python github.com/pulumi/pulumi/sdk/v3)
  install -m 0755 "$sdk/python/cmd/pulumi-language-python-exec" "$bin/pulumi-language-python-exec"
}

# The provider's main go:embeds files made at release time from the committed
# schema.json; make them in a writable temporary copy of the module and build that.
kubernetes_provider() {
  local pkg=github.com/pulumi/pulumi-kubernetes/provider/v4 name=pulumi-resource-kubernetes out
  local fl="-X $pkg/pkg/version.Version=$PULUMI_KUBERNETES_VERSION"
  out=$cache/$name-$(key pulumi-kubernetes "$pkg/cmd/$name" "$fl")
  if [ ! -x "$out" ]; then
    lock "$out"
    if [ ! -x "$out" ]; then
      local tmp src
      tmp=$(mktemp -d); trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' RETURN
      src=$(module_dir pulumi-kubernetes "$pkg")
      cp -r "$src" "$tmp/provider"; chmod -R u+w "$tmp/provider"
      ( cd "$here/go/pulumi-kubernetes" && go build -o "$tmp/generate" "$tmp/provider/cmd/$name/generate.go" )
      ( cd "$tmp/provider/cmd/$name" && VERSION=$PULUMI_KUBERNETES_VERSION "$tmp/generate" )
      cp "$here/go/pulumi-kubernetes/go.mod" "$tmp/go.mod"; cp "$here/go/pulumi-kubernetes/go.sum" "$tmp/go.sum"
      ( cd "$here/go/pulumi-kubernetes" && go mod edit -modfile="$tmp/go.mod" -replace="$pkg=$tmp/provider" )
      compile "$name" pulumi-kubernetes "$pkg/cmd/$name" "$fl" "$out" "$tmp/go.mod"
    fi
    unlock
  fi
  place "$out" "$name"
}

all=(pulumi language_python kubernetes_provider etcd k8s kueue kwok actionlint)
[ $# -gt 0 ] || set -- "${all[@]}"
for t in "$@"; do
  case " ${all[*]} " in *" $t "*) "$t" ;; *) log "unknown tool $t (known: ${all[*]})"; exit 2 ;; esac
done
