// Added to sigs.k8s.io/kueue/pkg/scheduler/flavorassigner at build time (toolchain/build.sh
// whatif_kueue): a pod set's resources in name order, for the rewrite in rewrites.tsv (which
// says why no public API serves).
package flavorassigner

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// whatIfResourceOrder: the resource names of requests, sorted (generic, so that it compiles
// in a release whose requests are not a map, where the rewrite does not apply).
func whatIfResourceOrder[M ~map[corev1.ResourceName]V, V any](requests M) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(requests))
}
