// Added to sigs.k8s.io/kueue/pkg/cache/queue at build time (go build -overlay, see
// toolchain/build.sh): lets the what-if engine ask, without blocking, whether a scheduling
// cycle would find heads (Manager.Heads blocks while there are none).
package queue

import (
	"fmt"
	"sort"
	"strings"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// WhatIfHasHeads reports whether Heads would return at least one workload now.
func (m *Manager) WhatIfHasHeads() bool {
	m.RLock()
	defer m.RUnlock()
	m.secondPassQueue.Lock()
	second := len(m.secondPassQueue.queued)
	m.secondPassQueue.Unlock()
	if second > 0 {
		return true
	}
	for cqName, cq := range m.hm.ClusterQueues() {
		if m.statusChecker != nil && !m.statusChecker.ClusterQueueActive(cqName) {
			continue
		}
		cq.rwm.RLock()
		n := cq.heap.Len()
		cq.rwm.RUnlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// WhatIfQueueState: the length of every ClusterQueue's heap and inadmissible list. A
// scheduling cycle that writes nothing and leaves this unchanged has reached a fixed point
// (a StrictFIFO head that does not fit is put back at once and tried again and again).
func (m *Manager) WhatIfQueueState() string {
	m.RLock()
	defer m.RUnlock()
	names := make([]string, 0)
	for name := range m.hm.ClusterQueues() {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		cq := m.hm.ClusterQueue(kueue.ClusterQueueReference(name))
		cq.rwm.RLock()
		fmt.Fprintf(&b, "%s:%d:%d;", name, cq.heap.Len(), cq.inadmissibleWorkloads.len())
		cq.rwm.RUnlock()
	}
	return b.String()
}
