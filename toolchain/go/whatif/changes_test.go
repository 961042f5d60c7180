package main

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utiltestingapi "sigs.k8s.io/kueue/pkg/util/testing/v1beta2"
)

// stopped: team-a's ClusterQueue (gpuStack's) with the stop policy given.
func stopped(t *testing.T, policy kueue.StopPolicy) []json.RawMessage {
	t.Helper()
	cq := utiltestingapi.MakeClusterQueue("team-a").QueueingStrategy(kueue.BestEffortFIFO).ResourceGroup(
		*utiltestingapi.MakeFlavorQuotas("gpu").Resource(corev1.ResourceCPU, "64").Resource(corev1.ResourceMemory, "256Gi").
			Resource("nvidia.com/gpu", "8").Obj()).StopPolicy(policy).Obj()
	return []json.RawMessage{withKind(t, cq)}
}

// A drain at 100 s evicts the running job then and holds the queue; started again at 200 s,
// the job is admitted again and runs its whole time from then. A job submitted while the
// queue is held waits for the start.
func TestAStackChangeDrainsAndStartsAQueueAtItsInstant(t *testing.T) {
	in := gpuInput(t, kueue.BestEffortFIFO, gpuJob(t, 0, "long", "4", 0, 300), gpuJob(t, 1, "held", "4", 150, 50))
	in.Changes = []ChangeInput{{At: 100, Objects: stopped(t, kueue.HoldAndDrain)}, {At: 200, Objects: stopped(t, kueue.None)}}
	results, _ := replayed(t, in)
	long, held := results[0], results[1]
	if got := string(mustJSON(t, long.Intervals)); got != `[{"start":0,"end":100},{"start":200,"end":500}]` {
		t.Errorf("the long job ran %s", got)
	}
	if len(long.Evictions) != 1 || len(long.Evictions[0]) == 0 || long.Evictions[0][0].Reason != kueue.WorkloadEvictedByClusterQueueStopped {
		t.Errorf("the long job's evictions: %+v", long.Evictions)
	}
	if held.AdmittedAt == nil || *held.AdmittedAt != 200 {
		t.Errorf("the job submitted while the queue was held was admitted at %v, want 200", held.AdmittedAt)
	}
}

// A LocalQueue's timers are held as a controller's delaying queue holds them: one wait per
// queue, the earliest asked for; a later one is not queued, an earlier one replaces it (the
// replaced timer is dropped when it comes).
func TestALocalQueueHasOneWaitTheEarliest(t *testing.T) {
	s := &sim{lqDue: map[types.NamespacedName]float64{}}
	key := types.NamespacedName{Namespace: "team-a", Name: "gpu-queue"}
	s.reconcileQueueAt(key, 300)
	s.reconcileQueueAt(key, 400)
	s.reconcileQueueAt(key, 1)
	if s.events.Len() != 2 || s.lqDue[key] != 1 {
		t.Fatalf("%d timers pushed, due at %v; want 2 (300 and 1), due at 1", s.events.Len(), s.lqDue[key])
	}
	if !s.lqTimerDue(ev{at: 1, tgt: target{kind: kindLocalQueue, key: key}}) {
		t.Error("the earliest timer was dropped")
	}
	if s.lqTimerDue(ev{at: 300, tgt: target{kind: kindLocalQueue, key: key}}) {
		t.Error("the timer the earlier one replaced fired")
	}
}
