package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobs/leaderworkerset"
)

// gpuLWS: team-a's LeaderWorkerSet of `groups` groups of `size` pods (a leader template and a
// worker template) of gpus GPUs each, submitted at `at`, kept for `runs` seconds after all its
// groups first ran (negative: until the end).
func gpuLWS(t *testing.T, index int, name string, groups, size int32, gpus string, at, runs float64) JobInput {
	t.Helper()
	template := func(role string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"role": role}}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: role, Image: "serve:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("1"), "nvidia.com/gpu": mustParse(gpus)},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": mustParse(gpus)}}}}}}
	}
	leader := template("leader")
	l := lwsv1.LeaderWorkerSet{
		TypeMeta: metav1.TypeMeta{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a",
			Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpu-queue"}},
		Spec: lwsv1.LeaderWorkerSetSpec{Replicas: &groups, LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
			Size: &size, LeaderTemplate: &leader, WorkerTemplate: template("worker")}},
	}
	return JobInput{Kind: "LeaderWorkerSet", Index: index, Manifest: rawJSON(t, l), SubmitAt: at, Duration: runs}
}

// Kueue makes a Workload per group, named from the LWS and the group's index, with pod sets
// leader (1) and worker (size-1), and admits each on its own. One queue of 64 GPUs on 12
// nodes of 8 (the quota, not the nodes, holds group 1 back; a pod Kueue's LWS reconciler
// found no StatefulSet of would run at once): LWS first (one group of 4 pods of 8 GPUs) from 0 s, kept 600 s; LWS w (two such
// groups) at 60 s: its group 0 is admitted at once (32+32), group 1 waits for quota (96 > 64)
// until first is deleted, at 600 s, and its Workloads with it. w's row is admitted at 600 s,
// its groups together from 600 s; they ran 60-3600 and 600-3600 s: (3540+3000)/2 s a group.
func TestALeaderWorkerSetIsAdmittedGroupByGroup(t *testing.T) {
	in := &Input{Objects: gpuStack(t, "64", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(12), Jobs: []JobInput{gpuLWS(t, 0, "first", 1, 4, "8", 0, 600), gpuLWS(t, 1, "w", 2, 4, "8", 60, -1)}, Until: 3600}
	results, _ := replayed(t, in)
	if len(results) != 2 {
		t.Fatalf("%d lines, want one per LWS", len(results))
	}
	first, w := results[0], results[1]
	if got := string(mustJSON(t, first.Intervals)); first.AdmittedAt == nil || *first.AdmittedAt != 0 || got != `[{"start":0,"end":600}]` || !first.Deleted {
		t.Errorf("first: admitted at %v, ran %s, deleted %v; want 0, [0, 600], deleted", first.AdmittedAt, got, first.Deleted)
	}
	if got := string(mustJSON(t, w.Intervals)); w.AdmittedAt == nil || *w.AdmittedAt != 600 || got != `[{"start":600,"end":null}]` {
		t.Errorf("w: admitted at %v, ran %s; want 600, from 600 on", w.AdmittedAt, got)
	}
	if w.RunSeconds != 3270 || !w.AllRunning || w.Deleted {
		t.Errorf("w: %v s a group, running %v, deleted %v; want 3270, running", w.RunSeconds, w.AllRunning, w.Deleted)
	}
	if len(w.Replicas) != 2 {
		t.Fatalf("w's Workloads: %d, want one per group", len(w.Replicas))
	}
	for g, wl := range w.Replicas {
		ps := wl.Spec.PodSets
		if want := leaderworkerset.GetWorkloadName(uidFor("job", 1), "w", []string{"0", "1"}[g]); wl.Name != want {
			t.Errorf("group %d's Workload is %s, want %s", g, wl.Name, want)
		}
		if len(ps) != 2 || ps[0].Name != "leader" || ps[0].Count != 1 || ps[1].Name != "worker" || ps[1].Count != 3 {
			t.Errorf("group %d's pod sets: %v; want leader 1, worker 3", g, ps)
		}
	}
	if ran := ranStep(w); ran == nil || len(ran.Nodes) != 4 {
		t.Errorf("w's first group was placed as %v, want on 4 nodes", ran)
	}
}

// Until quota frees, the LWS's row is pending on its waiting group, with Kueue's message.
// The stack above, to 300 s: w's group 0 admitted at 60 s, group 1 not.
func TestALeaderWorkerSetWaitsForItsLastGroupWithKueuesMessage(t *testing.T) {
	in := &Input{Objects: gpuStack(t, "64", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(8), Jobs: []JobInput{gpuLWS(t, 0, "first", 1, 4, "8", 0, 600), gpuLWS(t, 1, "w", 2, 4, "8", 60, -1)}, Until: 300}
	results, _ := replayed(t, in)
	w := results[1]
	if w.AdmittedAt != nil || w.AllRunning {
		t.Errorf("w: admitted at %v, running %v; want neither", w.AdmittedAt, w.AllRunning)
	}
	admitted := 0
	for _, wl := range w.Replicas {
		if wl.Status.Admission != nil {
			admitted++
		}
	}
	if admitted != 1 || w.Workload == nil || w.Workload.Status.Admission != nil {
		t.Fatalf("w: %d of %d groups admitted, its row's Workload %v; want 1 of 2, the waiting group's", admitted, len(w.Replicas), w.Workload)
	}
	c := apimeta.FindStatusCondition(w.Workload.Status.Conditions, kueue.WorkloadQuotaReserved)
	if c == nil || !strings.Contains(c.Message, "insufficient unused quota for nvidia.com/gpu in flavor gpu") {
		t.Errorf("the waiting group's QuotaReserved: %v; want Kueue's insufficient unused quota", c)
	}
}

// Kueue preempts a group by deleting its pods; LWS's StatefulSets make them again, gated, and
// the group waits to be admitted again. One queue of 32 GPUs preempting lower priorities, 4
// nodes: LWS low (one group of 4 pods of 8 GPUs, kept 300 s) from 0 s; Job high (8 GPUs) at
// 60 s preempts it and runs 120 s; low's group is admitted again at 180 s and, its run begun
// again, is deleted 300 s later, at 480 s (as the sandbox engine counts a run).
func TestAPreemptedLeaderWorkerSetGroupIsMadeAgainAndReadmitted(t *testing.T) {
	low := gpuLWS(t, 0, "low", 1, 4, "8", 0, 300)
	low.Manifest = withLabel(t, low.Manifest, "kueue.x-k8s.io/priority-class", "low")
	high := gpuJob(t, 1, "high", "8", 60, 120)
	high.Manifest = withLabel(t, high.Manifest, "kueue.x-k8s.io/priority-class", "high")
	in := &Input{Objects: preemptingStack(t, "32"), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t), Nodes: gpuNodes(4),
		Jobs: []JobInput{low, high}, Until: 1000}
	results, _ := replayed(t, in)
	r := results[0]
	if got, want := string(mustJSON(t, r.Intervals)), `[{"start":0,"end":60},{"start":180,"end":480}]`; got != want {
		t.Errorf("low ran %s, want %s", got, want)
	}
	if len(r.Evictions) != 1 || r.AllRunning || !r.Deleted || r.RunSeconds != 360 {
		t.Errorf("low: evicted %d times, running %v, deleted %v, %v s; want once, deleted, 60+300 s", len(r.Evictions), r.AllRunning, r.Deleted, r.RunSeconds)
	}
	checkRuns(t, results[1:], []runWant{{admitted: 60, ran: `[{"start":60,"end":180}]`, pods: 1}})
}
