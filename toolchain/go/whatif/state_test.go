package main

import (
	"container/heap"
	"reflect"
	"sort"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Events come out by time; at one time ends first, then controllers' requeues, then
// submissions; then by job, then in the order they were pushed.
func TestEventsComeOutInTheReplaysOrder(t *testing.T) {
	pushed := []ev{
		{at: 10, kind: evSubmit, idx: 0},
		{at: 5, kind: evSubmit, idx: 2},
		{at: 5, kind: evTimer, idx: 0},
		{at: 5, kind: evFinish, idx: 9},
		{at: 5, kind: evSubmit, idx: 1},
		{at: 5, kind: evTimer, idx: 0, tgt: target{key: types.NamespacedName{Name: "second"}}},
	}
	s := &sim{}
	for _, e := range pushed {
		s.push(e)
	}
	var got []ev
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(ev)
		e.seq = 0
		got = append(got, e)
	}
	want := []ev{pushed[3], pushed[2], pushed[5], pushed[4], pushed[1], pushed[0]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
}

func TestAWorkQueueHoldsEachRequestOnceInTheOrderFirstAsked(t *testing.T) {
	var q workQueue
	for _, n := range []string{"b", "a", "b", "c", "a"} {
		q.add(types.NamespacedName{Name: n})
	}
	if q.len() != 3 {
		t.Fatalf("len %d, want 3", q.len())
	}
	got := q.drain()
	want := []types.NamespacedName{{Name: "b"}, {Name: "a"}, {Name: "c"}}
	if !reflect.DeepEqual(got, want) || q.len() != 0 {
		t.Errorf("drained %v (then %d left), want %v", got, q.len(), want)
	}
}

func TestDirtyHandsOutWorkloadsInWriteOrderJobsAndPodsInNameOrder(t *testing.T) {
	var d dirty
	d.reset()
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	d.mark(&kueue.Workload{ObjectMeta: meta("b", "w")})
	d.mark(&kueue.Workload{ObjectMeta: meta("a", "w")})
	d.mark(&kueue.Workload{ObjectMeta: meta("a", "w")})
	d.mark(&batchv1.Job{ObjectMeta: meta("a", "j")})
	d.mark(&corev1.Pod{ObjectMeta: meta("a", "p")})
	d.mark(&corev1.ConfigMap{ObjectMeta: meta("a", "c")}) // no informer of the engine's watches it
	if d.empty() {
		t.Fatal("empty after writes")
	}
	wls, jobs, pods, _ := d.take()
	n := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	if !reflect.DeepEqual(wls, []types.NamespacedName{n("b", "w"), n("a", "w")}) ||
		!reflect.DeepEqual(jobs, []types.NamespacedName{n("a", "j")}) || !reflect.DeepEqual(pods, []types.NamespacedName{n("a", "p")}) {
		t.Errorf("took %v %v %v", wls, jobs, pods)
	}
	if !d.empty() {
		t.Error("not empty after take")
	}
}

// UIDs sort in mix order, Jobs' before Workloads', as Kueue breaks ties by UID.
func TestUIDsSortInMixOrder(t *testing.T) {
	var uids []string
	for _, kind := range []string{"workload", "job"} {
		for _, i := range []int{10, 2, 1000000, 0} {
			uids = append(uids, string(uidFor(kind, i)))
		}
	}
	sorted := append([]string(nil), uids...)
	sort.Strings(sorted)
	want := []string{
		string(uidFor("job", 0)), string(uidFor("job", 2)), string(uidFor("job", 10)), string(uidFor("job", 1000000)),
		string(uidFor("workload", 0)), string(uidFor("workload", 2)), string(uidFor("workload", 10)), string(uidFor("workload", 1000000)),
	}
	if !reflect.DeepEqual(sorted, want) {
		t.Errorf("sorted %v, want %v", sorted, want)
	}
}

func TestHeldPodsGoInAdmissionOrderOrInTheOrderAnotherRunSawThem(t *testing.T) {
	// Jobs 0 and 1 (mix indices 10 and 11) admitted at one instant, 1 first by Kueue's cycle.
	jobs := func() []*jobState {
		return []*jobState{
			{in: JobInput{Index: 10}, admittedSeq: 5, admissions: 2},
			{in: JobInput{Index: 11}, admittedSeq: 4, admissions: 1},
		}
	}
	s := &sim{jobs: jobs(), toPlace: map[int]bool{0: true, 1: true}}
	if i, _ := s.nextToPlace(); i != 1 {
		t.Errorf("without an order given, job %d first; want 1 (admitted first)", i)
	}
	// The other run saw 10 admitted twice, then 11: 10's second admission before 11's first...
	s = &sim{jobs: jobs(), toPlace: map[int]bool{0: true, 1: true}, placement: map[int][]int{10: {0, 1}, 11: {2}}}
	if i, _ := s.nextToPlace(); i != 0 {
		t.Errorf("with the order given, job %d first; want 0 (its second admission seen first)", i)
	}
	// ...and where the order says nothing of a job's current admission, the cycle's order.
	s = &sim{jobs: jobs(), toPlace: map[int]bool{0: true, 1: true}, placement: map[int][]int{10: {0}, 11: {2}}}
	if i, _ := s.nextToPlace(); i != 1 {
		t.Errorf("with job 0's admission not in the order, job %d first; want 1", i)
	}
}
