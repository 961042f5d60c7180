package main

import (
	"encoding/json"
	"testing"

	kfmpi "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	corev1 "k8s.io/api/core/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	testingmpijob "sigs.k8s.io/kueue/pkg/util/testingjobs/mpijob"
)

// gpuMPIJob: an MPIJob of team-a's LocalQueue: a Launcher and `workers` Workers, each pod with
// one CPU and one GPU.
func gpuMPIJob(t *testing.T, index int, name string, workers int32, at, runs float64) JobInput {
	t.Helper()
	mj := testingmpijob.MakeMPIJob(name, "team-a").Queue("gpu-queue").MPIJobReplicaSpecs(
		testingmpijob.MPIJobReplicaSpecRequirement{ReplicaType: kfmpi.MPIReplicaTypeLauncher, ReplicaCount: 1, Image: "x"},
		testingmpijob.MPIJobReplicaSpecRequirement{ReplicaType: kfmpi.MPIReplicaTypeWorker, ReplicaCount: workers, Image: "x"},
	)
	for _, rt := range mpiReplicaTypes {
		mj.RequestAndLimit(rt, "nvidia.com/gpu", "1").Request(rt, corev1.ResourceCPU, "1")
	}
	// The user's manifest: created unsuspended, as users write it (the engine suspends it as
	// Kueue's webhook would).
	mj.Suspend(false)
	obj := mj.Obj()
	obj.APIVersion, obj.Kind = kfmpi.SchemeGroupVersion.String(), kfmpi.Kind
	return JobInput{Kind: "MPIJob", Index: index, Manifest: rawJSON(t, obj), SubmitAt: at, Duration: runs}
}

// Kueue's own mpijob integration admits an MPIJob whole (a pod set per replica type, launcher
// then worker), and the engine runs its pods until its time is up; one that does not fit beside
// it waits for that instant, while a Job beside them goes on as ever.
func TestAnMPIJobRunsItsReplicasAndAnotherWaitsForItsQuota(t *testing.T) {
	results, summary := replayed(t, gpuInput(t, kueue.BestEffortFIFO,
		gpuMPIJob(t, 0, "first", 3, 0, 100),  // 4 GPUs, 4 pods
		gpuJob(t, 1, "beside", "2", 0, 200),  // 2 GPUs
		gpuMPIJob(t, 2, "second", 4, 10, 50), // 5 GPUs: 2 are free until 100
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
	if got, _ := json.Marshal(names); string(got) != `["launcher","worker"]` {
		t.Errorf("the second MPIJob's Workload has pod sets %s, want launcher and worker", got)
	}
	if summary.SimulatedSeconds != 200 {
		t.Errorf("the replay ended at %vs, want 200", summary.SimulatedSeconds)
	}
}

// runLauncherAsWorker changes no count Kueue makes (the launcher's pod is one pod set of its
// own either way), and a Worker of no replicas given counts as one, as Kueue's mpijob reads it.
func TestAnMPIJobsPodSetsAreCountedAsKueueCountsThem(t *testing.T) {
	in := gpuMPIJob(t, 0, "x", 3, 0, 10)
	in.Manifest = withField(t, in.Manifest, true, "spec", "runLauncherAsWorker")
	obj, err := mpiJobKind{}.decode(in.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if got := (mpiJobKind{}).podSets(obj); len(got) != 2 || got[0].count != 1 || got[1].count != 3 {
		t.Errorf("pod sets %+v, want the launcher's 1 and the workers' 3", got)
	}
	obj.(*kfmpi.MPIJob).Spec.MPIReplicaSpecs[kfmpi.MPIReplicaTypeWorker].Replicas = nil
	if got := (mpiJobKind{}).podSets(obj); got[1].count != 1 {
		t.Errorf("a Worker of no replicas counts %d pods, want 1", got[1].count)
	}
}
