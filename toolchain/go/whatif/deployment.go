package main

// Deployments (Kueue's deployment integration): one row of the report, its pods Kueue's
// Workloads, one each. Kueue's Deployment webhook puts the queue and priority labels and its
// suspended-by-parent mark on the pod template; Kueue's Deployment reconciler does nothing;
// each pod the ReplicaSet makes is then a plain serving Pod of Kueue's pod integration, gated
// by its Pod webhooks and admitted on its own. Here the engine is the ReplicaSet controller
// only as far as Kueue reads it: it makes `replicas` pods from the template, through Kueue's
// Pod webhooks, and makes a pod Kueue deletes (a preemption) again under a new name. A
// Deployment serves: to the end of the replay, or, when the mix gives it a duration, its user
// deletes it that long after all its replicas first ran, and its pods go with it and, as the
// garbage collector would, their Workloads (a pod's Workload has no other owner).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// deployments: Kueue's Deployment webhooks, as the API server calls them.
type deployments struct {
	admit func(context.Context, *appsv1.Deployment) error
}

// deployment: a Deployment of the mix. Its row is the job row; each pod made for it is a
// job of the replay of its own (a plain Pod), in slots: slots[k] are the jobs of replica k,
// the last the current one.
type deployment struct {
	name     types.NamespacedName
	row      int
	replicas int
	slots    [][]int
	slot     map[int]int  // a pod's job: its replica
	replaced map[int]bool // a pod's job whose pod was deleted, and made again
	made     int
	served   bool // all its replicas have run (its duration counts from then)
	gone     bool // its user deleted it
}

// decodeDeployment: the Deployment as the API server stores it (replicas 1 when not given).
func decodeDeployment(j JobInput) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := decodeAs(j.Manifest, d); err != nil {
		return nil, fmt.Errorf("deployment %d: %w", j.Index, err)
	}
	d.Spec.Replicas = defaultReplicas(d.Spec.Replicas)
	return d, nil
}

// addDeployment: a Deployment of the mix; its pods are made when it is submitted.
func (s *sim) addDeployment(st *jobState, i int) error {
	d, err := decodeDeployment(st.in)
	if err != nil {
		return err
	}
	name := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
	st.key = name
	st.deploy = &deployment{name: name, row: i, replicas: int(*d.Spec.Replicas),
		slots: make([][]int, *d.Spec.Replicas), slot: map[int]int{}, replaced: map[int]bool{}}
	st.sets = []podSet{{spec: d.Spec.Template.Spec, count: int(*d.Spec.Replicas)}}
	return nil
}

// isReplica: the job is a pod of a Deployment (not its row).
func isReplica(j *jobState) bool { return j.deploy != nil && j.in.Kind == "Pod" }

// submitDeployment creates the Deployment through Kueue's webhook, then its pods.
func (s *sim) submitDeployment(j *jobState) error {
	d, err := decodeDeployment(j.in)
	if err != nil {
		return err
	}
	d.UID, d.ResourceVersion = j.uid, ""
	if !admitAndCreate(s, j, d, s.deploys.admit, "Deployment") {
		return nil
	}
	for k := range j.deploy.replicas {
		if err := s.makeReplica(j.deploy, k); err != nil {
			return err
		}
	}
	return nil
}

// makeReplica: the ReplicaSet controller's part: replica k's pod, made from the template as
// it stands, owned by its ReplicaSet, through Kueue's Pod webhooks; a job of the replay.
func (s *sim) makeReplica(d *deployment, k int) error {
	var dep appsv1.Deployment
	if err := s.get(d.name, &dep); err != nil {
		return ctrl.IgnoreNotFound(err)
	}
	row := s.jobs[d.row]
	d.made++
	rs := metav1.ObjectMeta{Name: d.name.Name + "-whatif", Namespace: d.name.Namespace,
		UID: types.UID(fmt.Sprintf("00000005-0000-4000-8000-%012d", row.in.Index))}
	p := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: *dep.Spec.Template.ObjectMeta.DeepCopy(), Spec: *dep.Spec.Template.Spec.DeepCopy()}
	p.Name, p.Namespace = fmt.Sprintf("%s-%d", rs.Name, d.made), d.name.Namespace
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(&appsv1.ReplicaSet{ObjectMeta: rs},
		appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	raw, err := json.Marshal(&p)
	if err != nil {
		return err
	}
	// A job index of its own (its Workload's UID is made from it), past the mix's.
	in := JobInput{Kind: "Pod", Index: 1_000_000*(row.in.Index+1) + d.made, Manifest: raw, Duration: -1}
	rj := &jobState{in: in, uid: uidFor("job", in.Index), pod: true, deploy: d, count: 1,
		key:      types.NamespacedName{Namespace: p.Namespace, Name: p.Name},
		template: corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}, sets: []podSet{{count: 1}},
		spread: spreadGroup(p.Namespace, "ReplicaSet/"+rs.Name)} // the ReplicaSet's selector's pods
	i := len(s.jobs)
	s.jobs = append(s.jobs, rj)
	s.byPod[rj.key], s.byUID[rj.uid] = i, i
	d.slots[k] = append(d.slots[k], i)
	d.slot[i] = k
	made, err := s.createPod(rj, raw, rj.uid)
	rj.submitted = made
	if !made && row.problem == "" {
		row.problem = rj.problem
	}
	return err
}

// replicaChanged: a changed pod of a Deployment. Deleted (Kueue preempts a plain Pod by
// deleting it) and stopped, the ReplicaSet makes another for its replica; gone, the garbage collector
// deletes its Workload. Running, it may be the last of its Deployment's replicas to run.
func (s *sim) replicaChanged(key types.NamespacedName) error {
	i, ok := s.byPod[key]
	if !ok || !isReplica(s.jobs[i]) {
		return nil
	}
	j, d := s.jobs[i], s.jobs[i].deploy
	var p corev1.Pod
	err := s.get(key, &p)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if apierrors.IsNotFound(err) && j.workload != nil {
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: j.workload.Namespace, Name: j.workload.Name}}
		if err := s.deleteIfThere(wl); err != nil {
			return err
		}
	}
	// The ReplicaSet makes another as soon as the pod is marked deleted, but the new one's way to
	// Kueue's queue (its webhook, the pod reconciler, the Workload) takes longer than Kueue's
	// next cycles: on the sandbox (cross-check seed 707) its Workload came 76 ms after the
	// eviction, and the preemptor, tried every 10 ms, had the quota first. So here it comes once
	// the old pod is gone: at once for one that never ran, else when its kubelet is done, once
	// Kueue is done with the instant (kubeletHold). Made before the preemptor's next cycle, it
	// took the quota first, was preempted in turn, and so on without end.
	deleted := p.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(&p, kubeletHold)
	if (apierrors.IsNotFound(err) || deleted) && !d.gone && !d.replaced[i] {
		d.replaced[i] = true
		return s.makeReplica(d, d.slot[i])
	}
	if j.running && !d.served && d.allRan(s) {
		d.served = true
		if row := s.jobs[d.row]; row.in.Duration >= 0 {
			s.push(ev{at: s.now + row.in.Duration, kind: evFinish, idx: d.row, run: row.run})
		}
	}
	return nil
}

// current: each replica's last pod's job (none before it is submitted, or when Kueue's
// webhook refused it).
func (d *deployment) current(s *sim) []*jobState {
	var out []*jobState
	for _, slot := range d.slots {
		if len(slot) > 0 {
			out = append(out, s.jobs[slot[len(slot)-1]])
		}
	}
	return out
}

// allRan: every replica has had a pod running.
func (d *deployment) allRan(s *sim) bool {
	for _, slot := range d.slots {
		if !slices.ContainsFunc(slot, func(i int) bool { return len(s.jobs[i].intervals) > 0 }) {
			return false
		}
	}
	return true
}

// deleteDeployment: its time is up; its user deletes it, and its pods go with it, and their
// Workloads (the garbage collector's part), which frees the quota.
func (s *sim) deleteDeployment(j *jobState) error {
	d := j.deploy
	d.gone, j.finished = true, true
	for _, rj := range d.current(s) {
		s.stop(rj)
		rj.finished = true
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: rj.key.Namespace, Name: rj.key.Name}}
		if err := s.deleteIfThere(p); err != nil {
			return err
		}
		if rj.workload == nil {
			continue
		}
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: rj.workload.Namespace, Name: rj.workload.Name}}
		if err := s.deleteIfThere(wl); err != nil {
			return err
		}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: d.name.Namespace, Name: d.name.Name}}
	return s.deleteIfThere(dep)
}
