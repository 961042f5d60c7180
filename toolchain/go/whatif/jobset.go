package main

// JobSets (Kueue's jobset integration): the JobSet controller, as far as Kueue reads it. Kueue's
// own jobset reconciler (setup.go) makes the Workload, one pod set per replicated job, and
// unsuspends the JobSet with its flavors' node selectors in each replicated job's template, or
// suspends it on eviction. Here, as the JobSet controller, its Jobs' controller and
// kube-scheduler would, an unsuspended JobSet's pods (replicas x parallelism per replicated
// job) are placed on the nodes and its replicated jobs' status says they run; a suspended one's
// pods are gone at once; when its time is up it is Completed, which Kueue reads as finished. Its
// child Jobs and pods are not objects here: Kueue's integration reads only the JobSet.

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"sigs.k8s.io/kueue/pkg/controller/jobs/jobset"
)

// decodeJobSet: the JobSet as the API server stores it: namespace default when it names none,
// and a replicated job's replicas 1 when it gives none (the JobSet CRD's default).
func decodeJobSet(j JobInput) (*jobsetapi.JobSet, error) {
	var js jobsetapi.JobSet
	if err := json.Unmarshal(j.Manifest, &js); err != nil {
		return nil, fmt.Errorf("jobset %d: %w", j.Index, err)
	}
	var given struct {
		Spec struct {
			ReplicatedJobs []struct {
				Replicas *int32 `json:"replicas"`
			} `json:"replicatedJobs"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(j.Manifest, &given); err != nil {
		return nil, fmt.Errorf("jobset %d: %w", j.Index, err)
	}
	for k, rj := range given.Spec.ReplicatedJobs {
		if rj.Replicas == nil && k < len(js.Spec.ReplicatedJobs) {
			js.Spec.ReplicatedJobs[k].Replicas = 1
		}
	}
	if js.Namespace == "" {
		js.Namespace = "default"
	}
	return &js, nil
}

// jobSetPodSets: a pod set per replicated job, its pods counted as Kueue's integration counts
// them (replicas x its Job's pods at once).
func jobSetPodSets(js *jobsetapi.JobSet) []podSet {
	sets := make([]podSet, 0, len(js.Spec.ReplicatedJobs))
	for k := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[k]
		sets = append(sets, podSet{count: int(rj.Replicas * jobset.PodsCountPerReplica(rj))})
	}
	return sets
}

// jobSetSpecs: each replicated job's pod spec as it stands (with the node selectors Kueue put
// in when it unsuspended the JobSet).
func jobSetSpecs(js *jobsetapi.JobSet) []corev1.PodSpec {
	specs := make([]corev1.PodSpec, 0, len(js.Spec.ReplicatedJobs))
	for k := range js.Spec.ReplicatedJobs {
		specs = append(specs, js.Spec.ReplicatedJobs[k].Template.Spec.Template.Spec)
	}
	return specs
}

// submitJobSet creates the JobSet as kubectl would after Kueue's JobSet webhook: suspended.
func (s *sim) submitJobSet(j *jobState) error {
	js, err := decodeJobSet(j.in)
	if err != nil {
		return err
	}
	js.UID = j.uid
	js.ResourceVersion = ""
	js.Spec.Suspend = ptr(true)
	if err := s.cl.Create(s.ctx, js); err != nil {
		j.problem = fmt.Sprintf("the API refused it: %v", err)
		return nil
	}
	j.submitted = true
	return nil
}

// replicatedStatus: each replicated job's status with all its Jobs in one state (ready and
// active, or succeeded), or none.
func replicatedStatus(js *jobsetapi.JobSet, running, succeeded bool) []jobsetapi.ReplicatedJobStatus {
	out := make([]jobsetapi.ReplicatedJobStatus, 0, len(js.Spec.ReplicatedJobs))
	for _, rj := range js.Spec.ReplicatedJobs {
		st := jobsetapi.ReplicatedJobStatus{Name: rj.Name}
		if running {
			st.Ready, st.Active = rj.Replicas, rj.Replicas
		}
		if succeeded {
			st.Succeeded = rj.Replicas
		}
		out = append(out, st)
	}
	return out
}

// jobSetPods: the JobSet controller and the scheduler, for one JobSet: an unsuspended one's
// pods are placed if they all fit, and run; a suspended one's are deleted at once.
func (s *sim) jobSetPods(key types.NamespacedName) error {
	i, ok := s.byJobSet[key]
	if !ok {
		return nil
	}
	j := s.jobs[i]
	var js jobsetapi.JobSet
	if err := s.get(key, &js); err != nil {
		if apierrors.IsNotFound(err) {
			s.stop(j)
			return nil
		}
		return err
	}
	suspended := js.Spec.Suspend != nil && *js.Spec.Suspend
	switch {
	case j.finished:
		delete(s.waiting, i)
	case suspended && (len(j.where) > 0 || len(js.Status.ReplicatedJobsStatus) > 0):
		s.stop(j)
		delete(s.waiting, i)
		js.Status.ReplicatedJobsStatus = nil
		return s.cl.Status().Update(s.ctx, &js)
	case suspended:
		delete(s.waiting, i)
		delete(s.toPlace, i)
		j.stuck, j.released = "", false
	case !j.running:
		if s.held(i) || !s.bind(i, jobSetSpecs(&js)) {
			return nil
		}
		js.Status.ReplicatedJobsStatus = replicatedStatus(&js, true, false)
		return s.cl.Status().Update(s.ctx, &js)
	}
	return nil
}

// completeJobSet: the JobSet's time is up; its Jobs succeed and it is Completed.
func (s *sim) completeJobSet(j *jobState) error {
	var js jobsetapi.JobSet
	if err := s.get(j.key, &js); err != nil {
		return err
	}
	if err := s.endOneByOne(j); err != nil {
		return err
	}
	s.stop(j)
	j.finished = true
	js.Status.ReplicatedJobsStatus = replicatedStatus(&js, false, true)
	js.Status.TerminalState = string(jobsetapi.JobSetCompleted)
	apimeta.SetStatusCondition(&js.Status.Conditions, metav1.Condition{
		Type: string(jobsetapi.JobSetCompleted), Status: metav1.ConditionTrue, Reason: "AllJobsCompleted",
		Message: "jobset completed successfully", LastTransitionTime: metav1.NewTime(s.clock.Now()),
	})
	return s.cl.Status().Update(s.ctx, &js)
}

// informJobSets: the changed JobSets to the JobSet controller's part and Kueue's reconciler.
func (s *sim) informJobSets(keys []types.NamespacedName) error {
	for _, k := range keys {
		changed, err := s.changed(k, s.seenJobSets, &jobsetapi.JobSet{})
		if err != nil {
			return err
		}
		if !changed {
			continue
		}
		if err := s.jobSetPods(k); err != nil {
			return err
		}
		s.jsQ.add(k)
	}
	return nil
}
