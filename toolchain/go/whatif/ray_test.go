package main

import (
	"encoding/json"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// gpuRayJob: a RayJob of team-a's LocalQueue as users write it (K8sJobMode by default): a head
// (one CPU, no GPU) and a worker group of `workers` pods with one GPU each.
func gpuRayJob(t *testing.T, index int, name string, workers int32, at, runs float64) JobInput {
	t.Helper()
	pod := func(gpu bool) corev1.PodTemplateSpec {
		c := corev1.Container{Name: "ray", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("1")}}}
		if gpu {
			c.Resources.Requests["nvidia.com/gpu"] = mustParse("1")
			c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": mustParse("1")}
		}
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	rj := rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "ray.io/v1", Kind: "RayJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpu-queue"}},
		Spec: rayv1.RayJobSpec{
			Entrypoint: "python train.py", ShutdownAfterJobFinishes: true,
			RayClusterSpec: &rayv1.RayClusterSpec{
				HeadGroupSpec:    rayv1.HeadGroupSpec{Template: pod(false)},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{GroupName: "gpu", Replicas: ptr(workers), Template: pod(true)}},
			},
		},
	}
	return JobInput{Kind: "RayJob", Index: index, Manifest: rawJSON(t, rj), SubmitAt: at, Duration: runs}
}

// Kueue's own rayjob integration admits a RayJob whole (head, worker group, submitter), and
// the engine runs its pods until its time is up; one that does not fit beside it waits for that
// instant, while a Job beside them goes on as ever.
func TestARayJobRunsItsGroupsAndAnotherWaitsForItsQuota(t *testing.T) {
	results, summary := replayed(t, gpuInput(t, kueue.BestEffortFIFO,
		gpuRayJob(t, 0, "first", 4, 0, 100),  // 4 GPUs, 6 pods (head, 4 workers, submitter)
		gpuJob(t, 1, "beside", "2", 0, 200),  // 2 GPUs
		gpuRayJob(t, 2, "second", 3, 10, 50), // 3 GPUs: 2 are free until 100
	))
	checkRuns(t, results, []runWant{
		{0, `[{"start":0,"end":100}]`, 6},
		{0, `[{"start":0,"end":200}]`, 1},
		{100, `[{"start":100,"end":150}]`, 5},
	})
	var names []string
	for _, ps := range results[0].Workload.Spec.PodSets {
		names = append(names, string(ps.Name))
	}
	if got, _ := json.Marshal(names); string(got) != `["head","gpu","submitter"]` {
		t.Errorf("the first RayJob's Workload has pod sets %s, want head, gpu and submitter", got)
	}
	if summary.SimulatedSeconds != 200 {
		t.Errorf("the replay ended at %vs, want 200", summary.SimulatedSeconds)
	}
}

// gpuRayCluster: a RayCluster of team-a's LocalQueue: a head of one CPU and a worker group of
// `workers` pods of one CPU and one GPU.
func gpuRayCluster(t *testing.T, index int, name string, workers int32, at, runs float64) JobInput {
	t.Helper()
	var rj rayv1.RayJob
	if err := json.Unmarshal(gpuRayJob(t, index, name, workers, at, runs).Manifest, &rj); err != nil {
		t.Fatal(err)
	}
	rc := rayv1.RayCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: "ray.io/v1", Kind: "RayCluster"},
		ObjectMeta: rj.ObjectMeta,
		Spec:       *rj.Spec.RayClusterSpec,
	}
	return JobInput{Kind: "RayCluster", Index: index, Manifest: rawJSON(t, rc), SubmitAt: at, Duration: runs}
}

// Kueue's own raycluster integration admits a RayCluster whole (head, worker group). Kueue
// reads no end of a cluster, so when its time is up the engine deletes it, as its user would,
// and Kueue finishes its Workload (its owner gone) and frees its quota: one that does not fit
// beside it waits for that instant, while a Job beside them goes on as ever.
func TestARayClusterRunsUntilDeletedAndAnotherWaitsForItsQuota(t *testing.T) {
	results, summary := replayed(t, gpuInput(t, kueue.BestEffortFIFO,
		gpuRayCluster(t, 0, "first", 4, 0, 100),  // 4 GPUs, 5 pods (head, 4 workers)
		gpuJob(t, 1, "beside", "2", 0, 200),      // 2 GPUs
		gpuRayCluster(t, 2, "second", 3, 10, 50), // 3 GPUs: 2 are free until 100
	))
	checkRuns(t, results, []runWant{
		{0, `[{"start":0,"end":100}]`, 5},
		{0, `[{"start":0,"end":200}]`, 1},
		{100, `[{"start":100,"end":150}]`, 4},
	})
	var names []string
	for _, ps := range results[0].Workload.Spec.PodSets {
		names = append(names, string(ps.Name))
	}
	if got, _ := json.Marshal(names); string(got) != `["head","gpu"]` {
		t.Errorf("the first RayCluster's Workload has pod sets %s, want head and gpu", got)
	}
	for _, i := range []int{0, 2} {
		c := apimeta.FindStatusCondition(results[i].Workload.Status.Conditions, kueue.WorkloadFinished)
		if c == nil || c.Reason != kueue.WorkloadFinishedReasonOwnerNotFound {
			t.Errorf("RayCluster %d's Workload finished as %+v, want for its owner gone", i, c)
		}
	}
	if summary.SimulatedSeconds != 200 {
		t.Errorf("the replay ended at %vs, want 200", summary.SimulatedSeconds)
	}
}
