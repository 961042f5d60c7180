#!/usr/bin/env bash
# Regenerates the wrapper go.mod/go.sum files under toolchain/go/ from pins.env.
# Run after bumping a pin; the results are committed (they are ours, not upstream's).
#   toolchain/gen-wrappers.sh                     every wrapper, at the pinned versions
#   toolchain/gen-wrappers.sh kueue vX.Y.Z ...    only the Kueue wrappers of those releases
# Kueue keeps one wrapper per supported release (toolchain/go/kueue/<version>/), so moving
# its pin back and forth is a relink of a cached binary, never a rebuild (docs/upgrading.md).
# Wrappers exist because several upstream main modules carry replace directives
# (so `go install mod@ver` is refused) and because each tool must keep its own
# dependency graph (shared graphs would raise one tool's deps to another's).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$here/pins.env"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

gomod_of() { go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])'; }

wrapper() { # dir go-version
  mkdir -p "$here/go/$1"; rm -f "$here/go/$1/go.mod" "$here/go/$1/go.sum"
  printf 'module gpu-queues.local/toolchain/%s\n\ngo %s\n' "$1" "$2" > "$here/go/$1/go.mod"
}

# kueue_wrapper VERSION: toolchain/go/kueue/VERSION requires sigs.k8s.io/kueue at VERSION only.
kueue_wrapper() {
  case $1 in v[0-9]*.[0-9]*.[0-9]*) ;; *) echo "gen-wrappers: not a Kueue release: $1" >&2; return 2 ;; esac
  wrapper "kueue/$1" 1.26.0
  # Same module name for every release: the binary cache key hashes the file's content.
  sed -i 's|^module .*|module gpu-queues.local/toolchain/kueue|' "$here/go/kueue/$1/go.mod"
  ( cd "$here/go/kueue/$1"; go mod edit -require="sigs.k8s.io/kueue@$1" -tool=sigs.k8s.io/kueue/cmd/kueue; go mod tidy )
}
if [ "${1:-}" = kueue ]; then
  shift
  [ $# -gt 0 ] || set -- "$KUEUE_VERSION"
  for v in "$@"; do kueue_wrapper "$v"; done
  exit 0
fi

# Kubernetes: replace every ./staging module with its published v0.<minor>.<patch>.
k8s_staging_version="v0.${KUBERNETES_VERSION#v1.}"
wrapper kubernetes 1.26.0
( cd "$here/go/kubernetes"
  go mod edit -require="k8s.io/kubernetes@$KUBERNETES_VERSION"
  grep -E '=> \./staging/src/' "$(gomod_of "k8s.io/kubernetes@$KUBERNETES_VERSION")" | awk '{print $1}' | while read -r m; do
    go mod edit -replace="$m=$m@$k8s_staging_version"
  done
  for t in kube-apiserver kube-controller-manager kube-scheduler kubectl; do go mod edit -tool="k8s.io/kubernetes/cmd/$t"; done
  go mod tidy )

# etcd: the server main module replaces its sibling modules; require them at the same tag.
wrapper etcd 1.25.0
( cd "$here/go/etcd"
  go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do go mod edit -require="go.etcd.io/etcd/$m@$ETCD_VERSION"; done
  go mod edit -tool=go.etcd.io/etcd/server/v3
  go mod tidy )

# Kueue, kwok, actionlint, staticcheck: no replaces, a wrapper only pins them.
kueue_wrapper "$KUEUE_VERSION"
wrapper kwok 1.26.0
( cd "$here/go/kwok"; go mod edit -require="sigs.k8s.io/kwok@$KWOK_VERSION" -tool=sigs.k8s.io/kwok/cmd/kwok -tool=sigs.k8s.io/kwok/cmd/kwokctl; go mod tidy )
# JobSet's controller manager (sandbox): no replaces; its main package is the module root.
wrapper jobset 1.26.0
( cd "$here/go/jobset"; go mod edit -require="sigs.k8s.io/jobset@$JOBSET_VERSION" -tool=sigs.k8s.io/jobset; go mod tidy )
# LeaderWorkerSet's controller manager (sandbox): no replaces; its main package is cmd/.
wrapper lws 1.26.0
( cd "$here/go/lws"; go mod edit -require="sigs.k8s.io/lws@$LWS_VERSION" -tool=sigs.k8s.io/lws/cmd; go mod tidy )
# KubeRay's operator (sandbox): no replaces; its main package is the module root.
wrapper kuberay 1.26.0
( cd "$here/go/kuberay"; go mod edit -require="github.com/ray-project/kuberay/ray-operator@$KUBERAY_VERSION" -tool=github.com/ray-project/kuberay/ray-operator; go mod tidy )
# Kubeflow's training-operator v1 (sandbox): no replaces; its main package is cmd/training-operator.v1.
wrapper training-operator 1.26.0
( cd "$here/go/training-operator"; go mod edit -require="github.com/kubeflow/training-operator@$TRAINING_OPERATOR_VERSION" -tool=github.com/kubeflow/training-operator/cmd/training-operator.v1; go mod tidy )
# The mpi-operator (sandbox): no replaces; its main package is cmd/mpi-operator.
wrapper mpi-operator 1.26.0
( cd "$here/go/mpi-operator"; go mod edit -require="github.com/kubeflow/mpi-operator@$MPI_OPERATOR_VERSION" -tool=github.com/kubeflow/mpi-operator/cmd/mpi-operator; go mod tidy )
# Kubeflow Trainer v2's controller manager (sandbox): no replaces; its main package is
# cmd/trainer-controller-manager.
wrapper trainer 1.26.0
( cd "$here/go/trainer"; go mod edit -require="github.com/kubeflow/trainer/v2@$TRAINER_VERSION" -tool=github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager; go mod tidy )
# pulumi-yaml's language host: its own module graph (pins.env says why), no replaces.
wrapper pulumi-language-yaml 1.26.0
( cd "$here/go/pulumi-language-yaml"; go mod edit -require="github.com/pulumi/pulumi-yaml@$PULUMI_YAML_VERSION" -tool=github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml; go mod tidy )
wrapper actionlint 1.26.0
( cd "$here/go/actionlint"; go mod edit -require="github.com/rhysd/actionlint@$ACTIONLINT_VERSION" -tool=github.com/rhysd/actionlint/cmd/actionlint; go mod tidy )
wrapper staticcheck 1.26.0
( cd "$here/go/staticcheck"; go mod edit -require="honnef.co/go/tools@$STATICCHECK_VERSION" -tool=honnef.co/go/tools/cmd/staticcheck; go mod tidy )

# Pulumi CLI: pkg/v3 replaces sdk/v3 with ../sdk and a fork of clipboard; repeat the non-local ones.
wrapper pulumi 1.26.0
( cd "$here/go/pulumi"
  go mod edit -require="github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION" -require="github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION"
  grep -E '^replace .* => [^.]' "$(gomod_of "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION")" | sed -E 's/^replace +//' | while read -r from _ to ver; do
    go mod edit -replace="$from=$to@$ver"; done
  go mod edit -tool=github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  go mod tidy )

# pulumi-kubernetes provider: replaces sdk/v4 with ../sdk; the module only names it, build does not need it.
wrapper pulumi-kubernetes 1.26.0
( cd "$here/go/pulumi-kubernetes"
  go mod edit -require="github.com/pulumi/pulumi-kubernetes/provider/v4@$PULUMI_KUBERNETES_PROVIDER_MODULE"
  go mod edit -tool=github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes
  go mod tidy )
