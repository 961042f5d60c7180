package main

import (
	"encoding/json"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Input is what gpu_queues/whatif/engine_input.py sends.
type Input struct {
	// Objects: Namespaces, ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
	// WorkloadPriorityClasses and PriorityClasses, as the program renders them.
	Objects []json.RawMessage `json:"objects"`
	// Runtimes: the ClusterTrainingRuntimes and TrainingRuntimes the mix's TrainJobs name
	// (trainjob.go), objects of the cluster as the Trainer's install has them.
	Runtimes []json.RawMessage `json:"runtimes"`
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
	// WorkloadUIDs: the UID of each job's Workload by its index, where given (the cross-check
	// hands over the sandbox's, so that the ties Kueue breaks by UID fall the same way); the
	// others get UIDs in mix order (uidFor).
	WorkloadUIDs map[int]string `json:"workloadUIDs"`
	// PlacementOrder: another run's admissions in the order its cluster saw them, a job's
	// index for each (the cross-check hands over the sandbox's). Kueue decides a cycle's
	// admissions in its own order but writes each on a goroutine, so on a cluster the order
	// their pods reach the scheduler in is the Go runtime's; given, the jobs admitted at one
	// instant release their pods in that order (nextToPlace), else in the cycle's.
	PlacementOrder []int `json:"placementOrder"`
	// Changes: changes of the stack at instants of the replay, in time order (changes.go).
	Changes []ChangeInput `json:"changes"`
	// Until: the end of the replay in simulated seconds; 0: the last event.
	Until float64 `json:"until"`
}

// JobInput is one batch/v1 Job (or plain Pod, or a job of a family: kinds.go) of the mix.
type JobInput struct {
	// Kind: "Job" (or empty), "Pod", or a family's kind ("JobSet", "PyTorchJob", "RayJob",
	// "MPIJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "RayCluster", "TrainJob").
	Kind string `json:"kind"`
	// Index: the entry's place in the mix; the Job's and Workload's UIDs derive from it, so
	// Kueue breaks ties of equal priority and creation time in mix order.
	Index    int             `json:"index"`
	Manifest json.RawMessage `json:"manifest"`
	SubmitAt float64         `json:"submitAt"`
	// Duration: seconds its pods run; negative: until the end.
	Duration float64 `json:"duration"`
	// Members: a pod group's Pods (Kind "Pod"; podgroup.go), each one's manifest, created
	// together at SubmitAt and run for Duration; Manifest is unused.
	Members []json.RawMessage `json:"members,omitempty"`
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

// addJobs: the mix's jobs, each to be submitted at its time.
func (s *sim) addJobs(jobs []JobInput) error {
	for i, j := range jobs {
		st := &jobState{in: j, uid: uidFor("job", j.Index), pod: j.Kind == "Pod"}
		var err error
		switch {
		case j.Kind == "StatefulSet":
			err = s.addStatefulSet(st, i)
		case j.Kind == "Deployment":
			err = s.addDeployment(st, i)
		case j.Kind == "LeaderWorkerSet":
			err = s.addLWS(st, i)
		case st.pod && len(j.Members) > 0:
			if st.key, st.members, st.sets, err = decodeGroup(j); err == nil {
				for k, m := range st.members {
					s.byPod[m] = i
					s.byUID[memberUID(st, k)] = i
				}
			}
		case st.pod:
			if st.key, st.template, err = decodePod(j); err == nil {
				st.count = 1
				s.byPod[st.key] = i
			}
		case s.familyOf(j.Kind) != nil:
			err = s.addFamilyJob(st, s.familyOf(j.Kind), i)
		default:
			if st.key, st.template, st.count, err = decodeJob(j); err == nil {
				s.byJob[st.key] = i
			}
		}
		if err != nil && !fieldOfAnotherType(err) {
			return err
		}
		if err != nil {
			// A field of another type than its kind's API gives it (one the mix's checks do
			// not know) is refused by the API server's schema: that job's row says why, and
			// the replay goes on without it. A manifest that is no object at all is bad input.
			st.problem = fmt.Sprintf("the API refused it: %v", err)
			s.jobs = append(s.jobs, st)
			s.byUID[st.uid] = i
			continue
		}
		if st.sets == nil {
			st.sets = []podSet{{count: st.count}}
		}
		st.count = 0
		for _, set := range st.sets {
			st.count += set.count
		}
		s.jobs = append(s.jobs, st)
		s.byUID[st.uid] = i
		s.push(ev{at: j.SubmitAt, kind: evSubmit, idx: i})
	}
	return nil
}

// fieldOfAnotherType: whether err is a field of an object that does not decode into its Go
// type (not a value that is no object at all).
func fieldOfAnotherType(err error) bool {
	var typeErr *json.UnmarshalTypeError
	return errors.As(err, &typeErr) && typeErr.Field != ""
}

// decodePod: a plain Pod's name and pod template (namespace default when it names none).
func decodePod(j JobInput) (types.NamespacedName, corev1.PodTemplateSpec, error) {
	var p corev1.Pod
	if err := json.Unmarshal(j.Manifest, &p); err != nil {
		return types.NamespacedName{}, corev1.PodTemplateSpec{}, fmt.Errorf("pod %d: %w", j.Index, err)
	}
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}, nil
}

// decodeJob: a batch/v1 Job's name, pod template and pod count (namespace default when it
// names none).
func decodeJob(j JobInput) (types.NamespacedName, corev1.PodTemplateSpec, int, error) {
	var bj batchv1.Job
	if err := json.Unmarshal(j.Manifest, &bj); err != nil {
		return types.NamespacedName{}, corev1.PodTemplateSpec{}, 0, fmt.Errorf("job %d: %w", j.Index, err)
	}
	if bj.Namespace == "" {
		bj.Namespace = "default"
	}
	return types.NamespacedName{Namespace: bj.Namespace, Name: bj.Name}, bj.Spec.Template, parallelism(&bj), nil
}

func parallelism(j *batchv1.Job) int {
	if j.Spec.Parallelism != nil {
		return int(*j.Spec.Parallelism)
	}
	return 1
}

// uidFor: UIDs that sort in mix order, as Kueue breaks ties by UID.
func uidFor(kind string, index int) types.UID {
	prefix := "00000000"
	if kind == "workload" {
		prefix = "00000001"
	}
	return types.UID(fmt.Sprintf("%s-0000-4000-8000-%012d", prefix, index))
}
