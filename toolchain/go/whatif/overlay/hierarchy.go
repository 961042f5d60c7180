// Added to sigs.k8s.io/kueue/pkg/cache/hierarchy at build time (toolchain/build.sh): a
// cohort's children in name order, for the rewrites in rewrites.tsv.
package hierarchy

import (
	"cmp"
	"slices"
)

func whatIfSorted[T nodeBase[N], N ~string](nodes []T) []T {
	slices.SortFunc(nodes, func(a, b T) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return nodes
}
