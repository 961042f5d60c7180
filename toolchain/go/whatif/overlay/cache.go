// Added to sigs.k8s.io/kueue/pkg/cache/scheduler at build time (toolchain/build.sh whatif_kueue):
// a ClusterQueue's admitted Workloads, and each ClusterQueue's and Cohort's resource Usage,
// shared, copy on write, between Kueue's cache and the snapshots its scheduler takes of it, for
// the rewrites in rewrites.tsv (which say why no public API serves).
package scheduler

import (
	"maps"

	"sigs.k8s.io/kueue/pkg/workload"
)

//lint:file-ignore U1000 each helper serves the rewrites of the releases that have its code (rewrites.tsv)

// whatIfShare: the Workloads map of a cache's ClusterQueue handed to a snapshot as it is, the
// ClusterQueue marked as sharing it (a flag of its hierarchy node that a rewrite adds and
// overlay/hierarchy.go reaches), where Kueue clones it for every ClusterQueue in every
// scheduling cycle. The snapshot is marked too (a rewrite of the literal that makes it).
func whatIfShare(cq *clusterQueue) map[workload.Reference]*workload.Info {
	*cq.WhatIfShared() = true
	return cq.Workloads
}

// whatIfOwn: before a holder of a shared map changes it in place, its own copy of it when it is
// marked as sharing it. So neither side sees the other's changes, as with Kueue's clones: for the
// admitted Workloads (the cache's ClusterQueue's or a snapshot's, before one is added or
// deleted), a snapshot not the Workloads the cache assumes mid-cycle, the cache not a
// preemption's simulation removing candidates in a snapshot; for a node's Usage
// (whatIfOwnUsage), neither side the other's admissions and removals.
func whatIfOwn[M ~map[K]V, K comparable, V any](m *M, shared *bool) {
	if *shared {
		*m = maps.Clone(*m)
		*shared = false
	}
}

// whatIfShareUsage: a cache's ClusterQueue's resource node for its snapshot, its Usage handed
// over as it is and the ClusterQueue marked as sharing it (a flag of the hierarchy node that each
// of the four types holding a resource node embeds; the snapshot's literal is marked too), where
// Kueue's resourceNode.Clone clones it for every ClusterQueue in every scheduling cycle. Quotas
// and SubtreeQuota are shared as Clone shares them (Kueue replaces those maps, never writes
// them in place).
func whatIfShareUsage(cq *clusterQueue) resourceNode {
	*cq.WhatIfUsageShared() = true
	return cq.resourceNode
}

// whatIfShareCohortUsage: the same for a Cohort and its snapshot.
func whatIfShareCohortUsage(snapshot *CohortSnapshot, c *cohort) {
	*c.WhatIfUsageShared() = true
	snapshot.ResourceNode = c.resourceNode
	*snapshot.WhatIfUsageShared() = true
}

// whatIfOwnUsage: node's resource node, as getResourceNode gives it (a copy of the struct,
// whose maps are the node's), once the node has its own Usage: addUsage and removeUsage, the
// only writes of a node's map in place, take it instead of getResourceNode before they write.
// The cache's Cohorts get new maps when their tree is summed again (updateCohortResourceNode),
// which leaves any snapshot its old one. A node of another type is given as it is: only these
// four are ever shared.
func whatIfOwnUsage(node flatResourceNode) resourceNode {
	var r *resourceNode
	var shared *bool
	switch n := node.(type) {
	case *clusterQueue:
		r, shared = &n.resourceNode, n.WhatIfUsageShared()
	case *cohort:
		r, shared = &n.resourceNode, n.WhatIfUsageShared()
	case *ClusterQueueSnapshot:
		r, shared = &n.ResourceNode, n.WhatIfUsageShared()
	case *CohortSnapshot:
		r, shared = &n.ResourceNode, n.WhatIfUsageShared()
	default:
		return node.getResourceNode()
	}
	whatIfOwn(&r.Usage, shared)
	return *r
}
