package main

// Pod groups (Kueue's pod integration: plain Pods labelled kueue.x-k8s.io/pod-group-name with
// the annotation kueue.x-k8s.io/pod-group-total-count, as their user writes them): one job of
// the mix whose pods are its members. Each member is created through Kueue's Pod webhooks, as
// a single Pod is; Kueue's pod reconciler, asked for the group (the request its event handlers
// make of a member's or the group Workload's event: namespace "group/<namespace>", the group's
// name), lists the members by its own field index and makes one Workload once the group has
// its total count of them (a pod set per role: its pods' role hash), lifts every member's gate
// on admission, and finishes it when all of them have succeeded. Here, as kube-scheduler and
// the kubelets would, the members' pods are placed together once ungated and run; when the
// group's time is up they all succeed; deleted (Kueue stopped the group) they stop at once.

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/kueue/pkg/controller/jobs/pod"
	podconstants "sigs.k8s.io/kueue/pkg/controller/jobs/pod/constants"
)

// decodeGroup: a pod group's reconcile request (its key), its members' names and a pod set of
// one pod for each member (the scheduler places each member by its own spec).
func decodeGroup(j JobInput) (types.NamespacedName, []types.NamespacedName, []podSet, error) {
	var key types.NamespacedName
	var members []types.NamespacedName
	var sets []podSet
	for k, raw := range j.Members {
		var p corev1.Pod
		if err := json.Unmarshal(raw, &p); err != nil {
			return key, nil, nil, fmt.Errorf("pod group %d, pod %d: %w", j.Index, k, err)
		}
		if p.Namespace == "" {
			p.Namespace = "default"
		}
		if k == 0 {
			key = groupRequest(p.Namespace, p.Labels[podconstants.GroupNameLabel])
		}
		members = append(members, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		sets = append(sets, podSet{spec: p.Spec, count: 1})
	}
	return key, members, sets, nil
}

// groupRequest: the pod reconciler's request for a group, as Kueue's handlers make it.
func groupRequest(namespace, group string) types.NamespacedName {
	return types.NamespacedName{Namespace: "group/" + namespace, Name: group}
}

// podRequest: the pod reconciler's request for an event of the pod at key: its group's when
// it is a member of one, else its own.
func (s *sim) podRequest(key types.NamespacedName) types.NamespacedName {
	if p, ok := s.seenPods[key].(*corev1.Pod); ok {
		// Kueue's own index of a pod's group (its GetPodGroupName moved between releases).
		if group := pod.IndexPodGroupName(p); len(group) == 1 {
			return groupRequest(p.Namespace, group[0])
		}
		return key
	}
	if i, ok := s.byPod[key]; ok && s.jobs[i].members != nil { // gone: the group it was of
		return s.jobs[i].key
	}
	return key
}

// memberUID: the UID of a group's k-th member (the first's is the job's own).
func memberUID(j *jobState, k int) types.UID {
	if k == 0 {
		return j.uid
	}
	return types.UID(fmt.Sprintf("00000003-0000-4000-8000-%06d%06d", j.in.Index, k))
}

// submitGroup creates the group's members, in the mix's order, at the group's time.
func (s *sim) submitGroup(j *jobState) error {
	for k, raw := range j.in.Members {
		if made, err := s.createPod(j, raw, memberUID(j, k)); err != nil || !made {
			return err
		}
	}
	j.submitted = true
	return nil
}

// groupLife: kube-scheduler and the kubelets, for a group's members: while one is gated they
// wait; once all are ungated they are placed (all, or they wait for nodes) and run; when one
// is gone or being deleted, Kueue stopped the group, and the others stop with it (once Kueue
// is done with the instant, while one being deleted still runs on its node: stopping.go).
func (s *sim) groupLife(i int) error {
	j := s.jobs[i]
	pods := make([]corev1.Pod, len(j.members))
	gated, stopped, ended, dying := 0, 0, 0, 0
	for k, m := range j.members {
		if err := s.get(m, &pods[k]); err != nil {
			if !apierrors.IsNotFound(err) {
				return err
			}
			stopped++
			continue
		}
		switch p := &pods[k]; {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			ended++
		case p.DeletionTimestamp != nil:
			running, err := s.terminating(p, len(j.where) > 0)
			if err != nil {
				return err
			}
			if running {
				dying++
			} else {
				stopped++
			}
		case len(p.Spec.SchedulingGates) > 0:
			gated++
		}
	}
	switch {
	case dying > 0:
		return nil
	case j.finished || ended == len(j.members):
		delete(s.waiting, i)
	case stopped > 0:
		s.stop(j)
		delete(s.waiting, i)
		j.stuck = ""
		if j.set != nil { // its controller makes its deleted pods again
			return s.makeSetPods(j)
		}
		if j.lws != nil { // as LWS's controller and StatefulSets make a group's again
			return s.makeGroupPods(j)
		}
	case gated > 0:
		delete(s.waiting, i)
		j.stuck = ""
	case !j.running:
		specs := make([]corev1.PodSpec, len(pods))
		for k := range pods {
			specs[k] = pods[k].Spec
		}
		if s.held(i) || !s.bind(i, specs) {
			return nil
		}
		for k := range pods {
			if err := s.runPod(&pods[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// completeGroup: the group's time is up; its members' containers exit 0 and they succeed.
func (s *sim) completeGroup(j *jobState) error {
	if err := s.endOneByOne(j); err != nil {
		return err
	}
	s.stop(j)
	j.finished = true
	for _, m := range j.members {
		var p corev1.Pod
		if err := s.get(m, &p); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if err := s.succeedPod(&p); err != nil {
			return err
		}
	}
	return nil
}
