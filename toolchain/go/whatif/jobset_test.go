package main

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	testingjobset "sigs.k8s.io/kueue/pkg/util/testingjobs/jobset"
)

// gpuJobSet: a JobSet of team-a's LocalQueue: a leader (one pod, one CPU, no GPU) unless
// leaderless, and `replicas` workers of `parallelism` pods with one GPU each.
func gpuJobSet(t *testing.T, index int, name string, leader bool, replicas, parallelism int32, at, runs float64) JobInput {
	t.Helper()
	var jobs []testingjobset.ReplicatedJobRequirements
	if leader {
		jobs = append(jobs, testingjobset.ReplicatedJobRequirements{Name: "leader", Replicas: 1, Parallelism: 1, Completions: 1})
	}
	jobs = append(jobs, testingjobset.ReplicatedJobRequirements{Name: "workers", Replicas: replicas, Parallelism: parallelism, Completions: parallelism})
	js := testingjobset.MakeJobSet(name, "team-a").Queue("gpu-queue").SetTypeMeta().ReplicatedJobs(jobs...).Obj()
	// The wrapper's replicated jobs share their containers; each gets its own here, so a
	// worker's GPU is not the leader's too.
	for k := range js.Spec.ReplicatedJobs {
		pod := &js.Spec.ReplicatedJobs[k].Template.Spec.Template.Spec
		pod.Containers = []corev1.Container{{Name: "main", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("1")}}}}
		if js.Spec.ReplicatedJobs[k].Name == "workers" {
			gpu := corev1.ResourceList{"nvidia.com/gpu": mustParse("1")}
			pod.Containers[0].Resources.Limits = gpu
			pod.Containers[0].Resources.Requests["nvidia.com/gpu"] = mustParse("1")
		}
	}
	return JobInput{Kind: "JobSet", Index: index, Manifest: rawJSON(t, js), SubmitAt: at, Duration: runs}
}

// Kueue's own jobset integration admits a JobSet whole (a pod set per replicated job), and the
// engine runs its pods until its time is up; one that does not fit beside it waits for that
// instant, while a Job beside them goes on as ever.
func TestAJobSetRunsItsPodSetsAndAnotherWaitsForItsQuota(t *testing.T) {
	results, summary := replayed(t, gpuInput(t, kueue.BestEffortFIFO,
		gpuJobSet(t, 0, "first", true, 2, 2, 0, 100),   // 4 GPUs, 5 pods
		gpuJob(t, 1, "beside", "2", 0, 200),            // 2 GPUs
		gpuJobSet(t, 2, "second", false, 3, 2, 10, 50), // 6 GPUs: 2 are free until 100
	))
	checkRuns(t, results, []runWant{
		{0, `[{"start":0,"end":100}]`, 5},
		{0, `[{"start":0,"end":200}]`, 1},
		{100, `[{"start":100,"end":150}]`, 6},
	})
	if n := len(results[0].Workload.Spec.PodSets); n != 2 {
		t.Errorf("the first JobSet's Workload has %d pod sets, want 2 (leader, workers)", n)
	}
	if summary.SimulatedSeconds != 200 {
		t.Errorf("the replay ended at %vs, want 200", summary.SimulatedSeconds)
	}
}

// A JobSet's pods give their node back when it ends: a JobSet of the whole node (8 GPUs) and,
// behind it in a StrictFIFO queue, another with a leader beside its 8 workers, admitted and run
// on that node the instant the first ends.
func TestAJobSetsPodsFreeTheirNodeWhenItEnds(t *testing.T) {
	in := gpuInput(t, kueue.StrictFIFO,
		gpuJobSet(t, 0, "whole", false, 4, 2, 0, 30),
		gpuJobSet(t, 1, "next", true, 4, 2, 5, 30),
	)
	results, _ := replayed(t, in)
	if r := results[1]; r.AdmittedAt == nil || *r.AdmittedAt != 30 || len(r.Intervals) != 1 || r.Intervals[0].Start != 30 {
		t.Errorf("the second JobSet admitted at %v, ran %v; want both at 30", r.AdmittedAt, r.Intervals)
	}
}

func ranStep(r Result) *step {
	for k := range r.Timeline {
		if r.Timeline[k].Event == "ran" {
			return &r.Timeline[k]
		}
	}
	return nil
}

func workloadFinished(wl *kueue.Workload) bool {
	for _, c := range wl.Status.Conditions {
		if c.Type == kueue.WorkloadFinished && c.Status == "True" {
			return true
		}
	}
	return false
}

// withLabel: a manifest with one more label.
func withLabel(t *testing.T, manifest []byte, key, value string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	meta := m["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels[key] = value
	meta["labels"] = labels
	return rawJSON(t, m)
}
