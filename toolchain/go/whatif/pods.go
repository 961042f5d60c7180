package main

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Plain Pods (Kueue's pod integration): what the API server, kube-scheduler and the kubelet do
// to one, as the sandbox's kube-scheduler and kwok do. Kueue's own webhooks gate it at creation,
// its pod reconciler makes the Workload and lifts the gate on admission, and on eviction marks
// the pod and deletes it; here its pod is placed on a node once ungated, runs, and succeeds
// when its time is up, or stops at once when deleted (kwok's pod-delete stage).

// submitPod creates the Pod as the API server would: through Kueue's Pod webhooks.
func (s *sim) submitPod(j *jobState) error {
	made, err := s.createPod(j, j.in.Manifest, j.uid)
	j.submitted = made
	return err
}

// createPod creates one Pod of the job from its manifest, with its UID, through Kueue's Pod
// webhooks; whether it was made (if not, the job's problem says why).
func (s *sim) createPod(j *jobState, manifest []byte, uid types.UID) (bool, error) {
	var p corev1.Pod
	if err := json.Unmarshal(manifest, &p); err != nil {
		return false, err
	}
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	p.UID = uid
	p.ResourceVersion = ""
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	defaultPod(&p)
	if err := s.admitPod(s.ctx, &p); err != nil {
		j.problem = fmt.Sprintf("Kueue's pod webhook refused it: %v", err)
		return false, nil
	}
	p.Finalizers = append(p.Finalizers, kubeletHold) // its kubelet's part in its deletion (stopping.go)
	if err := s.cl.Create(s.ctx, &p); err != nil {
		j.problem = fmt.Sprintf("the API refused it: %v", err)
		return false, nil
	}
	return true, nil
}

// completePod: the pod's time is up; its containers exit 0 and it succeeds.
func (s *sim) completePod(j *jobState) error {
	var p corev1.Pod
	if err := s.get(j.key, &p); err != nil {
		return err
	}
	s.stop(j)
	j.finished = true
	return s.succeedPod(&p)
}

// succeedPod: the kubelet's status of a pod whose containers exited 0.
func (s *sim) succeedPod(p *corev1.Pod) error {
	now := metav1.NewTime(s.clock.Now())
	p.Status.Phase = corev1.PodSucceeded
	setPodCondition(p, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", now)
	setPodCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", now)
	p.Status.ContainerStatuses = containerStatuses(p, corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now},
	})
	return s.cl.Status().Update(s.ctx, p)
}

// podLife: kube-scheduler and the kubelet, for one plain Pod: a gated pod waits, an ungated
// one is placed if it fits a node and runs; a pod being deleted stops, once Kueue is done with
// the instant if it runs on a node (stopping.go).
func (s *sim) podLife(key types.NamespacedName) error {
	i, ok := s.byPod[key]
	if !ok {
		return nil
	}
	j := s.jobs[i]
	if j.members != nil {
		return s.groupLife(i)
	}
	var p corev1.Pod
	if err := s.get(key, &p); err != nil {
		if apierrors.IsNotFound(err) {
			s.stop(j)
			delete(s.waiting, i)
			return nil
		}
		return err
	}
	switch {
	case j.finished || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		delete(s.waiting, i)
	case p.DeletionTimestamp != nil:
		if running, err := s.terminating(&p, len(j.where) > 0); err != nil || running {
			return err
		}
		s.stop(j)
		delete(s.waiting, i)
		j.stuck = ""
	case len(p.Spec.SchedulingGates) > 0:
		delete(s.waiting, i)
		j.stuck = ""
		return s.ungatePod(j, &p) // the topology ungater's part, when it has one (tas.go)
	case !j.running:
		if s.held(i) || !s.bind(i, []corev1.PodSpec{p.Spec}) {
			return nil
		}
		return s.runPod(&p)
	}
	return nil
}

// runPod: the kubelet's status of a pod bound to its node: running, ready.
func (s *sim) runPod(p *corev1.Pod) error {
	now := metav1.NewTime(s.clock.Now())
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady} {
		setPodCondition(p, c, corev1.ConditionTrue, "", now)
	}
	p.Status.ContainerStatuses = containerStatuses(p, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}})
	return s.cl.Status().Update(s.ctx, p)
}

func setPodCondition(p *corev1.Pod, t corev1.PodConditionType, status corev1.ConditionStatus, reason string, now metav1.Time) {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == t {
			if c.Status != status {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason = status, reason
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: now})
}

func containerStatuses(p *corev1.Pod, state corev1.ContainerState) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		out = append(out, corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: state, Ready: state.Running != nil})
	}
	return out
}

// defaultPod: what the API server's defaulting gives a Pod before any webhook sees it, as far
// as Kueue reads it: a container's limit without a request is its request too (a Pod's, not a
// template's: Kueue's role hash of a group's pods reads the requests alone).
func defaultPod(p *corev1.Pod) {
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for k := range cs {
			r := &cs[k].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[name] = q.DeepCopy()
				}
			}
		}
	}
}
