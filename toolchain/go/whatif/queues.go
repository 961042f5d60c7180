package main

import (
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/types"
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

// leftByCycle: what the last scheduling cycle left to do. others: work beside Workloads (a job
// or pod written, a controller's queue, pods to try again); busy: that, or a Workload written
// or queued, or the queues' counts other than `before`.
func (s *sim) leftByCycle(before map[kueue.ClusterQueueReference]qcache.WhatIfCounts) (others, busy bool) {
	others = !s.dirty.onlyWorkloads() || s.jobQ.len()+s.podQ.len()+s.lqQ.len()+s.familiesQueued()+s.sts.q.len()+s.sts.podQ.len()+s.lwss.q.len()+len(s.retry) > 0
	busy = others || !s.dirty.empty() || s.wlQ.len() > 0 || !maps.Equal(s.queueState(), before)
	return others, busy
}

// comeRound: whether the last scheduling cycle left what an earlier cycle of the instant left
// (`seen` holds those): the queues' counts, who holds quota, and each of the cycle's heads with
// its Workload's conditions and the flavors it has tried. Kueue's scheduler is then going round
// a loop it leaves only when something else happens, so the instant is at rest. A StrictFIFO
// head that fits nowhere and whose attempts alternate spins so on a cluster: a JobSet whose CPU
// leader is tried on one flavor and then the other writes one message and then the other, and
// each write of a pending Workload puts it back into its heap (the workload controller's
// AddOrUpdateWorkload); the sandbox counts a rewording as no change (`strict`). Such a JobSet
// of a cross-check seed (speech/j004, 3720 s) kept the engine from ever coming to rest. Asked
// only of long instants (churnAfter steps): the heads' reads cost.
func (s *sim) comeRound(seen map[string]bool) bool {
	var b strings.Builder
	fmt.Fprint(&b, s.queueState(), s.holding())
	for _, h := range s.sched.WhatIfHeads() {
		fmt.Fprint(&b, "|", h)
		if info := s.queues.WhatIfInHeap(h); info != nil && info.LastAssignment != nil {
			fmt.Fprintf(&b, "%+v", *info.LastAssignment)
		}
		ns, name, _ := strings.Cut(string(h), "/")
		wl := &kueue.Workload{}
		if err := s.get(types.NamespacedName{Namespace: ns, Name: name}, wl); err == nil {
			for _, c := range wl.Status.Conditions {
				fmt.Fprint(&b, ";", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	key := b.String()
	if seen[key] {
		return true
	}
	seen[key] = true
	return false
}
