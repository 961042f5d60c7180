package main

// LeaderWorkerSets (Kueue's leaderworkerset integration): one row of the report, its groups
// Kueue's Workloads, one each. Kueue's LWS webhook marks the leader and worker templates
// suspended by it and serving; its LWS reconciler makes one Workload per group (named from
// the LWS and the group's index; pod sets leader and worker, or main without a leader
// template) before any pod asks, and on each pod's event makes the pod a member of its
// group's (the group's name, the Workload as its prebuilt one, the group's size as its count,
// the pod set as its role); Kueue's pod reconciler admits the group and lifts its pods' gates
// (the group path of podgroup.go). Kueue's LWS reconciler reads the LWS, its pods and its
// StatefulSets (listed by LWS's name label: a pod whose StatefulSet it does not find, it
// ungates at once), so the engine is the LWS controller and the StatefulSet controller as far
// as that: the leader StatefulSet <name> and, per group, the worker StatefulSet <name>-<g>,
// their revisions settled; group g's leader pod <name>-<g> (from leaderTemplate, else
// workerTemplate) and size-1 workers <name>-<g>-<k>, with LWS's labels, through Kueue's Pod
// webhooks; a deleted group's pods made again (Kueue preempts a serving group by deleting its
// pods). An LWS serves until the end of the replay, or its user deletes it that long after all
// its groups began to run together (again, after a preemption: as the sandbox engine counts a
// run, all its pods running), and its StatefulSets, pods and, as the garbage collector would,
// its Workloads go with it.

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
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"sigs.k8s.io/kueue/pkg/controller/jobs/leaderworkerset"
	podconstants "sigs.k8s.io/kueue/pkg/controller/jobs/pod/constants"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// leaderWorkerSets: Kueue's LWS reconciler and webhooks, its requests, and its LWSs as their
// informer last saw them.
type leaderWorkerSets struct {
	rec   reconcile.Reconciler
	q     workQueue
	seen  map[types.NamespacedName]ctrl.Object
	admit func(context.Context, *lwsv1.LeaderWorkerSet) error
}

var lwsType = reflect.TypeOf(&lwsv1.LeaderWorkerSet{})

// leaderWorkerSet: an LWS of the mix. Its row is the job row; each group is a job of the
// replay of its own (a pod group), groups[g] group g's.
type leaderWorkerSet struct {
	name       types.NamespacedName
	row        int
	replicas   int
	size       int
	groups     []int
	byWorkload map[string]int // a group's Workload name -> its job
	together   bool           // all its groups run now (its duration counts from when they began)
	gone       bool           // its user deleted it
}

// decodeLWS: the LWS as the API server stores it (LWS's CRD defaults replicas and size to 1).
func decodeLWS(j JobInput) (*lwsv1.LeaderWorkerSet, error) {
	l := &lwsv1.LeaderWorkerSet{}
	if err := decodeAs(j.Manifest, l); err != nil {
		return nil, fmt.Errorf("leaderworkerset %d: %w", j.Index, err)
	}
	if l.Spec.Replicas == nil {
		l.Spec.Replicas = ptr(int32(1))
	}
	if l.Spec.LeaderWorkerTemplate.Size == nil {
		l.Spec.LeaderWorkerTemplate.Size = ptr(int32(1))
	}
	return l, nil
}

// addLWS: an LWS of the mix; its groups are made when it is submitted.
func (s *sim) addLWS(st *jobState, i int) error {
	l, err := decodeLWS(st.in)
	if err != nil {
		return err
	}
	st.key = types.NamespacedName{Namespace: l.Namespace, Name: l.Name}
	st.lws = &leaderWorkerSet{name: st.key, row: i, replicas: int(*l.Spec.Replicas),
		size: int(*l.Spec.LeaderWorkerTemplate.Size), byWorkload: map[string]int{}}
	st.sets = []podSet{{spec: l.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec, count: st.lws.replicas * st.lws.size}}
	return nil
}

// isLWSGroup: the job is a group of an LWS (not its row).
func isLWSGroup(j *jobState) bool { return j.lws != nil && j.members != nil }

// submitLWS creates the LWS through Kueue's webhooks, then its StatefulSets and pods.
func (s *sim) submitLWS(j *jobState) error {
	l, err := decodeLWS(j.in)
	if err != nil {
		return err
	}
	l.UID, l.ResourceVersion = j.uid, ""
	if !admitAndCreate(s, j, l, s.lwss.admit, "LeaderWorkerSet") {
		return nil
	}
	if p, ok := s.lwss.rec.(predicate.Predicate); !ok || p.Create(event.CreateEvent{Object: l}) {
		s.lwss.q.add(j.key)
	}
	if err := s.makeStatefulSet(l, l.Name, -1, metav1.NewControllerRef(l, lwsv1.GroupVersion.WithKind("LeaderWorkerSet"))); err != nil {
		return err
	}
	for g := range j.lws.replicas {
		s.addLWSGroup(j, l, g)
		if err := s.makeGroupPods(s.jobs[j.lws.groups[g]]); err != nil {
			return err
		}
	}
	return nil
}

// addLWSGroup: group g of the LWS, a job of the replay (a pod group) past the mix's.
func (s *sim) addLWSGroup(row *jobState, l *lwsv1.LeaderWorkerSet, g int) {
	d := row.lws
	wl := leaderworkerset.GetWorkloadName(l.UID, l.Name, fmt.Sprint(g))
	in := JobInput{Kind: "Pod", Index: 1_000_000*(row.in.Index+1) + g, Duration: -1}
	gj := &jobState{in: in, uid: uidFor("job", in.Index), pod: true, lws: d, count: d.size,
		key: groupRequest(l.Namespace, wl)}
	leader := l.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec
	if t := l.Spec.LeaderWorkerTemplate.LeaderTemplate; t != nil {
		leader = t.Spec
	}
	i := len(s.jobs)
	// The spread (spread.go): a worker counts its group's pods (its StatefulSet's selector: the
	// group's index and hash, which its leader carries too), a leader the LWS's leaders (the
	// leader StatefulSet's: worker index 0), each ANDed with the headless Service's.
	group := spreadGroup(l.Namespace, fmt.Sprintf("LeaderWorkerSet/%s/%d", l.Name, g))
	leaders := spreadIn(spreadGroup(l.Namespace, "LeaderWorkerSet/"+l.Name), group)
	for k := range d.size {
		m := types.NamespacedName{Namespace: l.Namespace, Name: lwsPodName(l.Name, g, k)}
		spec, spread := l.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec, group
		if k == 0 {
			spec, spread = leader, leaders
		}
		gj.members = append(gj.members, m)
		gj.sets = append(gj.sets, podSet{spec: spec, count: 1, spread: spread})
		s.byPod[m] = i
	}
	s.jobs = append(s.jobs, gj)
	s.byUID[gj.uid] = i
	d.groups = append(d.groups, i)
	d.byWorkload[wl] = i
}

// lwsPodName: LWS's name of group g's pod k: the leader StatefulSet's pod g, or the group's
// worker StatefulSet's pod k (its ordinals start at 1).
func lwsPodName(name string, g, k int) string {
	if k == 0 {
		return fmt.Sprintf("%s-%d", name, g)
	}
	return fmt.Sprintf("%s-%d-%d", name, g, k)
}

// makeStatefulSet: one of the LWS's StatefulSets as Kueue's LWS reconciler reads it (LWS's
// name label, its template's annotations, its revisions settled: the pods are of its current
// one); group -1 is the leader StatefulSet.
func (s *sim) makeStatefulSet(l *lwsv1.LeaderWorkerSet, name string, group int, owner *metav1.OwnerReference) error {
	t := l.Spec.LeaderWorkerTemplate.WorkerTemplate
	if group < 0 && l.Spec.LeaderWorkerTemplate.LeaderTemplate != nil {
		t = *l.Spec.LeaderWorkerTemplate.LeaderTemplate
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: name,
		Labels: map[string]string{lwsv1.SetNameLabelKey: l.Name}, OwnerReferences: []metav1.OwnerReference{*owner}},
		Spec:   appsv1.StatefulSetSpec{Template: *t.DeepCopy()},
		Status: appsv1.StatefulSetStatus{CurrentRevision: name + "-whatif", UpdateRevision: name + "-whatif"}}
	if group >= 0 {
		sts.Labels[lwsv1.GroupIndexLabelKey] = fmt.Sprint(group)
	}
	err := s.cl.Create(s.ctx, sts)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// makeGroupPods: the LWS and StatefulSet controllers' part for a group: each of its pods that
// is not there made from its template as the LWS stands, with LWS's labels and annotations,
// owned by its StatefulSet (a group's worker StatefulSet made with its first leader pod),
// through Kueue's Pod webhooks.
func (s *sim) makeGroupPods(j *jobState) error {
	var l lwsv1.LeaderWorkerSet
	if err := s.get(j.lws.name, &l); err != nil {
		return ctrl.IgnoreNotFound(err)
	}
	g := slicesIndex(j.lws.groups, s.byPod[j.members[0]])
	for k, m := range j.members {
		if err := s.get(m, &corev1.Pod{}); !apierrors.IsNotFound(err) {
			if err != nil {
				return err
			}
			continue
		}
		p := lwsPod(&l, g, k, m)
		j.made++
		uid := types.UID(fmt.Sprintf("00000006-0000-4000-8000-%06d%06d", j.in.Index%1_000_000, j.made))
		if k == 0 {
			leader := metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: uid}
			owner := metav1.NewControllerRef(&corev1.Pod{ObjectMeta: leader}, corev1.SchemeGroupVersion.WithKind("Pod"))
			if err := s.makeStatefulSet(&l, m.Name, g, owner); err != nil {
				return err
			}
		}
		raw, err := json.Marshal(p)
		if err != nil {
			return err
		}
		if made, err := s.createPod(j, raw, uid); err != nil || !made {
			return err
		}
	}
	return nil
}

// lwsPod: group g's pod k as LWS's StatefulSets make it (the leader k == 0).
func lwsPod(l *lwsv1.LeaderWorkerSet, g, k int, m types.NamespacedName) *corev1.Pod {
	t, sts := l.Spec.LeaderWorkerTemplate.WorkerTemplate, fmt.Sprintf("%s-%d", l.Name, g)
	if k == 0 {
		sts = l.Name
		if l.Spec.LeaderWorkerTemplate.LeaderTemplate != nil {
			t = *l.Spec.LeaderWorkerTemplate.LeaderTemplate
		}
	}
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: *t.Spec.DeepCopy()}
	p.Name, p.Namespace = m.Name, m.Namespace
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Labels[lwsv1.SetNameLabelKey] = l.Name
	p.Labels[lwsv1.GroupIndexLabelKey] = fmt.Sprint(g)
	p.Labels[lwsv1.WorkerIndexLabelKey] = fmt.Sprint(k)
	p.Labels[lwsv1.GroupUniqueHashLabelKey] = fmt.Sprintf("%s-%d-whatif", l.Name, g)
	if k == 0 {
		p.Annotations[lwsv1.SizeAnnotationKey] = fmt.Sprint(*l.Spec.LeaderWorkerTemplate.Size)
	} else {
		p.Annotations[lwsv1.LeaderPodNameAnnotationKey] = lwsPodName(l.Name, g, 0)
	}
	owner := metav1.ObjectMeta{Namespace: l.Namespace, Name: sts}
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(&appsv1.StatefulSet{ObjectMeta: owner},
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
	return p
}

// slicesIndex: where v is in xs (-1 when it is not).
func slicesIndex(xs []int, v int) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return -1
}

// lwsPodChanged: a changed pod of an LWS, to Kueue's LWS reconciler (its pod handler: pods its
// webhook marked, on create and update, not delete); running, it may be the last of its LWS's
// groups to run, from which its duration counts (a run of the LWS: the row's run, a stale end
// of an earlier one ignored); stopped, that run is over.
func (s *sim) lwsPodChanged(key types.NamespacedName) {
	i, ok := s.byPod[key]
	if !ok || !isLWSGroup(s.jobs[i]) {
		return
	}
	if p, ok := s.seenPods[key].(*corev1.Pod); ok && p.Annotations[podconstants.SuspendedByParentAnnotation] == leaderworkerset.FrameworkName {
		if name, ok := p.Labels[lwsv1.SetNameLabelKey]; ok {
			s.lwss.q.add(types.NamespacedName{Namespace: p.Namespace, Name: name})
		}
	}
	d := s.jobs[i].lws
	all := len(d.groups) == d.replicas
	for _, g := range d.groups {
		all = all && s.jobs[g].running
	}
	if !all || d.together {
		d.together = all
		return
	}
	d.together = true
	row := s.jobs[d.row]
	row.run++
	if row.in.Duration >= 0 {
		s.push(ev{at: s.now + row.in.Duration, kind: evFinish, idx: d.row, run: row.run})
	}
}

// workloadOwner: the job an owner of a Workload stands for: an LWS's group by the Workload's
// name (the LWS owns each of its groups' Workloads), else the owner's own.
func (s *sim) workloadOwner(uid types.UID, wl string) (int, bool) {
	i, ok := s.byUID[uid]
	if ok && s.jobs[i].lws != nil && !isLWSGroup(s.jobs[i]) {
		i, ok = s.jobs[i].lws.byWorkload[wl]
	}
	return i, ok
}

// givenUIDIndex: the mix index whose Workload UID the input may give (Input.WorkloadUIDs, by
// row) for job i's Workload: an LWS of one group's row is its group's Workload (as the sandbox
// engine's row of it is), else the job's own.
func (s *sim) givenUIDIndex(i int) int {
	if j := s.jobs[i]; isLWSGroup(j) && j.lws.replicas == 1 {
		return s.jobs[j.lws.row].in.Index
	}
	return s.jobs[i].in.Index
}

// lwsWorkloadChanged: a Workload an LWS owns, to Kueue's LWS reconciler (its Workload
// handler: create, update, delete).
func (s *sim) lwsWorkloadChanged(wl *kueue.Workload) {
	for _, ref := range wl.OwnerReferences {
		if ref.Kind == "LeaderWorkerSet" && ref.APIVersion == lwsv1.GroupVersion.String() {
			s.lwss.q.add(types.NamespacedName{Namespace: wl.Namespace, Name: ref.Name})
			return
		}
	}
}

// deleteLWS: its time is up; its user deletes it, and its StatefulSets and pods go with it,
// and its groups' Workloads (the garbage collector's part: they have no finalizer, and their
// owners, the LWS and the pods, are gone), which frees the quota.
func (s *sim) deleteLWS(j *jobState) error {
	d := j.lws
	d.gone, j.finished = true, true
	for g, i := range d.groups {
		gj := s.jobs[i]
		s.stop(gj)
		gj.finished = true
		for _, m := range gj.members {
			if err := s.deleteIfThere(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}); err != nil {
				return err
			}
		}
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: d.name.Namespace, Name: lwsPodName(d.name.Name, g, 0)}}
		if err := s.deleteIfThere(sts); err != nil {
			return err
		}
		if gj.workload == nil {
			continue
		}
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: gj.workload.Namespace, Name: gj.workload.Name}}
		if err := s.deleteIfThere(wl); err != nil {
			return err
		}
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: d.name.Namespace, Name: d.name.Name}}
	if err := s.deleteIfThere(sts); err != nil {
		return err
	}
	return s.deleteIfThere(&lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: d.name.Namespace, Name: d.name.Name}})
}

// informLWSs: the changed LWSs to Kueue's LWS reconciler (its predicate: those Kueue manages).
func (s *sim) informLWSs(changed map[reflect.Type][]types.NamespacedName) error {
	for _, k := range changed[lwsType] {
		l := &lwsv1.LeaderWorkerSet{}
		moved, err := s.changed(k, s.lwss.seen, l)
		if err != nil {
			return err
		}
		// Its delete is no event to it (Delete: false); its groups' Workloads' are.
		if _, there := s.lwss.seen[k]; !moved || !there {
			continue
		}
		if p, ok := s.lwss.rec.(predicate.Predicate); !ok || p.Update(event.UpdateEvent{ObjectNew: l}) {
			s.lwss.q.add(k)
		}
	}
	return nil
}

// reconcileLWSs: Kueue's LWS reconciler's queued requests; how many there were.
func (s *sim) reconcileLWSs() (int, error) {
	q := s.lwss.q.drain()
	for _, k := range q {
		if err := s.reconcile(s.lwss.rec, k, kindLWS); err != nil {
			return 0, err
		}
	}
	return len(q), nil
}

// informServing: the changed StatefulSets and LWSs to Kueue's reconcilers of them.
func (s *sim) informServing(changed map[reflect.Type][]types.NamespacedName) error {
	if err := s.informStatefulSets(changed); err != nil {
		return err
	}
	return s.informLWSs(changed)
}

// reconcileServing: the StatefulSet and LWS reconcilers' queued requests; how many there were.
func (s *sim) reconcileServing() (int, error) {
	n, err := s.reconcileStatefulSets()
	if err != nil {
		return 0, err
	}
	m, err := s.reconcileLWSs()
	return n + m, err
}
