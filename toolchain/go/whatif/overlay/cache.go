// Added to sigs.k8s.io/kueue/pkg/cache/scheduler at build time (toolchain/build.sh whatif_kueue):
// a ClusterQueue's admitted Workloads shared, copy on write, between Kueue's cache and the
// snapshots its scheduler takes of it, for the rewrites in rewrites.tsv (which say why no
// public API serves).
package scheduler

import (
	"maps"

	"sigs.k8s.io/kueue/pkg/workload"
)

//lint:file-ignore U1000 each helper serves the rewrites of the releases that have its code (rewrites.tsv)

// whatIfShare: the Workloads map of a cache's ClusterQueue handed to a snapshot as it is, the
// ClusterQueue marked as sharing it (its whatIfShared field, added by a rewrite), where Kueue
// clones it for every ClusterQueue in every scheduling cycle. The snapshot is marked too (a
// rewrite of the literal that makes it).
func whatIfShare(cq *clusterQueue) map[workload.Reference]*workload.Info {
	cq.whatIfShared = true
	return cq.Workloads
}

// whatIfOwnCache: before the cache's ClusterQueue adds or deletes one of its Workloads, its own
// copy of the map when a snapshot still shares the one it has. A snapshot never sees the
// cache's later changes, as with Kueue's clone.
func whatIfOwnCache(cq *clusterQueue) {
	if cq.whatIfShared {
		cq.Workloads = maps.Clone(cq.Workloads)
		cq.whatIfShared = false
	}
}

// whatIfOwnSnapshot: the same for a snapshot's ClusterQueue, before the scheduler adds or
// removes a Workload in it (an admission in the cycle, a preemption's simulation): the cache
// never sees a snapshot's changes, as with Kueue's clone.
func whatIfOwnSnapshot(cq *ClusterQueueSnapshot) {
	if cq.whatIfShared {
		cq.Workloads = maps.Clone(cq.Workloads)
		cq.whatIfShared = false
	}
}
