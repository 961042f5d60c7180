package main

import (
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
)

// What the clock's quiet test asks Kueue's queue manager, after every scheduling cycle: through
// the overlay's counts (overlay/queue.go), one read per ClusterQueue, where Kueue's public dump
// functions list a key per pending workload.

// hasHeads: whether a scheduling cycle would find heads now (the queue manager's Heads blocks
// while there are none, so the engine asks first): an active ClusterQueue with a workload in
// its heap. Heads also takes the workloads of the second-pass queue, which only
// topology-aware scheduling fills; the fast engine does not replay topology-aware stacks
// (gpu_queues/whatif/engine_input.py refuses them), so it stays empty.
func (s *sim) hasHeads() bool {
	return s.queues.WhatIfHasHeads(s.cache.ClusterQueueActive)
}

// queueState: how many workloads each ClusterQueue has in its heap and among its inadmissible
// ones (those with any). A scheduling cycle that writes nothing and leaves this unchanged has
// reached a fixed point (a StrictFIFO head that does not fit is put back at once and tried
// again and again).
func (s *sim) queueState() map[kueue.ClusterQueueReference]qcache.WhatIfCounts {
	return s.queues.WhatIfQueueCounts()
}

// flavorsLeft: whether a head of the last scheduling cycle went back to its heap with flavors
// left to try. With flavor fungibility, a head that fits none of the flavors it tried is put
// back into the heap at once (Kueue's requeueIfNotPresent: its LastAssignment has pending
// flavors) to try the next ones in the next cycle, which may write nothing new (its message
// can read as the last attempt's) and leave every heap and inadmissible list as long as
// before; only when none is left does it go among the inadmissible and let the next workload
// be the head. Asked only of a cycle that changed nothing else.
func (s *sim) flavorsLeft() bool {
	for _, h := range s.sched.WhatIfHeads() {
		if info := s.queues.WhatIfInHeap(h); info != nil && info.LastAssignment.PendingFlavors() {
			return true
		}
	}
	return false
}
