// Added to sigs.k8s.io/kueue/pkg/cache/hierarchy at build time (toolchain/build.sh
// whatif_kueue): a cohort's children in name order, for the rewrites in rewrites.tsv (which
// say why no public API serves).
package hierarchy

import (
	"cmp"
	"slices"
)

func whatIfSorted[T nodeBase[N], N ~string](nodes []T) []T {
	slices.SortFunc(nodes, func(a, b T) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return nodes
}
