// Added to sigs.k8s.io/kueue/pkg/cache/queue at build time (go build -overlay, see
// toolchain/build.sh): lets the what-if engine ask, without blocking, whether a scheduling
// cycle would find heads (Manager.Heads blocks while there are none).
package queue

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
