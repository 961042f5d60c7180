package main

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// gpuStatefulSet: team-a's StatefulSet of `replicas` pods of gpus GPUs each, submitted at
// `at`, serving for `runs` seconds (negative: until the end).
func gpuStatefulSet(t *testing.T, index int, name string, replicas int32, gpus string, at, runs float64) JobInput {
	t.Helper()
	meta, selector, template := servingPods(name, gpus)
	sts := appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: meta,
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: selector, Template: template}}
	return JobInput{Kind: "StatefulSet", Index: index, Manifest: rawJSON(t, sts), SubmitAt: at, Duration: runs}
}

// A StatefulSet is one Workload of its replicas, admitted whole: one queue of 8 GPUs on one
// 8-GPU node, Job a (6 GPUs) runs 0-600 s; StatefulSet s (two pods of 2 GPUs) comes at 60 s and
// is held until a ends (6+4 > 8), admitted at 600 s, its two pods placed together; its user
// deletes it after its 300 s, at 900 s, and its Workload is finished.
func TestAStatefulSetIsOneWorkloadOfItsReplicasAdmittedWhole(t *testing.T) {
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{gpuJob(t, 0, "a", "6", 0, 600), gpuStatefulSet(t, 1, "s", 2, "2", 60, 300)}}
	results, _ := replayed(t, in)
	checkRuns(t, results[:1], []runWant{{admitted: 0, ran: `[{"start":0,"end":600}]`, pods: 1}})
	r := results[1]
	if r.AdmittedAt == nil || *r.AdmittedAt != 600 || string(mustJSON(t, r.Intervals)) != `[{"start":600,"end":900}]` {
		t.Errorf("the StatefulSet: admitted at %v, ran %s; want 600, [600, 900]", r.AdmittedAt, mustJSON(t, r.Intervals))
	}
	if ran := ranStep(r); ran == nil || len(ran.Nodes) != 2 {
		t.Errorf("its pods were placed as %v, want 2", ran)
	}
	if wl := r.Workload; !r.Deleted || wl == nil || len(wl.Spec.PodSets) != 1 || wl.Spec.PodSets[0].Count != 2 {
		t.Errorf("the StatefulSet's Workload: %v (deleted %v), want one pod set of 2, deleted with it", wl, r.Deleted)
	}
}

// Its Workload deleted with it frees the quota: StatefulSet s (8 GPUs) serves 0-600 s; Job b
// (8 GPUs), submitted at 60 s, is admitted at 600 s and runs its 100 s.
func TestADeletedStatefulSetFreesItsQuota(t *testing.T) {
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{gpuStatefulSet(t, 0, "s", 2, "4", 0, 600), gpuJob(t, 1, "b", "8", 60, 100)}}
	results, _ := replayed(t, in)
	checkRuns(t, results[1:], []runWant{{admitted: 600, ran: `[{"start":600,"end":700}]`, pods: 1}})
}

// A StatefulSet with no duration serves to the end of the replay: admitted at once, running.
func TestAStatefulSetServesToTheEnd(t *testing.T) {
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{gpuStatefulSet(t, 0, "s", 3, "2", 30, -1)}, Until: 3600}
	results, _ := replayed(t, in)
	r := results[0]
	if r.AdmittedAt == nil || *r.AdmittedAt != 30 || !r.AllRunning || r.Problem != "" {
		t.Fatalf("the StatefulSet: admitted at %v, running %v, problem %q; want admitted at 30 and running", r.AdmittedAt, r.AllRunning, r.Problem)
	}
	if got := string(mustJSON(t, r.Intervals)); got != `[{"start":30,"end":null}]` {
		t.Errorf("it ran %s, want from 30 s on", got)
	}
}

// Kueue preempts a StatefulSet's group by deleting its pods; its controller makes them again,
// gated, and the group waits to be admitted again. One queue of 8 GPUs preempting lower
// priorities: low (two pods of 4 GPUs) from 0 s; Job high (8 GPUs) at 60 s preempts it and runs
// 120 s; low is admitted again at 180 s and serves its 100 s again, to 280 s.
func TestAPreemptedStatefulSetGetsItsPodsBackAndRunsAgain(t *testing.T) {
	checkLowPreemptedByHigh(t, gpuStatefulSet(t, 0, "low", 2, "4", 0, 100), nil)
}
