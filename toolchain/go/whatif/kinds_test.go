package main

import "testing"

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
		t.Run(c.kind, func(t *testing.T) { checkLowPreemptedByHigh(t, c.low, trainRuntimes(t)) })
	}
}
