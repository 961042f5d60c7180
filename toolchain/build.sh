#!/usr/bin/env bash
# Builds the pinned toolchain from Go modules into .toolchain/bin (gitignored).
# Binaries are cached outside the clone, keyed by pin + wrapper go.sum + Go version,
# so a fresh clone on a warm machine only links them (seconds); the Go module and
# build caches (GOMODCACHE, GOCACHE) are the go command's usual ones and are reused.
# Usage: toolchain/build.sh [tool ...]   (default: all). Timings go to .toolchain/timings.tsv.
# The what-if engine's steps run only when named: whatif_prepare, whatif_check (see below);
# so does kueue_harness, Kueue's scheduler performance harness for make bench-kueue-harness.
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
# The fast what-if engine (toolchain/go/whatif, docs/what-if.md): a Go module of its own, built
# against each Kueue release like its controller and linked as gpuq-whatif-<version>. Kueue's
# scheduler test hooks are package-internal, so the engine needs the release's module with its
# small files (toolchain/go/whatif/overlay) added to their packages and a few lines rewritten:
# whatif_kueue prepares that copy once (`go build -overlay` refuses files in the module cache).
# whatif_rewrites OVERLAY KUEUE_DIR VERSION [list]: the rewrites of OVERLAY/rewrites.tsv (ties in
# name order instead of Go's random map order; the file says why) applied to the copy in
# KUEUE_DIR, each where its releases column (a shell pattern; empty: every release) matches
# VERSION; with list, each rewrite's fate printed too. rewrite.awk names the release, file and
# function of a rewrite that no longer matches.
whatif_rewrites() {
  local file fn from to releases name failed=0
  while IFS=$'\t' read -r file fn from to releases; do
    case $file in '#'* | '') continue ;; esac
    name=${fn#func }; name=${name#\(*\) }; name=${name%%(*}
    # shellcheck disable=SC2254 # the column is a pattern
    case $3 in ${releases:-*}) ;; *)
      [ -z "${4:-}" ] || printf '%s\t%s\t%s()\tnot this release (%s)\n' "$3" "$file" "$name" "$releases"
      continue ;;
    esac
    if [ ! -f "$2/$file" ]; then
      echo "rewrite.awk: Kueue $3, $file: no such file (renamed or removed)" >&2
    elif awk -v release="$3" -v file="$file" -v fn="$fn" -v from="$from" -v to="$to" -f "$1/rewrite.awk" "$2/$file" >"$2/$file.whatif"; then
      mv -f "$2/$file.whatif" "$2/$file"
      [ -z "${4:-}" ] || printf '%s\t%s\t%s()\trewritten\n' "$3" "$file" "$name"
      continue
    fi
    [ -n "${4:-}" ] || return 1 # a build stops at the first; a list goes on to the end
    printf '%s\t%s\t%s()\tDOES NOT MATCH\n' "$3" "$file" "$name"
    failed=1
  done <"$1/rewrites.tsv"
  return "$failed"
}
# whatif_overlay OVERLAY KUEUE_DIR: each OVERLAY/*.go added to the package its first line names
# ("// Added to sigs.k8s.io/kueue/<package> at build time ..."), as zz_whatif.go (a *_test.go
# file as zz_whatif_test.go: a test run with Kueue's own tests of the package, never built in).
whatif_overlay() {
  local f pkg
  for f in "$1"/*.go; do
    pkg=$(sed -n '1s|^// Added to sigs\.k8s\.io/kueue/\([a-z0-9/]*\) at build time.*|\1|p' "$f")
    if [ -z "$pkg" ] || [ ! -d "$2/$pkg" ]; then
      echo "build.sh: $f names no package of the release's module on its first line" >&2
      return 1
    fi
    case $f in
      *_test.go) cp "$f" "$2/$pkg/zz_whatif_test.go" ;; # a test of the package, never in the engine
      *) cp "$f" "$2/$pkg/zz_whatif.go" ;;
    esac
  done
}
# whatif_kueue VERSION: the engine's module for one release, in the cache (keyed by the release's
# wrapper, the overlay and the Go version) and linked as .toolchain/whatif/<version>: kueue/, the
# release's module with the overlay and rewrites applied, and go.mod/go.sum, the release's wrapper
# with sigs.k8s.io/kueue replaced by that copy. Every go command on the engine runs in
# toolchain/go/whatif with -modfile=.toolchain/whatif/<version>/go.mod (toolchain/go/whatif/README.md).
whatif_kueue() {
  local v=$1 src=$here/go/whatif out kdir tmp
  [ -f "$here/go/kueue/$v/go.mod" ] || { log "Kueue $v is not a supported release (no toolchain/go/kueue/$v; docs/upgrading.md)"; exit 2; }
  out=$cache/whatif-kueue-$(key "kueue/$v" whatif-kueue "$(cat "$src"/overlay/* | sha256sum | cut -c1-16)")
  if [ ! -f "$out/go.mod" ]; then
    lock "$out"
    if [ ! -f "$out/go.mod" ]; then
      log "preparing Kueue $v for the what-if engine ..."
      kdir=$(module_dir "kueue/$v" sigs.k8s.io/kueue)
      tmp=$(mktemp -d "$out.XXXXXX")
      cp -r "$kdir" "$tmp/kueue" && chmod -R u+w "$tmp/kueue"
      cp "$here/go/kueue/$v/go.mod" "$here/go/kueue/$v/go.sum" "$tmp/"
      if ! whatif_overlay "$src/overlay" "$tmp/kueue" || ! whatif_rewrites "$src/overlay" "$tmp/kueue" "$v" ||
         ! go mod edit -module=gpu-queues.local/toolchain/whatif -replace="sigs.k8s.io/kueue=$out/kueue" "$tmp/go.mod"; then
        rm -rf "$tmp"; unlock; exit 1
      fi
      mv -T "$tmp" "$out" # a rename within the cache: nobody sees a half-made copy
    fi
    unlock
  fi
  mkdir -p "$root/.toolchain/whatif"
  ln -sfn "$out" "$root/.toolchain/whatif/$v"
}
whatif_release() {
  local v=$1 src=$here/go/whatif out tmp start
  whatif_kueue "$v"
  out=$cache/gpuq-whatif-$(key "kueue/$v" whatif "$(whatif_sources | sha256sum | cut -c1-16)")
  if [ ! -x "$out" ]; then
    lock "$out"
    if [ ! -x "$out" ]; then
      log "building gpuq-whatif against Kueue $v ..."
      start=$(date +%s)
      tmp=$(mktemp -d "$out.XXXXXX")
      if ! ( cd "$src" && go build -modfile="$root/.toolchain/whatif/$v/go.mod" -mod=readonly -trimpath \
               -tags osusergo,netgo,grpcnotrace -ldflags "-s -w" -o "$tmp/gpuq-whatif" . ); then
        rm -rf "$tmp"; unlock; exit 1
      fi
      mv -f "$tmp/gpuq-whatif" "$out"
      rm -rf "$tmp"
      printf '%s\t%s\tbuilt\t%ss\n' gpuq-whatif "$v" "$(( $(date +%s) - start ))" | tee -a "$timings" >&2
    fi
    unlock
  fi
  place "$out" "gpuq-whatif-$v"
}
# whatif_check: for every supported release (KUEUE_VERSIONS, if set), which rewrites of
# rewrites.tsv apply and that each matches once where it says, and the package each overlay file
# goes to; one line each, on stdout. Nothing is built. WHATIF_KUEUE_DIR checks a Kueue source
# tree instead (a later release's checkout, when porting: docs/upgrading.md), as the one release
# KUEUE_VERSIONS names. Fails, after every release, when any rewrite or overlay did not fit.
whatif_check() {
  local v kdir tmp f file pkg failed=0 versions=${KUEUE_VERSIONS:-} src=$here/go/whatif/overlay
  if [ -z "$versions" ]; then
    for v in "$here"/go/kueue/v*/; do v=${v%/}; versions+=" ${v##*/}"; done
  fi
  for v in $versions; do
    kdir=${WHATIF_KUEUE_DIR:-}
    [ -n "$kdir" ] || kdir=$(module_dir "kueue/$v" sigs.k8s.io/kueue)
    for f in "$src"/*.go; do
      pkg=$(sed -n '1s|^// Added to sigs\.k8s\.io/kueue/\([a-z0-9/]*\) at build time.*|\1|p' "$f")
      if [ -n "$pkg" ] && [ -d "$kdir/$pkg" ]; then
        printf '%s\toverlay/%s\t%s\tadded\n' "$v" "${f##*/}" "$pkg"
      else
        echo "build.sh: Kueue $v: overlay/${f##*/} names no package of the release (${pkg:-none named})" >&2
        failed=1
      fi
    done
    tmp=$(mktemp -d)
    while IFS=$'\t' read -r file _; do
      case $file in '#'* | '') continue ;; esac
      [ -f "$kdir/$file" ] || continue # whatif_rewrites names it
      mkdir -p "$tmp/$(dirname "$file")" && cp "$kdir/$file" "$tmp/$file" && chmod u+w "$tmp/$file"
    done <"$src/rewrites.tsv"
    whatif_rewrites "$src" "$tmp" "$v" list || failed=1
    rm -rf "$tmp"
  done
  return "$failed"
}
# whatif_prepare: the engine's module for each release of KUEUE_VERSIONS (default: the pin),
# for the go commands of toolchain/whatif.sh (lint, test) without building the engine.
whatif_prepare() {
  local v
  for v in ${KUEUE_VERSIONS:-$KUEUE_VERSION}; do whatif_kueue "$v"; done
}
# kueue_harness: Kueue's scheduler performance harness of the pinned release (KUEUE_VERSION), its
# runner and minimalkueue (test/performance/scheduler), built from the release's module as its
# Makefile-test.mk builds them (performance-scheduler-runner, minimalkueue: go build with the
# version ldflags, CGO off) into the cache, keyed like every binary here by the release's wrapper
# (toolchain/go/kueue/<version>: its requirements are Kueue's) and the Go version. Never part of
# a default build, nothing linked into .toolchain/bin: `make bench-kueue-harness` runs them from
# the cache, whose paths this prints (runner, then minimalkueue), one a line. Their test-only
# imports (gomega, envtest) may need go.sum lines the wrapper does not carry: the build reads a
# private copy of the wrapper's go.mod and go.sum, so the committed wrapper never changes.
kueue_harness() {
  local v=${KUEUE_VERSION} dir name pkg out tmp start
  local fl="-X sigs.k8s.io/kueue/pkg/version.GitVersion=$v -X sigs.k8s.io/kueue/pkg/version.GitCommit=$v"
  dir=kueue/$v
  [ -f "$here/go/$dir/go.mod" ] || { log "no wrapper toolchain/go/$dir"; exit 2; }
  for name in performance-scheduler-runner minimalkueue; do
    case $name in
      performance-scheduler-runner) pkg=sigs.k8s.io/kueue/test/performance/scheduler/runner ;;
      minimalkueue) pkg=sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue ;;
    esac
    out=$cache/kueue-harness-$name-$(key "$dir" "$pkg" "$fl")
    if [ ! -x "$out" ]; then
      lock "$out"
      if [ ! -x "$out" ]; then
        log "building $name of Kueue $v ($pkg) ..."
        start=$(date +%s)
        tmp=$(mktemp -d "$out.XXXXXX")
        cp "$here/go/$dir/go.mod" "$here/go/$dir/go.sum" "$tmp/"
        if ! ( cd "$here/go/$dir" && go build -modfile="$tmp/go.mod" -ldflags "$fl" -o "$tmp/$name" "$pkg" ); then
          rm -rf "$tmp"; unlock; exit 1
        fi
        mv -f "$tmp/$name" "$out"
        rm -rf "$tmp"
        printf '%s\t%s\tbuilt\t%ss\n' "$name" "$v" "$(( $(date +%s) - start ))" | tee -a "$cache/kueue-harness-timings.tsv" >&2
      fi
      unlock
    fi
    echo "$out"
  done
}
staticcheck() { build staticcheck staticcheck honnef.co/go/tools/cmd/staticcheck ""; }
# whatif_sources: what the engine binary is built from (its tests are not).
whatif_sources() {
  local f
  for f in "$here"/go/whatif/*.go "$here"/go/whatif/overlay/*; do
    case $f in *_test.go) ;; *) cat "$f" ;; esac
  done
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
# JobSet's controller manager (pins.env: JOBSET_VERSION), built as its Makefile builds bin/manager
# (main package at the module root, the version ldflags). The sandbox runs it beside Kueue and
# installs JobSet's CRD from the module's config/, offline: the module stays in the module cache.
jobset() {
  local fl="-X sigs.k8s.io/jobset/pkg/version.GitVersion=$JOBSET_VERSION -X sigs.k8s.io/jobset/pkg/version.GitCommit=$JOBSET_VERSION"
  build jobset jobset sigs.k8s.io/jobset "$fl"
  module_dir jobset sigs.k8s.io/jobset >/dev/null
}
# LeaderWorkerSet's controller manager (pins.env: LWS_VERSION), built as its Makefile builds
# bin/manager (main package cmd/, the version ldflags); the sandbox installs its CRD from the
# module's config/, offline, as for JobSet.
lws() {
  build lws lws sigs.k8s.io/lws/cmd "-X sigs.k8s.io/lws/pkg/version.GitVersion=$LWS_VERSION -X sigs.k8s.io/lws/pkg/version.GitCommit=$LWS_VERSION"
  module_dir lws sigs.k8s.io/lws >/dev/null
}
# KubeRay's operator (pins.env: KUBERAY_VERSION), built as its Makefile builds bin/manager (main
# package at the module root; its -X flags name variables v1.6.2 no longer has, and its version is
# a constant, so none here); the sandbox installs KubeRay's CRDs from the module's config/crd,
# offline, as for JobSet.
kuberay() {
  build kuberay kuberay github.com/ray-project/kuberay/ray-operator ""
  module_dir kuberay github.com/ray-project/kuberay/ray-operator >/dev/null
}
# Kubeflow's training-operator v1 (pins.env: TRAINING_OPERATOR_VERSION), built as its Dockerfile
# builds its manager (cmd/training-operator.v1; no version variables); the sandbox installs its
# CRDs and webhooks from the module's manifests/base, offline, as for JobSet.
training_operator() {
  build training-operator training-operator github.com/kubeflow/training-operator/cmd/training-operator.v1 ""
  module_dir training-operator github.com/kubeflow/training-operator >/dev/null
}
# The mpi-operator (pins.env: MPI_OPERATOR_VERSION), built as its Makefile builds
# mpi-operator.v2 (cmd/mpi-operator, its version ldflags; no build date, so builds are the same
# bytes); the sandbox installs its MPIJob CRD from the module's manifests/base, offline.
mpi_operator() {
  build mpi-operator mpi-operator github.com/kubeflow/mpi-operator/cmd/mpi-operator "-X github.com/kubeflow/mpi-operator/pkg/version.Version=$MPI_OPERATOR_VERSION -X github.com/kubeflow/mpi-operator/pkg/version.GitSHA=$MPI_OPERATOR_VERSION"
  module_dir mpi-operator github.com/kubeflow/mpi-operator >/dev/null
}
# Kubeflow Trainer v2's controller manager (pins.env: TRAINER_VERSION), built as its Dockerfile
# builds /bin/manager (cmd/trainer-controller-manager; no version ldflags: it has no version
# variable); the sandbox installs its CRDs from the module's manifests/base/crds, offline.
trainer() {
  build trainer trainer github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager ""
  module_dir trainer github.com/kubeflow/trainer/v2 >/dev/null
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

# pulumi-yaml's language host (pins.env: PULUMI_YAML_VERSION): Pulumi YAML programs, such as
# one that adds the component package (package/).
language_yaml() {
  build pulumi-language-yaml pulumi-language-yaml github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml \
    "-X github.com/pulumi/pulumi-yaml/pkg/version.Version=$PULUMI_YAML_VERSION"
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

all=(pulumi language_python language_yaml kubernetes_provider etcd k8s kueue kwok jobset lws kuberay training_operator mpi_operator trainer actionlint staticcheck)
# Steps run only when named, never part of a default build: on the what-if engine's module,
# and Kueue's scheduler performance harness.
steps=(whatif_prepare whatif_check kueue_harness)
[ $# -gt 0 ] || set -- "${all[@]}"
for t in "$@"; do
  case " ${all[*]} ${steps[*]} " in *" $t "*) "$t" ;; *) log "unknown tool $t (known: ${all[*]} ${steps[*]})"; exit 2 ;; esac
done
