// Added to sigs.k8s.io/kueue/pkg/scheduler/flavorassigner at build time (toolchain/build.sh
// whatif_kueue): a pod set's resources in name order, for the rewrites in rewrites.tsv (which
// say why no public API serves).
package flavorassigner

import (
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

//lint:file-ignore U1000 each helper serves the rewrite of the releases that have its code (rewrites.tsv)

// whatIfResourceOrder: the resource names of requests, sorted (generic, so that it compiles
// in a release whose requests are not a map, where the rewrite does not apply).
func whatIfResourceOrder[M ~map[corev1.ResourceName]V, V any](requests M) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(requests))
}

// whatIfRequests: what findFlavorForPodSets walks from v0.18.5 (resources.Requests), by the one
// method the rewrite calls, so that this compiles in a release without that type.
type whatIfRequests interface {
	ForEach(func(corev1.ResourceName, int64))
}

// whatIfInNameOrder: requests whose ForEach goes in name order when they are a map (Go's order
// is random), and in their own order when they are not (Kueue's vector: the same on every run).
func whatIfInNameOrder(requests whatIfRequests) whatIfRequests {
	if reflect.ValueOf(requests).Kind() != reflect.Map {
		return requests
	}
	values := map[corev1.ResourceName]int64{}
	requests.ForEach(func(name corev1.ResourceName, v int64) { values[name] = v })
	return whatIfSortedRequests(values)
}

type whatIfSortedRequests map[corev1.ResourceName]int64

func (r whatIfSortedRequests) ForEach(fn func(corev1.ResourceName, int64)) {
	for _, name := range slices.Sorted(maps.Keys(r)) {
		fn(name, r[name])
	}
}
