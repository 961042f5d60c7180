package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	utiltestingapi "sigs.k8s.io/kueue/pkg/util/testing/v1beta2"
	testingjob "sigs.k8s.io/kueue/pkg/util/testingjobs/job"
)

// gpuInput: team-a's stack with 8 GPUs of quota on one 8-GPU node, and the jobs.
func gpuInput(t *testing.T, strategy kueue.QueueingStrategy, jobs ...JobInput) *Input {
	t.Helper()
	return &Input{Objects: gpuStack(t, "8", strategy), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: jobs}
}

func f(v float64) *float64 { return &v }

func TestAJobWaitsForQuotaAndStartsTheInstantItIsFreed(t *testing.T) {
	results, summary := replayed(t, gpuInput(t, kueue.BestEffortFIFO,
		gpuJob(t, 0, "first", "8", 0, 100), gpuJob(t, 1, "second", "8", 10, 50)))
	want := []struct {
		admitted  float64
		intervals []interval
	}{
		{0, []interval{{Start: 0, End: f(100)}}},
		{100, []interval{{Start: 100, End: f(150)}}},
	}
	for i, w := range want {
		r := results[i]
		if r.AdmittedAt == nil || *r.AdmittedAt != w.admitted {
			t.Errorf("job %d admitted at %v, want %v", i, r.AdmittedAt, w.admitted)
		}
		if got, _ := json.Marshal(r.Intervals); string(got) != string(mustJSON(t, w.intervals)) {
			t.Errorf("job %d ran %s, want %s", i, got, mustJSON(t, w.intervals))
		}
		if r.Workload == nil || !apimeta.IsStatusConditionTrue(r.Workload.Status.Conditions, kueue.WorkloadFinished) {
			t.Errorf("job %d: its Workload is not finished", i)
		}
	}
	if summary.SimulatedSeconds != 150 {
		t.Errorf("the replay ended at %vs, want 150", summary.SimulatedSeconds)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	return rawJSON(t, v)
}

// The clock moves on only once an instant is quiet: settle carries a submission through the
// Job, its Workload, a scheduling cycle, the admission, the unsuspended Job and its pods on a
// node, all at the one instant, and leaves nothing changed unseen, queued or schedulable.
func TestSettleCarriesASubmissionToRunningPodsAtOneInstant(t *testing.T) {
	s, err := newSim(gpuInput(t, kueue.BestEffortFIFO, gpuJob(t, 0, "only", "4", 0, -1)))
	if err != nil {
		t.Fatal(err)
	}
	s.setNow(0)
	if err := s.settle(); err != nil {
		t.Fatal(err)
	}
	if err := s.apply(ev{kind: evSubmit, idx: 0}); err != nil {
		t.Fatal(err)
	}
	if err := s.settle(); err != nil {
		t.Fatal(err)
	}
	j := s.jobs[0]
	if !j.running || j.admittedAt == nil || *j.admittedAt != 0 {
		t.Fatalf("the job is not running from second 0: running %v, admitted at %v", j.running, j.admittedAt)
	}
	if !s.dirty.empty() || s.wlQ.len()+s.jobQ.len()+s.podQ.len()+len(s.retry) > 0 || s.hasHeads() {
		t.Errorf("settle returned with work left: dirty %v, queued %d/%d/%d, retry %d, heads %v",
			!s.dirty.empty(), s.wlQ.len(), s.jobQ.len(), s.podQ.len(), len(s.retry), s.hasHeads())
	}
	if s.stats.Cycles == 0 || s.stats.Reconciles == 0 {
		t.Errorf("no cycle or reconcile ran: %+v", s.stats)
	}
}

// A StrictFIFO head that can never fit is put back at once and tried again at every cycle;
// the instant still comes to rest (the queues' state no longer changes), in a few cycles.
func TestAStrictFIFOHeadThatCanNeverFitComesToRest(t *testing.T) {
	results, summary := replayed(t, gpuInput(t, kueue.StrictFIFO, gpuJob(t, 0, "too-big", "16", 0, 60)))
	if results[0].AdmittedAt != nil {
		t.Fatalf("a 16-GPU job was admitted on 8 GPUs of quota at %v", *results[0].AdmittedAt)
	}
	reserved := apimeta.FindStatusCondition(results[0].Workload.Status.Conditions, kueue.WorkloadQuotaReserved)
	if reserved == nil || reserved.Status != metav1.ConditionFalse || !strings.Contains(reserved.Message, "nvidia.com/gpu") {
		t.Errorf("QuotaReserved: %+v", reserved)
	}
	if summary.Cycles > 5 {
		t.Errorf("%d scheduling cycles for one job that cannot fit", summary.Cycles)
	}
}

func TestAnInstantThatDoesNotComeToRestWithinItsStepsIsAnError(t *testing.T) {
	t.Setenv("GPUQ_WHATIF_MAX_STEPS", "1")
	s, err := newSim(gpuInput(t, kueue.BestEffortFIFO, gpuJob(t, 0, "only", "4", 0, 60)))
	if err != nil {
		t.Fatal(err)
	}
	err = s.replay()
	if err == nil || err.Error() != "the replay did not come to rest at 0s after 1 steps" {
		t.Fatalf("replay: %v", err)
	}
}

// With until, the replay ends there: a job still running has run until then.
func TestTheReplayEndsAtUntilWithTheRunningJobsRunning(t *testing.T) {
	in := gpuInput(t, kueue.BestEffortFIFO, gpuJob(t, 0, "long", "8", 0, 1000), gpuJob(t, 1, "later", "8", 5, 10))
	in.Until = 300
	results, summary := replayed(t, in)
	if summary.SimulatedSeconds != 300 {
		t.Errorf("ended at %vs, want 300", summary.SimulatedSeconds)
	}
	if !results[0].AllRunning || results[0].RunSeconds != 300 {
		t.Errorf("the long job: running %v for %vs, want running for 300s", results[0].AllRunning, results[0].RunSeconds)
	}
	if results[1].AdmittedAt != nil {
		t.Errorf("the later job was admitted at %v, while the long one held the quota", *results[1].AdmittedAt)
	}
}

func TestRingWatchSamplesLateStepsAndFindsTheFirstRepeat(t *testing.T) {
	steps := []struct {
		step   int
		held   string
		due    bool
		period int
		again  bool
	}{
		{0, "a", false, 0, false},
		{churnAfter - 1, "a", false, 0, false},
		{churnAfter, "a b", true, 0, false},
		{churnAfter + 1, "a b", false, 0, false},
		{churnAfter + churnEvery, "c", true, 0, false},
		{churnAfter + 2*churnEvery, "a", true, 0, false},
		{churnAfter + 3*churnEvery, "a", true, 0, false}, // no change since the last sample
		{churnAfter + 4*churnEvery, "a b", true, 4 * churnEvery, true},
	}
	r := newRingWatch()
	for _, st := range steps {
		if got := r.due(st.step); got != st.due {
			t.Fatalf("due(%d) = %v, want %v", st.step, got, st.due)
		}
		if !st.due {
			continue
		}
		period, again := r.seen(st.step, st.held)
		if period != st.period || again != st.again {
			t.Errorf("seen(%d, %q) = %d, %v; want %d, %v", st.step, st.held, period, again, st.period, st.again)
		}
	}
}

func TestHoldingNamesTheWorkloadsWithQuotaThatHaveNotFinished(t *testing.T) {
	reserved := metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue}
	finished := metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue}
	wl := func(conds ...metav1.Condition) *kueue.Workload {
		w := &kueue.Workload{}
		w.Status.Conditions = conds
		return w
	}
	s := &sim{seen: map[types.NamespacedName]*kueue.Workload{}, holders: map[types.NamespacedName]bool{}}
	s.see(types.NamespacedName{Namespace: "b", Name: "holds"}, wl(reserved))
	s.see(types.NamespacedName{Namespace: "a", Name: "holds"}, wl(reserved))
	s.see(types.NamespacedName{Namespace: "a", Name: "done"}, wl(reserved))
	s.see(types.NamespacedName{Namespace: "a", Name: "done"}, wl(reserved, finished)) // it ended
	s.see(types.NamespacedName{Namespace: "a", Name: "waiting"}, wl())
	s.see(types.NamespacedName{Namespace: "c", Name: "gone"}, wl(reserved))
	s.see(types.NamespacedName{Namespace: "c", Name: "gone"}, nil) // deleted
	if got, want := s.holding(), "[a/holds b/holds]"; got != want {
		t.Errorf("holding() = %s, want %s", got, want)
	}
}

// What the quiet test reads of the queues: a workload that does not fit waits among the
// inadmissible ones of a BestEffortFIFO queue, and at the head of a StrictFIFO one, which a
// cycle would pick again (the instant rests because the cycle changes nothing).
func TestQueueStateCountsEachClusterQueuesHeapAndInadmissibleWorkloads(t *testing.T) {
	cases := []struct {
		strategy kueue.QueueingStrategy
		state    qcache.WhatIfCounts
		heads    bool
	}{
		{kueue.BestEffortFIFO, qcache.WhatIfCounts{Inadmissible: 1}, false},
		{kueue.StrictFIFO, qcache.WhatIfCounts{Heap: 1}, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.strategy), func(t *testing.T) {
			s, err := newSim(gpuInput(t, tc.strategy, gpuJob(t, 0, "too-big", "16", 0, 60)))
			if err != nil {
				t.Fatal(err)
			}
			s.setNow(0)
			if len(s.queueState()) != 0 || s.hasHeads() {
				t.Fatalf("before any submission: state %v, heads %v", s.queueState(), s.hasHeads())
			}
			if err := s.apply(ev{kind: evSubmit, idx: 0}); err != nil {
				t.Fatal(err)
			}
			if err := s.settle(); err != nil {
				t.Fatal(err)
			}
			want := map[kueue.ClusterQueueReference]qcache.WhatIfCounts{"team-a": tc.state}
			if got := s.queueState(); !maps.Equal(got, want) || s.hasHeads() != tc.heads {
				t.Errorf("state %v, heads %v; want %v, %v", got, s.hasHeads(), want, tc.heads)
			}
		})
	}
}

// Kueue's preemptor evicts a preemption's victims on up to eight goroutines, so their Evicted
// writes reached the engine's informer, which hands Workloads out in write order, in an order
// the Go runtime chose, different from run to run. The engine's copy evicts them one after
// another in the preemptor's own order (overlay/rewrites.tsv, IssuePreemptions): the most
// recently admitted first. Four low-priority jobs of 2 GPUs hold the 8 at 0 s (admitted a
// second apart on Kueue's clock); an 8-GPU high-priority job at 10 s preempts all four.
func TestAPreemptionsVictimsReachTheInformerInKueuesOrderOnEveryRun(t *testing.T) {
	want := []string{"low-3", "low-2", "low-1", "low-0"}
	for run := range 12 {
		s, err := newSim(preemptionInput(t))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		s.informed = func(wls []types.NamespacedName) {
			var victims []string
			for _, k := range wls {
				if name, ok := strings.CutPrefix(k.Name, "job-"); ok && strings.HasPrefix(name, "low-") && s.now == 10 {
					victims = append(victims, name[:len("low-0")])
				}
			}
			if got == nil && len(victims) == len(want) {
				got = victims
			}
		}
		if err := s.replay(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("run %d: the victims reached the informer as %v, want %v", run, got, want)
		}
	}
}

// preemptionInput: team-a's 8 GPUs with preemption of lower priorities within its queue, four
// low-priority 2-GPU jobs at 0 s and a high-priority 8-GPU job at 10 s.
func preemptionInput(t *testing.T) *Input {
	t.Helper()
	in := gpuInput(t, kueue.BestEffortFIFO)
	var cq map[string]any
	if err := json.Unmarshal(in.Objects[2], &cq); err != nil {
		t.Fatal(err)
	}
	cq["spec"].(map[string]any)["preemption"] = map[string]any{"withinClusterQueue": "LowerPriority"}
	in.Objects[2] = rawJSON(t, cq)
	for name, value := range map[string]int32{"low": 10, "high": 1000} {
		in.Objects = append(in.Objects, withKind(t, utiltestingapi.MakeWorkloadPriorityClass(name).PriorityValue(value).Obj()))
	}
	for i := range 4 {
		in.Jobs = append(in.Jobs, priorityJob(t, i, fmt.Sprintf("low-%d", i), "low", "2", 0))
	}
	in.Jobs = append(in.Jobs, priorityJob(t, 4, "high", "high", "8", 10))
	return in
}

// priorityJob: gpuJob with a WorkloadPriorityClass, running for 100 s.
func priorityJob(t *testing.T, index int, name, class, gpus string, at float64) JobInput {
	t.Helper()
	j := testingjob.MakeJob(name, "team-a").Queue("gpu-queue").Suspend(false).WorkloadPriorityClass(class).
		RequestAndLimit("nvidia.com/gpu", gpus).Request(corev1.ResourceCPU, "1").Obj()
	j.TypeMeta = metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"}
	return JobInput{Kind: "Job", Index: index, Manifest: rawJSON(t, j), SubmitAt: at, Duration: 100}
}

// While the engine loads the stack, the LocalQueues of a ClusterQueue come from its own index
// instead of the in-memory client's List; the answer must be the List's, in its order:
// team-a's four LocalQueues (gpu-queue, zz and b in team-a, aa in team-b, given in that order)
// are listed b, gpu-queue, zz, aa; team-b has one in team-a; a third ClusterQueue has none.
func TestTheStacksLocalQueuesOfAClusterQueueAreListedAsTheClientListsThem(t *testing.T) {
	objs := gpuStack(t, "8", kueue.BestEffortFIFO)
	for _, lq := range []*kueue.LocalQueue{
		utiltestingapi.MakeLocalQueue("zz", "team-a").ClusterQueue("team-a").Obj(),
		utiltestingapi.MakeLocalQueue("aa", "team-b").ClusterQueue("team-a").Obj(),
		utiltestingapi.MakeLocalQueue("other", "team-a").ClusterQueue("team-b").Obj(),
		utiltestingapi.MakeLocalQueue("b", "team-a").ClusterQueue("team-a").Obj(),
	} {
		objs = append(objs, withKind(t, lq))
	}
	s, err := newSim(&Input{Objects: objs, CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t), Nodes: gpuNodes(1)})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := decodeObjects(s.scheme, objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, cq := range []string{"team-a", "team-b", "none"} {
		opts := []ctrl.ListOption{ctrl.MatchingFields{indexer.QueueClusterQueueKey: cq}}
		var want, got kueue.LocalQueueList
		if err := s.base.List(s.ctx, &want, opts...); err != nil {
			t.Fatal(err)
		}
		s.loading = stackQueues(stored)
		err := s.cl.List(s.ctx, &got, opts...)
		s.loading = nil
		if err != nil {
			t.Fatal(err)
		}
		names := func(l kueue.LocalQueueList) (out []string) {
			for _, q := range l.Items {
				out = append(out, q.Namespace+"/"+q.Name+":"+string(q.Spec.ClusterQueue))
			}
			return out
		}
		if !slices.Equal(names(got), names(want)) || len(want.Items) != len(got.Items) {
			t.Errorf("%s: listed %v while loading, the client lists %v", cq, names(got), names(want))
		}
	}
}
