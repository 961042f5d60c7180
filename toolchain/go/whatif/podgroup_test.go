package main

import (
	"encoding/json"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// groupPod: one member of team-a's pod group `group` of `total` pods, asking for gpus GPUs,
// labelled and annotated as its user writes it; image tells roles apart (Kueue's role hash).
func groupPod(t *testing.T, name, group string, total int, gpus, image string) json.RawMessage {
	t.Helper()
	p := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a",
			Labels:      map[string]string{"kueue.x-k8s.io/queue-name": "gpu-queue", "kueue.x-k8s.io/pod-group-name": group},
			Annotations: map[string]string{"kueue.x-k8s.io/pod-group-total-count": strconv.Itoa(total)}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "main", Image: image, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("1")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": mustParse(gpus)}}}}},
	}
	return rawJSON(t, p)
}

// podGroup: a pod group of the mix, its members submitted at `at` and running for `runs`.
func podGroup(index int, at, runs float64, members ...json.RawMessage) JobInput {
	return JobInput{Kind: "Pod", Index: index, Members: members, SubmitAt: at, Duration: runs}
}

// podSetCounts: the pod sets of a Workload, as their pod counts in Kueue's order.
func podSetCounts(wl *kueue.Workload) []int32 {
	var out []int32
	for _, ps := range wl.Spec.PodSets {
		out = append(out, ps.Count)
	}
	return out
}

// A pod group is admitted as one Workload, only when all its pods fit. One queue of 8 GPUs on
// one 8-GPU node: Job a (6 GPUs) runs 0-600 s; group g (two pods of 2 GPUs) comes at 60 s. One
// pod of it would fit beside a (6+2 = 8), the group does not (6+4 = 10): it is held until a
// ends at 600 s, admitted then with one pod set of 2 (the pods are of one role), both pods
// placed together, and runs its 300 s to 900 s, when its Workload is finished.
func TestAPodGroupIsHeldUntilAllItsPodsFitAndAdmittedTogether(t *testing.T) {
	g := podGroup(1, 60, 300, groupPod(t, "g-0", "g", 2, "2", "train:1"), groupPod(t, "g-1", "g", 2, "2", "train:1"))
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{gpuJob(t, 0, "a", "6", 0, 600), g}}
	results, _ := replayed(t, in)
	checkRuns(t, results, []runWant{
		{admitted: 0, ran: `[{"start":0,"end":600}]`, pods: 1},
		{admitted: 600, ran: `[{"start":600,"end":900}]`, pods: 2},
	})
	if wl := results[1].Workload; wl == nil || wl.Name != "g" || len(podSetCounts(wl)) != 1 || podSetCounts(wl)[0] != 2 {
		t.Errorf("the group's Workload: %v, want g with one pod set of 2", wl)
	}
	if n := len(results[1].Timeline); n != 2 {
		t.Errorf("the group's story has %d steps, want 2 (admitted, ran): %+v", n, results[1].Timeline)
	}
}

// A group's pod sets are its roles: a driver (1 GPU, its own image) and two workers (2 GPUs)
// make a Workload of two pod sets, of 1 and 2 pods, admitted at once on 8 GPUs (5 asked),
// its three pods placed together, and finished after its 120 s.
func TestAPodGroupHasAPodSetPerRole(t *testing.T) {
	g := podGroup(0, 30, 120, groupPod(t, "d", "mixed", 3, "1", "driver:1"),
		groupPod(t, "w-0", "mixed", 3, "2", "train:1"), groupPod(t, "w-1", "mixed", 3, "2", "train:1"))
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{g}}
	results, _ := replayed(t, in)
	checkRuns(t, results, []runWant{{admitted: 30, ran: `[{"start":30,"end":150}]`, pods: 3}})
	counts := podSetCounts(results[0].Workload)
	if len(counts) != 2 || counts[0]+counts[1] != 3 || counts[0]*counts[1] != 2 {
		t.Errorf("the group's pod sets count %v, want one of 1 and one of 2", counts)
	}
}

// A group with a member missing (total count 3, two pods written) is never admitted: Kueue
// makes no Workload until the group has all its pods, and its two pods hold nothing: Job b
// (8 GPUs, all the queue has) submitted after it is admitted at once.
func TestAPodGroupWithAMissingMemberWaitsAndHoldsNothing(t *testing.T) {
	g := podGroup(0, 0, 300, groupPod(t, "g-0", "g", 3, "2", "train:1"), groupPod(t, "g-1", "g", 3, "2", "train:1"))
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{g, gpuJob(t, 1, "b", "8", 60, 100)}}
	results, _ := replayed(t, in)
	if r := results[0]; r.AdmittedAt != nil || r.Workload != nil || len(r.Intervals) != 0 || r.Problem != "" {
		t.Errorf("the group: admitted at %v, Workload %v, ran %v, problem %q; want never admitted, no Workload",
			r.AdmittedAt, r.Workload, r.Intervals, r.Problem)
	}
	checkRuns(t, results[1:], []runWant{{admitted: 60, ran: `[{"start":60,"end":160}]`, pods: 1}})
}
