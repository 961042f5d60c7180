package main

import (
	"encoding/json"
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	testingpytorchjob "sigs.k8s.io/kueue/pkg/util/testingjobs/pytorchjob"
)

// gpuPyTorchJob: a PyTorchJob of team-a's LocalQueue: a Master and `workers` Workers, each pod
// with one CPU and one GPU.
func gpuPyTorchJob(t *testing.T, index int, name string, workers int32, at, runs float64) JobInput {
	t.Helper()
	pj := testingpytorchjob.MakePyTorchJob(name, "team-a").Queue("gpu-queue").SetTypeMeta().PyTorchReplicaSpecs(
		testingpytorchjob.PyTorchReplicaSpecRequirement{ReplicaType: kftraining.PyTorchJobReplicaTypeMaster, ReplicaCount: 1, Image: "x"},
		testingpytorchjob.PyTorchReplicaSpecRequirement{ReplicaType: kftraining.PyTorchJobReplicaTypeWorker, ReplicaCount: workers, Image: "x"},
	)
	for _, rt := range []kftraining.ReplicaType{kftraining.PyTorchJobReplicaTypeMaster, kftraining.PyTorchJobReplicaTypeWorker} {
		pj.RequestAndLimit(rt, "nvidia.com/gpu", "1").Request(rt, corev1.ResourceCPU, "1")
	}
	// The user's manifest: created unsuspended, as users write it (the engine suspends it as
	// Kueue's webhook would).
	pj.Suspend(false)
	return JobInput{Kind: "PyTorchJob", Index: index, Manifest: rawJSON(t, pj.Obj()), SubmitAt: at, Duration: runs}
}

// Kueue's own pytorchjob integration admits a PyTorchJob whole (a pod set per replica type,
// master then worker), and the engine runs its pods until its time is up; one that does not fit
// beside it waits for that instant, while a Job beside them goes on as ever.
func TestAPyTorchJobRunsItsReplicasAndAnotherWaitsForItsQuota(t *testing.T) {
	results, summary := replayed(t, gpuInput(t, kueue.BestEffortFIFO,
		gpuPyTorchJob(t, 0, "first", 3, 0, 100),  // 4 GPUs, 4 pods
		gpuJob(t, 1, "beside", "2", 0, 200),      // 2 GPUs
		gpuPyTorchJob(t, 2, "second", 4, 10, 50), // 5 GPUs: 2 are free until 100
	))
	checkRuns(t, results, []runWant{
		{0, `[{"start":0,"end":100}]`, 4},
		{0, `[{"start":0,"end":200}]`, 1},
		{100, `[{"start":100,"end":150}]`, 5},
	})
	var names []string
	for _, ps := range results[2].Workload.Spec.PodSets {
		names = append(names, string(ps.Name))
	}
	if got, _ := json.Marshal(names); string(got) != `["master","worker"]` {
		t.Errorf("the second PyTorchJob's Workload has pod sets %s, want master and worker", got)
	}
	if summary.SimulatedSeconds != 200 {
		t.Errorf("the replay ended at %vs, want 200", summary.SimulatedSeconds)
	}
}
