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

// whatIfOwn: before a holder of the map (the cache's ClusterQueue, or a snapshot's) adds or
// deletes one of its Workloads, its own copy of it when it is marked as sharing it. So neither
// side sees the other's changes, as with Kueue's clone: a snapshot not the Workloads the cache
// assumes mid-cycle, the cache not a preemption's simulation removing candidates in a snapshot.
func whatIfOwn(workloads *map[workload.Reference]*workload.Info, shared *bool) {
	if *shared {
		*workloads = maps.Clone(*workloads)
		*shared = false
	}
}
