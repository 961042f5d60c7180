#!/usr/bin/env bash
# Installs an official upstream release at the version toolchain/pins.env pins, after checking
# its SHA-256 against the checksum file the same release publishes. CI uses it where an
# official build exists, so a PR preview does not wait for the Go build of the toolchain.
#
#   install-official.sh pulumi DIR            Pulumi CLI (with its bundled language hosts) into DIR
#   install-official.sh kubernetes-provider   pulumi-resource-kubernetes into $PULUMI_HOME's plugins
#                                             (runs the `pulumi` first on PATH)
#   install-official.sh kubectl DIR           kubectl into DIR
#
# Release hosts can be pointed at a mirror: GPUQ_GITHUB_URL (default https://github.com) and
# GPUQ_K8S_RELEASE_URL (default https://dl.k8s.io/release). Nothing is installed unless the
# download matches its published checksum; a missing checksum file or entry is an error too.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=/dev/null
. "$root/toolchain/pins.env"
github=${GPUQ_GITHUB_URL:-https://github.com}
k8s=${GPUQ_K8S_RELEASE_URL:-https://dl.k8s.io/release}

die() { printf 'install-official: %s\n' "$*" >&2; exit 1; }

case $(uname -m) in
  x86_64 | amd64) arch=amd64 pulumi_arch=x64 ;;
  aarch64 | arm64) arch=arm64 pulumi_arch=arm64 ;;
  *) die "unsupported machine $(uname -m)" ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fetch() { # URL FILE
  curl -fsSL --retry 3 -o "$2" "$1" || die "cannot download $1"
}

# verify FILE SHA256: refuse the file unless it has exactly that digest.
verify() {
  local got
  [[ $2 =~ ^[0-9a-f]{64}$ ]] || die "no valid SHA-256 published for $(basename "$1") (got '$2')"
  got=$(sha256sum "$1" | cut -d' ' -f1)
  [ "$got" = "$2" ] || die "checksum mismatch for $(basename "$1"): published $2, downloaded $got"
}

# listed_sum LIST NAME: the digest a `sha256sum`-style checksum list gives for NAME.
listed_sum() {
  awk -v f="$2" '$2 == f || $2 == "*" f { print $1; exit }' "$1"
}

# release_asset REPO TAG ASSET CHECKSUMS: download a GitHub release asset and verify it against
# the release's checksum list; prints the verified file's path.
release_asset() {
  local base="$github/$1/releases/download/$2"
  fetch "$base/$4" "$tmp/$4"
  fetch "$base/$3" "$tmp/$3"
  verify "$tmp/$3" "$(listed_sum "$tmp/$4" "$3")"
  printf '%s\n' "$tmp/$3"
}

pulumi_cli() {
  local dest=${1:?usage: install-official.sh pulumi DIR} ver=${PULUMI_VERSION#v} tarball got
  tarball=$(release_asset pulumi/pulumi "v$ver" "pulumi-v$ver-linux-$pulumi_arch.tar.gz" "pulumi-$ver-checksums.txt")
  mkdir -p "$tmp/cli" "$dest"
  tar -xzf "$tarball" -C "$tmp/cli"
  [ -x "$tmp/cli/pulumi/pulumi" ] || die "$(basename "$tarball") has no pulumi/pulumi"
  got=$(PULUMI_SKIP_UPDATE_CHECK=true "$tmp/cli/pulumi/pulumi" version)
  [ "$got" = "v$ver" ] || die "$(basename "$tarball") holds pulumi $got, expected v$ver"
  # Replace, never write through: a file already there may be a hard link into a cache.
  for f in "$tmp/cli/pulumi/"*; do
    rm -rf "${dest:?}/${f##*/}"
    cp -R "$f" "$dest/"
  done
  printf 'install-official: pulumi %s (checksum verified) in %s\n' "$got" "$dest" >&2
}

kubernetes_provider() {
  local ver=$PULUMI_KUBERNETES_VERSION tarball
  command -v pulumi >/dev/null || die "no pulumi on PATH to install the provider with"
  tarball=$(release_asset pulumi/pulumi-kubernetes "v$ver" \
    "pulumi-resource-kubernetes-v$ver-linux-$arch.tar.gz" "pulumi-kubernetes_${ver}_checksums.txt")
  pulumi plugin install resource kubernetes "$ver" --file "$tarball" --reinstall >/dev/null
  pulumi plugin ls --json | python3 -c '
import json, sys
found = {(p["kind"], p["name"], p["version"]) for p in json.load(sys.stdin)}
sys.exit(("resource", "kubernetes", sys.argv[1]) not in found)' "$ver" ||
    die "pulumi plugin ls does not list resource kubernetes $ver after installing it"
  printf 'install-official: pulumi-resource-kubernetes %s (checksum verified) in %s\n' \
    "$ver" "${PULUMI_HOME:-$HOME/.pulumi}/plugins" >&2
}

kubectl() {
  local dest=${1:?usage: install-official.sh kubectl DIR} ver=$KUBERNETES_VERSION got
  fetch "$k8s/$ver/bin/linux/$arch/kubectl.sha256" "$tmp/kubectl.sha256"
  fetch "$k8s/$ver/bin/linux/$arch/kubectl" "$tmp/kubectl"
  verify "$tmp/kubectl" "$(tr -d ' \n' <"$tmp/kubectl.sha256")"
  chmod +x "$tmp/kubectl"
  got=$("$tmp/kubectl" version --client -o json | sed -nE 's/.*"gitVersion": *"([^"]+)".*/\1/p' | head -n1)
  [ "$got" = "$ver" ] || die "the downloaded kubectl reports ${got:-no version}, expected $ver"
  mkdir -p "$dest"
  rm -f "$dest/kubectl" # it may be a hard link into the build cache (toolchain/build.sh)
  install -m 0755 "$tmp/kubectl" "$dest/kubectl"
  printf 'install-official: kubectl %s (checksum verified) in %s\n' "$got" "$dest" >&2
}

tool=${1:-}
shift || true
case $tool in
  pulumi) pulumi_cli "$@" ;;
  kubernetes-provider) kubernetes_provider ;;
  kubectl) kubectl "$@" ;;
  *) die "usage: install-official.sh pulumi DIR | kubernetes-provider | kubectl DIR" ;;
esac
