package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utiltestingapi "sigs.k8s.io/kueue/pkg/util/testing/v1beta2"
)

// Kueue preempts a job of every kind kinds.go plays by suspending it: its pods leave their node
// at once, and it runs again, its whole duration, once readmitted. One queue of 8 GPUs
// preempting lower priorities: low (8 GPUs) from 0 s; Job high (8 GPUs) at 60 s preempts it and
// runs 120 s; low is admitted again at 180 s and runs 100 s to 280 s.
func TestAPreemptedJobOfEveryKindStopsAtOnceAndRunsAgainOnReadmission(t *testing.T) {
	for _, c := range []struct {
		kind string
		low  JobInput
	}{
		{"JobSet", gpuJobSet(t, 0, "low", false, 4, 2, 0, 100)},
		{"PyTorchJob", gpuPyTorchJob(t, 0, "low", 7, 0, 100)},
		{"RayJob", gpuRayJob(t, 0, "low", 8, 0, 100)},
		{"MPIJob", gpuMPIJob(t, 0, "low", 7, 0, 100)},
		{"TFJob", gpuKubeflowJobOf(t, "TFJob", 0, "low", 8, 0, 100)},
		{"XGBoostJob", gpuKubeflowJobOf(t, "XGBoostJob", 0, "low", 8, 0, 100)},
		{"PaddleJob", gpuKubeflowJobOf(t, "PaddleJob", 0, "low", 8, 0, 100)},
		{"JAXJob", gpuKubeflowJobOf(t, "JAXJob", 0, "low", 8, 0, 100)},
		{"RayCluster", gpuRayCluster(t, 0, "low", 8, 0, 100)},
		{"TrainJob", gpuTrainJob(t, 0, "low", "torch", 2, "4", 0, 100)},
	} {
		t.Run(c.kind, func(t *testing.T) {
			objs := gpuStack(t, "8", kueue.BestEffortFIFO)
			cq := utiltestingapi.MakeClusterQueue("team-a").Preemption(kueue.ClusterQueuePreemption{
				WithinClusterQueue: kueue.PreemptionPolicyLowerPriority}).ResourceGroup(
				*utiltestingapi.MakeFlavorQuotas("gpu").Resource(corev1.ResourceCPU, "64").Resource(corev1.ResourceMemory, "256Gi").
					Resource("nvidia.com/gpu", "8").Obj()).Obj()
			objs[2] = withKind(t, cq) // gpuStack's ClusterQueue, with preemption
			objs = append(objs, withKind(t, utiltestingapi.MakeWorkloadPriorityClass("low").PriorityValue(10).Obj()),
				withKind(t, utiltestingapi.MakeWorkloadPriorityClass("high").PriorityValue(1000).Obj()))
			low := c.low
			low.Manifest = withLabel(t, low.Manifest, "kueue.x-k8s.io/priority-class", "low")
			high := gpuJob(t, 1, "high", "8", 60, 120)
			high.Manifest = withLabel(t, high.Manifest, "kueue.x-k8s.io/priority-class", "high")
			in := &Input{Objects: objs, CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t), Nodes: gpuNodes(1),
				Jobs: []JobInput{low, high}, Runtimes: trainRuntimes(t)}
			results, _ := replayed(t, in)
			if got, want := string(mustJSON(t, results[0].Intervals)), `[{"start":0,"end":60},{"start":180,"end":280}]`; got != want {
				t.Errorf("low ran %s, want %s", got, want)
			}
			if len(results[0].Evictions) != 1 {
				t.Errorf("low was evicted %d times, want once", len(results[0].Evictions))
			}
			if got, want := string(mustJSON(t, results[1].Intervals)), `[{"start":60,"end":180}]`; got != want {
				t.Errorf("high ran %s, want %s", got, want)
			}
		})
	}
}
