// Added to sigs.k8s.io/kueue/pkg/cache/hierarchy at build time (toolchain/build.sh
// whatif_kueue): a cohort's children in name order, and the flags of the maps the scheduler's
// snapshots share with the cache, for the rewrites in rewrites.tsv (which say why no public API
// serves).
package hierarchy

import (
	"cmp"
	"slices"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func whatIfSorted[T nodeBase[N], N ~string](nodes []T) []T {
	slices.SortFunc(nodes, func(a, b T) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return nodes
}

// The flags that mark a node as sharing its admitted Workloads (a ClusterQueue's) and its Usage
// with the cache or a snapshot (pkg/cache/scheduler's whatIfShare and whatIfOwn). They sit,
// unexported, in the two types every ClusterQueue and Cohort of the cache and of a snapshot
// embeds, since Kueue's own tests compare those nodes and snapshots field by field and leave
// out only these types' unexported fields (or the types themselves); the scheduler's package
// reaches them through these methods.

// WhatIfShared: whether the ClusterQueue shares its admitted Workloads.
func (c *ClusterQueue[C]) WhatIfShared() *bool { return &c.whatIfShared }

// WhatIfUsageShared: whether the ClusterQueue shares its Usage.
func (c *ClusterQueue[C]) WhatIfUsageShared() *bool { return &c.whatIfUsageShared }

// WhatIfUsageShared: whether the Cohort shares its Usage.
func (c *Cohort[CQ, C]) WhatIfUsageShared() *bool { return &c.whatIfUsageShared }

// WhatIfSharingClusterQueue: a snapshot's ClusterQueue node as its literal makes it, marked as
// sharing both maps it is given (its parent is set later, as for any snapshot).
func WhatIfSharingClusterQueue[C nodeBase[kueue.CohortReference]]() ClusterQueue[C] {
	return ClusterQueue[C]{whatIfShared: true, whatIfUsageShared: true}
}
