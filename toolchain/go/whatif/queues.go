package main

import (
	"fmt"
	"slices"
	"strings"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// What the clock's quiet test asks Kueue's queue manager, through its public dump functions.

// hasHeads: whether a scheduling cycle would find heads now (the queue manager's Heads blocks
// while there are none, so the engine asks first): an active ClusterQueue with a workload in
// its heap. Heads also takes the workloads of the second-pass queue, which only
// topology-aware scheduling fills; the fast engine does not replay topology-aware stacks
// (gpu_queues/whatif/engine_input.py refuses them), so it stays empty.
func (s *sim) hasHeads() bool {
	for cq := range s.queues.Dump() {
		if s.cache.ClusterQueueActive(cq) {
			return true
		}
	}
	return false
}

// queueState: how many workloads each ClusterQueue has in its heap and among its inadmissible
// ones. A scheduling cycle that writes nothing and leaves this unchanged has reached a fixed
// point (a StrictFIFO head that does not fit is put back at once and tried again and again).
func (s *sim) queueState() string {
	heap, inadmissible := s.queues.Dump(), s.queues.DumpInadmissible()
	names := make([]kueue.ClusterQueueReference, 0, len(heap)+len(inadmissible))
	for name := range heap {
		names = append(names, name)
	}
	for name := range inadmissible {
		if _, ok := heap[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "%s:%d:%d;", name, len(heap[name]), len(inadmissible[name]))
	}
	return b.String()
}
