package main

import (
	"fmt"
	"slices"
	"strings"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
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

// flavorsLeft: whether a head of the last scheduling cycle went back to its heap with flavors
// left to try. With flavor fungibility, a head that fits none of the flavors it tried is put
// back into the heap at once (Kueue's requeueIfNotPresent: its LastAssignment has pending
// flavors) to try the next ones in the next cycle, which may write nothing new (its message
// can read as the last attempt's) and leave every heap and inadmissible list as long as
// before; only when none is left does it go among the inadmissible and let the next workload
// be the head. Asked only of a cycle that changed nothing else, through the queue manager's
// public functions (the heap's names; a ClusterQueue's pending workloads with their last
// assignment).
func (s *sim) flavorsLeft() bool {
	heads := s.sched.WhatIfHeads()
	if len(heads) == 0 {
		return false
	}
	inHeap := map[workload.Reference]kueue.ClusterQueueReference{}
	for cq, keys := range s.queues.Dump() {
		for _, k := range keys {
			inHeap[k] = cq
		}
	}
	for _, h := range heads {
		cq, ok := inHeap[h]
		if !ok {
			continue
		}
		for _, info := range s.queues.PendingWorkloadsInfo(cq) {
			if workload.Key(info.Obj) == h && info.LastAssignment.PendingFlavors() {
				return true
			}
		}
	}
	return false
}
