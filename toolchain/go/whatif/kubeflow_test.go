package main

import (
	"encoding/json"
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// gpuKubeflowJob: a Kubeflow v1 job of the kind (kubeflow.go) of team-a's LocalQueue, with
// replicas of each type given (in that order), each pod with one CPU and one GPU; created
// unsuspended, as users write it.
func gpuKubeflowJob(t *testing.T, kind string, index int, name string, at, runs float64, replicas ...kubeflowReplicas) JobInput {
	t.Helper()
	specs := map[kftraining.ReplicaType]*kftraining.ReplicaSpec{}
	for _, r := range replicas {
		gpu := resource.MustParse("1")
		specs[r.typ] = &kftraining.ReplicaSpec{Replicas: ptr(r.count), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": gpu},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": gpu},
			}}},
		}}}
	}
	meta := metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpu-queue"}}
	typ := metav1.TypeMeta{APIVersion: kftraining.SchemeGroupVersion.String(), Kind: kind}
	run := kftraining.RunPolicy{Suspend: ptr(false)}
	var obj any
	switch kind {
	case kftraining.PyTorchJobKind:
		obj = &kftraining.PyTorchJob{TypeMeta: typ, ObjectMeta: meta, Spec: kftraining.PyTorchJobSpec{RunPolicy: run, PyTorchReplicaSpecs: specs}}
	case kftraining.TFJobKind:
		obj = &kftraining.TFJob{TypeMeta: typ, ObjectMeta: meta, Spec: kftraining.TFJobSpec{RunPolicy: run, TFReplicaSpecs: specs}}
	case kftraining.XGBoostJobKind:
		obj = &kftraining.XGBoostJob{TypeMeta: typ, ObjectMeta: meta, Spec: kftraining.XGBoostJobSpec{RunPolicy: run, XGBReplicaSpecs: specs}}
	case kftraining.PaddleJobKind:
		obj = &kftraining.PaddleJob{TypeMeta: typ, ObjectMeta: meta, Spec: kftraining.PaddleJobSpec{RunPolicy: run, PaddleReplicaSpecs: specs}}
	case kftraining.JAXJobKind:
		obj = &kftraining.JAXJob{TypeMeta: typ, ObjectMeta: meta, Spec: kftraining.JAXJobSpec{RunPolicy: run, JAXReplicaSpecs: specs}}
	default:
		t.Fatalf("no Kubeflow v1 kind %s", kind)
	}
	return JobInput{Kind: kind, Index: index, Manifest: rawJSON(t, obj), SubmitAt: at, Duration: runs}
}

type kubeflowReplicas struct {
	typ   kftraining.ReplicaType
	count int32
}

// gpuKubeflowJobOf: a job of the kind of `pods` pods, its first replica type (in Kueue's order)
// one pod and its last the rest (a JAXJob's one type all of them).
func gpuKubeflowJobOf(t *testing.T, kind string, index int, name string, pods int32, at, runs float64) JobInput {
	t.Helper()
	switch kind {
	case kftraining.TFJobKind:
		return gpuKubeflowJob(t, kind, index, name, at, runs, kubeflowReplicas{kftraining.TFJobReplicaTypeChief, 1},
			kubeflowReplicas{kftraining.TFJobReplicaTypeWorker, pods - 1})
	case kftraining.JAXJobKind:
		return gpuKubeflowJob(t, kind, index, name, at, runs, kubeflowReplicas{kftraining.JAXJobReplicaTypeWorker, pods})
	}
	return gpuKubeflowJob(t, kind, index, name, at, runs, kubeflowReplicas{"Master", 1}, kubeflowReplicas{"Worker", pods - 1})
}

// The other Kubeflow v1 kinds, exactly as a PyTorchJob: Kueue's own integration of each admits
// it whole (a pod set per replica type, in its order), and the engine runs its pods until its
// time is up; one that does not fit beside it waits for that instant, while a Job beside them
// goes on as ever.
func TestEveryKubeflowJobRunsItsReplicasAndAnotherWaitsForItsQuota(t *testing.T) {
	for kind, sets := range map[string]string{
		kftraining.TFJobKind:      `["chief","worker"]`,
		kftraining.XGBoostJobKind: `["master","worker"]`,
		kftraining.PaddleJobKind:  `["master","worker"]`,
		kftraining.JAXJobKind:     `["worker"]`,
	} {
		t.Run(kind, func(t *testing.T) {
			results, summary := replayed(t, gpuInput(t, kueue.BestEffortFIFO,
				gpuKubeflowJobOf(t, kind, 0, "first", 4, 0, 100),  // 4 GPUs, 4 pods
				gpuJob(t, 1, "beside", "2", 0, 200),               // 2 GPUs
				gpuKubeflowJobOf(t, kind, 2, "second", 5, 10, 50), // 5 GPUs: 2 are free until 100
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
			if got, _ := json.Marshal(names); string(got) != sets {
				t.Errorf("the second %s's Workload has pod sets %s, want %s", kind, got, sets)
			}
			if summary.SimulatedSeconds != 200 {
				t.Errorf("the replay ended at %vs, want 200", summary.SimulatedSeconds)
			}
		})
	}
}

// A TFJob's pod sets are its replica types present in Kueue's order (Chief, Master, PS,
// Worker, Evaluator), whatever the manifest's order or case; a replica type of no replicas
// given counts as one, as the training operator's defaulting leaves it.
func TestATFJobsPodSetsAreCountedInKueuesOrder(t *testing.T) {
	in := gpuKubeflowJob(t, kftraining.TFJobKind, 0, "x", 0, 10, kubeflowReplicas{"evaluator", 1},
		kubeflowReplicas{kftraining.TFJobReplicaTypeWorker, 3}, kubeflowReplicas{"ps", 2}, kubeflowReplicas{kftraining.TFJobReplicaTypeChief, 1})
	in.Manifest = withField(t, in.Manifest, nil, "spec", "tfReplicaSpecs", "ps", "replicas")
	k := kubeflowKindOf(kftraining.TFJobKind)
	obj, err := k.decode(in.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, s := range k.podSets(obj) {
		got = append(got, s.count)
	}
	if string(mustJSON(t, got)) != `[1,1,3,1]` {
		t.Errorf("pod set counts %v, want Chief's 1, PS's 1, Worker's 3, Evaluator's 1", got)
	}
}
