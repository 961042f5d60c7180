package main

// StatefulSets (Kueue's statefulset integration): one job of the mix, a serving one. Kueue's
// StatefulSet webhook marks its pod template suspended by it; its StatefulSet reconciler makes
// one group Workload for it (a pod set of `replicas` pods, named from its UID); its StatefulSet
// pod reconciler makes each of its pods a member of that group (the group's name, total count
// and fast admission); Kueue's pod reconciler admits the group and lifts the pods' gates (the
// group path of podgroup.go). Here the engine is the StatefulSet controller only as far as
// Kueue reads it: it makes `replicas` pods from the template, <name>-0, <name>-1, ..., all at
// once (as podManagementPolicy Parallel does; OrderedReady makes each once the one before is
// ready, which here is the same instant), through Kueue's Pod webhooks, and makes a deleted
// one again (Kueue preempts a serving group by deleting its pods). A StatefulSet never
// finishes: it serves until the end of the replay, or, when the mix gives it a duration, its
// user deletes it then, and its pods go with it.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	podconstants "sigs.k8s.io/kueue/pkg/controller/jobs/pod/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobs/statefulset"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// statefulSets: Kueue's two StatefulSet reconcilers, their requests, the mix's StatefulSets by
// name and as their informer last saw them.
type statefulSets struct {
	rec, podRec reconcile.Reconciler
	q, podQ     workQueue
	by          map[types.NamespacedName]int
	seen        map[types.NamespacedName]ctrl.Object
	admit       func(context.Context, *appsv1.StatefulSet) error
}

var statefulSetType = reflect.TypeOf(&appsv1.StatefulSet{})

// decodeStatefulSet: the StatefulSet as the API server stores it (replicas 1 when not given).
func decodeStatefulSet(j JobInput) (*appsv1.StatefulSet, error) {
	sts := &appsv1.StatefulSet{}
	if err := decodeAs(j.Manifest, sts); err != nil {
		return nil, fmt.Errorf("statefulset %d: %w", j.Index, err)
	}
	sts.Spec.Replicas = defaultReplicas(sts.Spec.Replicas)
	return sts, nil
}

// addStatefulSet: a StatefulSet of the mix, its pods the members of its group.
func (s *sim) addStatefulSet(st *jobState, i int) error {
	sts, err := decodeStatefulSet(st.in)
	if err != nil {
		return err
	}
	set := types.NamespacedName{Namespace: sts.Namespace, Name: sts.Name}
	st.set, st.pod = &set, true
	st.spread = spreadGroup(sts.Namespace, "StatefulSet/"+sts.Name) // its selector's pods
	st.key = groupRequest(sts.Namespace, statefulset.GetWorkloadName(st.uid, sts.Name))
	for k := range int(*sts.Spec.Replicas) {
		m := types.NamespacedName{Namespace: sts.Namespace, Name: fmt.Sprintf("%s-%d", sts.Name, k)}
		st.members = append(st.members, m)
		st.sets = append(st.sets, podSet{spec: sts.Spec.Template.Spec, count: 1})
		s.byPod[m] = i
	}
	s.sts.by[set] = i
	return nil
}

// submitStatefulSet creates the StatefulSet through Kueue's webhook, then its pods.
func (s *sim) submitStatefulSet(j *jobState) error {
	sts, err := decodeStatefulSet(j.in)
	if err != nil {
		return err
	}
	sts.UID, sts.ResourceVersion = j.uid, ""
	if !admitAndCreate(s, j, sts, s.sts.admit, "StatefulSet") {
		return nil
	}
	return s.makeSetPods(j)
}

// makeSetPods: the StatefulSet controller's part: each of its pods that is not there, made
// from its template (as it stands), owned by it, through Kueue's Pod webhooks.
func (s *sim) makeSetPods(j *jobState) error {
	var sts appsv1.StatefulSet
	if err := s.get(*j.set, &sts); err != nil {
		return ctrl.IgnoreNotFound(err)
	}
	for k, m := range j.members {
		if err := s.get(m, &corev1.Pod{}); !apierrors.IsNotFound(err) {
			if err != nil {
				return err
			}
			continue
		}
		p := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: *sts.Spec.Template.ObjectMeta.DeepCopy(), Spec: *sts.Spec.Template.Spec.DeepCopy()}
		p.Name, p.Namespace = m.Name, m.Namespace
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[appsv1.PodIndexLabel] = fmt.Sprint(k)
		p.Labels[appsv1.StatefulSetPodNameLabel] = m.Name
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(&sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
		raw, err := json.Marshal(&p)
		if err != nil {
			return err
		}
		j.made++
		uid := types.UID(fmt.Sprintf("00000004-0000-4000-8000-%06d%06d", j.in.Index, j.made))
		if made, err := s.createPod(j, raw, uid); err != nil || !made {
			return err
		}
	}
	return nil
}

// completeStatefulSet: its time is up; its user deletes it, and its pods go with it (the
// garbage collector's part).
func (s *sim) completeStatefulSet(j *jobState) error {
	s.stop(j)
	j.finished = true
	for _, m := range j.members {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
		if err := s.deleteIfThere(p); err != nil {
			return err
		}
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: j.set.Namespace, Name: j.set.Name}}
	if err := s.deleteIfThere(sts); err != nil || j.workload == nil {
		return err
	}
	// Its Workload's owners (it, its pods) are all gone: the garbage collector deletes it
	// (Kueue finishes only a Workload with a controller, and a group's has none), and Kueue
	// frees its quota.
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: j.workload.Namespace, Name: j.workload.Name}}
	return s.deleteIfThere(wl)
}

// informStatefulSets: the changed StatefulSets to Kueue's StatefulSet reconciler.
func (s *sim) informStatefulSets(changed map[reflect.Type][]types.NamespacedName) error {
	for _, k := range changed[statefulSetType] {
		sts := &appsv1.StatefulSet{}
		moved, err := s.changed(k, s.sts.seen, sts)
		if err != nil {
			return err
		}
		// Its predicate: not a StatefulSet another framework manages (an LWS's).
		if p, ok := s.sts.rec.(predicate.Predicate); moved && (!ok || sts.Name == "" || p.Update(event.UpdateEvent{ObjectNew: sts})) {
			s.sts.q.add(k)
		}
	}
	return nil
}

// setPodChanged: a changed pod of a StatefulSet, to Kueue's StatefulSet pod reconciler (its
// event filter: pods its webhook marked) and StatefulSet reconciler (its pod handler).
func (s *sim) setPodChanged(key types.NamespacedName) {
	i, ok := s.byPod[key]
	if !ok || s.jobs[i].set == nil {
		return
	}
	s.sts.q.add(*s.jobs[i].set)
	if p, ok := s.seenPods[key].(*corev1.Pod); ok && p.Annotations[podconstants.SuspendedByParentAnnotation] == statefulset.FrameworkName {
		s.sts.podQ.add(key)
	}
}

// reconcileStatefulSets: the StatefulSet reconcilers' queued requests; how many there were.
func (s *sim) reconcileStatefulSets() (int, error) {
	q, pq := s.sts.q.drain(), s.sts.podQ.drain()
	for _, k := range q {
		if err := s.reconcile(s.sts.rec, k, kindStatefulSet); err != nil {
			return 0, err
		}
	}
	for _, k := range pq {
		if err := s.reconcile(s.sts.podRec, k, kindStatefulSetPod); err != nil {
			return 0, err
		}
	}
	return len(q) + len(pq), nil
}
