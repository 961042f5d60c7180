package main

import (
	"encoding/json"
	"strings"
	"testing"

	kftrainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconst "github.com/kubeflow/trainer/v2/pkg/constants"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// trainRuntime: a ClusterTrainingRuntime as the Trainer's install has them: a JobSet template
// whose trainer step (replicated job "node", its container "node": one CPU, no GPU until a
// TrainJob gives its resourcesPerNode) runs on numNodes nodes; with an initializer, a
// dataset-initializer step of one pod and one CPU before it.
func trainRuntime(t *testing.T, name string, numNodes int32, initializer bool) json.RawMessage {
	t.Helper()
	step := func(name, ancestor, container string) jobsetapi.ReplicatedJob {
		return jobsetapi.ReplicatedJob{Name: name, Template: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainerconst.LabelTrainJobAncestor: ancestor}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: container, Image: "x", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("1")}}}},
			}}},
		}}
	}
	var jobs []jobsetapi.ReplicatedJob
	if initializer {
		jobs = append(jobs, step("dataset-initializer", "dataset-initializer", "dataset-initializer"))
	}
	jobs = append(jobs, step("node", trainerconst.AncestorTrainer, "node"))
	rt := &kftrainer.ClusterTrainingRuntime{
		TypeMeta:   metav1.TypeMeta{APIVersion: kftrainer.GroupVersion.String(), Kind: kftrainer.ClusterTrainingRuntimeKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kftrainer.TrainingRuntimeSpec{
			MLPolicy: &kftrainer.MLPolicy{NumNodes: ptr(numNodes)},
			Template: kftrainer.JobSetTemplateSpec{Spec: jobsetapi.JobSetSpec{ReplicatedJobs: jobs}},
		},
	}
	// The runtime's manifest as users write it: replicas not given (the CRD's default, 1).
	var m map[string]any
	if err := json.Unmarshal(rawJSON(t, rt), &m); err != nil {
		t.Fatal(err)
	}
	for _, rj := range m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["replicatedJobs"].([]any) {
		delete(rj.(map[string]any), "replicas")
	}
	return rawJSON(t, m)
}

// gpuTrainJob: a TrainJob of team-a's LocalQueue on runtime, numNodes nodes (0: the runtime's
// own) of gpusPerNode GPUs and one CPU each, as users write it: unsuspended, runtimeRef by name
// only (its apiGroup and kind the CRD's defaults).
func gpuTrainJob(t *testing.T, index int, name, runtime string, numNodes int32, gpusPerNode string, at, runs float64) JobInput {
	t.Helper()
	res := corev1.ResourceList{corev1.ResourceCPU: mustParse("1"), "nvidia.com/gpu": mustParse(gpusPerNode)}
	trainer := &kftrainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Requests: res, Limits: res}}
	if numNodes > 0 {
		trainer.NumNodes = ptr(numNodes)
	}
	tj := &kftrainer.TrainJob{
		TypeMeta: metav1.TypeMeta{APIVersion: kftrainer.GroupVersion.String(), Kind: kftrainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a",
			Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpu-queue"}},
		Spec: kftrainer.TrainJobSpec{RuntimeRef: kftrainer.RuntimeRef{Name: runtime}, Trainer: trainer},
	}
	return JobInput{Kind: "TrainJob", Index: index, Manifest: rawJSON(t, tj), SubmitAt: at, Duration: runs}
}

// trainInput: gpuInput (one node, 8 GPUs) with the runtimes torch (2 nodes) and
// torch-with-data (2 nodes after a dataset initializer).
func trainInput(t *testing.T, jobs ...JobInput) *Input {
	in := gpuInput(t, kueue.BestEffortFIFO, jobs...)
	in.Runtimes = trainRuntimes(t)
	return in
}

func trainRuntimes(t *testing.T) []json.RawMessage {
	return []json.RawMessage{trainRuntime(t, "torch", 2, false), trainRuntime(t, "torch-with-data", 2, true)}
}

// Kueue's own trainjob integration admits a TrainJob whole, its trainer's numNodes pods of its
// resourcesPerNode, and the engine runs them until its time is up; the next, which does not fit
// beside it and a Job, waits for that instant. By hand: first 2 x 3 GPUs and beside 2 fill the
// 8 from 0; second (2 x 2 GPUs, at 10) waits until first ends at 100 and runs 50 s to 150;
// beside ends at 200.
func TestATrainJobRunsItsNodesAndTheNextWaitsForItToFinish(t *testing.T) {
	results, summary := replayed(t, trainInput(t,
		gpuTrainJob(t, 0, "first", "torch", 2, "3", 0, 100),
		gpuJob(t, 1, "beside", "2", 0, 200),
		gpuTrainJob(t, 2, "second", "torch", 0, "2", 10, 50),
	))
	checkRuns(t, results, []runWant{
		{0, `[{"start":0,"end":100}]`, 2},
		{0, `[{"start":0,"end":200}]`, 1},
		{100, `[{"start":100,"end":150}]`, 2},
	})
	if summary.SimulatedSeconds != 200 {
		t.Errorf("the replay ended at %vs, want 200", summary.SimulatedSeconds)
	}
}

// The Workload's pod sets are the JobSet the Trainer would make, as Kueue counts them: a pod set
// per replicated job in the runtime's order, the trainer's count the TrainJob's numNodes (the
// runtime's mlPolicy.numNodes when it gives none), each of its pods with the TrainJob's
// resourcesPerNode; the initializer's one pod.
func TestATrainJobsPodSetsAreTheRuntimesStepsWithItsOverrides(t *testing.T) {
	results, _ := replayed(t, trainInput(t,
		gpuTrainJob(t, 0, "three", "torch-with-data", 3, "2", 0, 10),
		gpuTrainJob(t, 1, "runtimes", "torch-with-data", 0, "1", 10, 10),
	))
	for i, want := range []string{`[["dataset-initializer",1,"0"],["node",3,"2"]]`, `[["dataset-initializer",1,"0"],["node",2,"1"]]`} {
		var got [][]any
		for _, ps := range results[i].Workload.Spec.PodSets {
			gpus := ps.Template.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]
			got = append(got, []any{ps.Name, ps.Count, gpus.String()})
		}
		if g := string(mustJSON(t, got)); g != want {
			t.Errorf("TrainJob %d: pod sets (name, count, GPUs a pod) %s, want %s", i, g, want)
		}
	}
	checkRuns(t, results, []runWant{{0, `[{"start":0,"end":10}]`, 4}, {10, `[{"start":10,"end":20}]`, 3}})
}

// A TrainJob whose runtime the mix does not hold cannot be counted (Kueue reads its pod sets
// from the runtime): the replay says so, naming spec.runtimeRef.
func TestATrainJobWithoutItsRuntimeIsRefusedNamingItsRuntimeRef(t *testing.T) {
	_, err := newSim(trainInput(t, gpuTrainJob(t, 0, "lost", "no-such-runtime", 2, "1", 0, 10)))
	if err == nil || !strings.Contains(err.Error(), `spec.runtimeRef: ClusterTrainingRuntime "no-such-runtime"`) {
		t.Errorf("newSim: %v, want an error naming spec.runtimeRef and the runtime", err)
	}
}

// A runtime with a field of another type than the Trainer's API gives it is refused, as the API
// server would refuse it: the TrainJob on it is a row saying so, naming spec.runtimeRef, and the
// rest of the mix replays (a TrainJob on another runtime runs its 10 s).
func TestATrainJobOnARuntimeTheAPIRefusesIsARowAndTheRestReplays(t *testing.T) {
	var bad map[string]any
	if err := json.Unmarshal(trainRuntime(t, "bad", 2, false), &bad); err != nil {
		t.Fatal(err)
	}
	bad["spec"].(map[string]any)["mlPolicy"] = map[string]any{"numNodes": "two"}
	in := trainInput(t,
		gpuTrainJob(t, 0, "refused", "bad", 2, "1", 0, 10),
		gpuTrainJob(t, 1, "fine", "torch", 2, "1", 0, 10),
	)
	in.Runtimes = append(in.Runtimes, rawJSON(t, bad))
	results, _ := replayed(t, in)
	if p := results[0].Problem; !strings.Contains(p, `spec.runtimeRef: the API refused its ClusterTrainingRuntime bad`) {
		t.Errorf("the TrainJob on the refused runtime: problem %q, want one naming spec.runtimeRef and the runtime", p)
	}
	checkRuns(t, results[1:], []runWant{{0, `[{"start":0,"end":10}]`, 2}})
}

// An MPI runtime as users write it (no numProcPerNode, which the Trainer's CRD defaults to 1 and
// its MPI plugin reads without a nil check) running its launcher as a node: Kueue makes the node
// step numNodes less one pods (3 - 1 = 2), and the TrainJob runs.
func TestATrainJobOnAnMPIRuntimeWrittenWithoutItsDefaultsRuns(t *testing.T) {
	var mpi map[string]any
	if err := json.Unmarshal(trainRuntime(t, "mpi", 1, false), &mpi); err != nil {
		t.Fatal(err)
	}
	mpi["spec"].(map[string]any)["mlPolicy"] = map[string]any{"numNodes": 1, "mpi": map[string]any{"runLauncherAsNode": true}}
	in := trainInput(t, gpuTrainJob(t, 0, "ranks", "mpi", 3, "2", 0, 10))
	in.Runtimes = append(in.Runtimes, rawJSON(t, mpi))
	results, _ := replayed(t, in)
	checkRuns(t, results, []runWant{{0, `[{"start":0,"end":10}]`, 2}})
	if ps := results[0].Workload.Spec.PodSets; len(ps) != 1 || ps[0].Count != 2 {
		t.Errorf("pod sets %v, want node's 2", ps)
	}
}
