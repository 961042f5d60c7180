// Added to sigs.k8s.io/kueue/pkg/cache/queue at build time (toolchain/build.sh whatif_kueue):
// what the engine's quiet test asks the queue manager after every scheduling cycle, counted
// instead of listed. No public API serves: Dump and DumpInadmissible give the counts as a key
// string per pending workload (the test ran them twice a cycle: 15% of the CPU of a
// 15,000-workload replay); Pending gives a ClusterQueue's total alone, where the test needs
// the heap's and the inadmissible list's apart (a workload moved from one to the other is a
// change); and no public function finds the heap a workload is in but through a sorted
// snapshot of its ClusterQueue (PendingWorkloadsInfo). And whatIfSticky and
// whatIfNamespaces, for two rewrites (rewrites.tsv).
package queue

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

//lint:file-ignore U1000 whatIfSticky serves the rewrite of the releases that have its code (rewrites.tsv)

// WhatIfCounts: how many workloads a ClusterQueue has in its heap and among its inadmissible
// ones; the lengths of its entries in Dump and DumpInadmissible.
type WhatIfCounts struct{ Heap, Inadmissible int }

// WhatIfQueueCounts: each ClusterQueue with a workload in its heap or among its inadmissible
// ones, and how many; the ClusterQueues Dump and DumpInadmissible name, with the lengths of
// their lists. One read per ClusterQueue, none per workload.
func (m *Manager) WhatIfQueueCounts() map[kueue.ClusterQueueReference]WhatIfCounts {
	m.Lock()
	defer m.Unlock()
	counts := map[kueue.ClusterQueueReference]WhatIfCounts{}
	for name, cq := range m.hm.ClusterQueues() {
		cq.rwm.RLock()
		c := WhatIfCounts{Heap: cq.heap.Len(), Inadmissible: cq.inadmissibleWorkloads.len()}
		cq.rwm.RUnlock()
		if c != (WhatIfCounts{}) {
			counts[name] = c
		}
	}
	return counts
}

// WhatIfHasHeads: whether an active ClusterQueue (active says which) has a workload in its
// heap: one of Dump's ClusterQueues that heads() pops from.
func (m *Manager) WhatIfHasHeads(active func(kueue.ClusterQueueReference) bool) bool {
	m.Lock()
	defer m.Unlock()
	for name, cq := range m.hm.ClusterQueues() {
		cq.rwm.RLock()
		n := cq.heap.Len()
		cq.rwm.RUnlock()
		if n > 0 && active(name) {
			return true
		}
	}
	return false
}

// WhatIfInHeap: the workload of key in its ClusterQueue's heap (what Dump lists and
// PendingWorkloadsInfo returns of it), or nil. Its ClusterQueue is its LocalQueue's, found as
// Kueue's own delete finds it (deleteWorkloadWithoutLock): a workload goes only into the heap
// of the ClusterQueue of the LocalQueue it is assigned to.
func (m *Manager) WhatIfInHeap(key workload.Reference) *workload.Info {
	m.Lock()
	defer m.Unlock()
	lq := m.localQueues[m.workloadAssignedQueues[key]]
	if lq == nil {
		return nil
	}
	cq := m.hm.ClusterQueue(lq.ClusterQueue)
	if cq == nil {
		return nil
	}
	cq.rwm.RLock()
	defer cq.rwm.RUnlock()
	return cq.heap.GetByKey(key)
}

// whatIfSticky: whether name is set and is workload.Key(wl), as Kueue's stickyWorkload.matches
// (v0.18) answers for the key, without building the key. Kueue's queue order asks that of both
// workloads of every comparison its heaps make, and building "namespace/name" for it was 6% of
// the CPU of Kueue's harness baseline (docs/what-if.md, Speed); a sticky workload is set only
// while a preemption is under way. The key is the namespace, a slash and the name
// (workload.NewReference), compared piece by piece.
func whatIfSticky(name *workload.Reference, wl *kueue.Workload) bool {
	if name == nil {
		return false
	}
	key, ns := string(*name), wl.Namespace
	return len(key) == len(ns)+1+len(wl.Name) && key[:len(ns)] == ns && key[len(ns)] == '/' && key[len(ns)+1:] == wl.Name
}

// whatIfNamespaces: how queueInadmissibleWorkloads reads each inadmissible workload's
// Namespace, to match the ClusterQueue's namespaceSelector: once per Namespace per call, from
// the client it was given, where Kueue reads it from the client for every workload, at every
// requeue of the ClusterQueue's inadmissible workloads. Each of those reads was a deep copy of
// the Namespace and a Namespace made on the heap: 4.2 s of the 62.8 s of CPU of Kueue's
// harness baseline, where hundreds of a ClusterQueue's workloads share one Namespace. Nothing
// else runs during the call (the engine runs Kueue's code one piece at a time), so no
// Namespace changes in it. It gives the Namespace's labels, the one field of it the function
// reads, in the map of the Namespace read.
type whatIfNamespaces struct {
	client client.Client
	last   *whatIfNamespaceRead
	read   map[string]*whatIfNamespaceRead
}

type whatIfNamespaceRead struct {
	name string
	ns   corev1.Namespace
	err  error
}

func (n *whatIfNamespaces) get(ctx context.Context, key client.ObjectKey, ns *corev1.Namespace) error {
	read := n.last
	if read == nil || read.name != key.Name {
		read = n.read[key.Name]
		if read == nil {
			read = &whatIfNamespaceRead{name: key.Name}
			read.err = n.client.Get(ctx, key, &read.ns)
			if n.read == nil {
				n.read = map[string]*whatIfNamespaceRead{}
			}
			n.read[key.Name] = read
		}
		n.last = read
	}
	ns.Labels = read.ns.Labels
	return read.err
}
