package main

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Input is what sandbox/replay/fast.py sends.
type Input struct {
	// Objects: Namespaces, ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
	// WorkloadPriorityClasses and PriorityClasses, as the program renders them.
	Objects []json.RawMessage `json:"objects"`
	// CRDs: the release's CustomResourceDefinitions, for their schemas' defaults.
	CRDs []json.RawMessage `json:"crds"`
	// Configuration: Kueue's manager Configuration (config.kueue.x-k8s.io), as the stack's
	// Kueue release is configured (kueue-manager-config).
	Configuration string `json:"configuration"`
	// Nodes: the nodes the stack's flavors declare (sandbox.shape), with their labels,
	// taints and allocatable.
	Nodes []corev1.Node `json:"nodes"`
	// Pods: pods the cluster runs before any job, Kueue's controller: they hold room on the
	// node the scheduler puts them on, as the jobs' pods do.
	Pods []corev1.PodSpec `json:"pods"`
	// Jobs: the mix's valid entries, in the mix's order.
	Jobs []JobInput `json:"jobs"`
	// Until: the end of the replay in simulated seconds; 0: the last event.
	Until float64 `json:"until"`
}

// JobInput is one batch/v1 Job (or plain Pod) of the mix.
type JobInput struct {
	// Kind: "Job" (or empty) or "Pod".
	Kind string `json:"kind"`
	// Index: the entry's place in the mix; the Job's and Workload's UIDs derive from it, so
	// Kueue breaks ties of equal priority and creation time in mix order.
	Index    int             `json:"index"`
	Manifest json.RawMessage `json:"manifest"`
	SubmitAt float64         `json:"submitAt"`
	// Duration: seconds its pods run; negative: until the end.
	Duration float64 `json:"duration"`
}

func decodeObjects(scheme *runtime.Scheme, raws []json.RawMessage) ([]client.Object, error) {
	dec := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	objs := make([]client.Object, 0, len(raws))
	for i, raw := range raws {
		obj, gvk, err := dec.Decode(raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		co, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("object %d: %s is not an object", i, gvk)
		}
		objs = append(objs, co)
	}
	return objs, nil
}
