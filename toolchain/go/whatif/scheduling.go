package main

// The Job controller and kube-scheduler, as far as the replay needs them for a job's pods:
// made when Kueue unsuspends the job, held until Kueue is done with the instant, let go job by
// job in the order Kueue admitted the jobs, bound one by one to the node the default profile
// scores best, deleted when the job is suspended or ends.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// stop: the job's pods are gone (all of them, or the ones already bound while the rest
// waited); their nodes are free.
func (s *sim) stop(j *jobState) {
	j.released = false // the next pods it gets are new ones, held like any
	if len(j.where) == 0 {
		return
	}
	s.unbind(j)
	if j.running {
		j.running = false
		j.runSeconds += s.now - j.startedAt
		end := s.now
		j.intervals[len(j.intervals)-1].End = &end
		if j.startedAt == s.now { // a run of no time is none (the report drops it too)
			j.timeline = dropLastRan(j.timeline)
		}
	}
	// Freed capacity: pods that wait for nodes may fit now (tried at the next step in the
	// order they began to wait, as the scheduler retries unschedulable pods, oldest first,
	// when a pod on a node is deleted).
	for i := range s.waiting {
		s.retry[i] = true
	}
}

// endOneByOne: while some pod waits for a node, a job's pods end one at a time, in the order
// of their nodes' names (the sandbox engine completes them so: sandbox/replay/timeline.py,
// complete), and the scheduler tries the waiting pods again on each one's end, as
// kube-scheduler does on each pod's deletion: a waiting pod takes the first node freed, not
// the one it would score best once the whole job is gone. All but the last: stop frees that
// one, as any, and complete retries after it.
func (s *sim) endOneByOne(j *jobState) error {
	if len(j.where) < 2 || len(s.waiting) == 0 {
		return nil
	}
	order := make([]int, len(j.where)) // the pods, by their place in where
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return strings.Compare(s.nodes.nodes[j.where[a]].name, s.nodes.nodes[j.where[b]].name)
	})
	for _, k := range order[:len(order)-1] {
		s.unbindSet(j, j.whose[k], placement{j.where[k]})
		if err := s.retryWaiting(); err != nil {
			return err
		}
	}
	last := order[len(order)-1]
	j.where, j.whose = placement{j.where[last]}, []int{j.whose[last]}
	return nil
}

// unbind: the job's bound pods are gone from their nodes.
func (s *sim) unbind(j *jobState) {
	for k := range j.sets {
		var p placement
		for n, w := range j.where {
			if j.whose[n] == k {
				p = append(p, w)
			}
		}
		if len(p) > 0 {
			s.unbindSet(j, k, p)
		}
	}
	j.where, j.whose = nil, nil
}

// unbindSet: the job's pods of pod set k on the nodes of p are gone (and from the TAS cache's
// count of pods that are not TAS pods, when they are counted there).
func (s *sim) unbindSet(j *jobState, k int, p placement) {
	s.nodes.release(&j.sets[k].spec, p, j.spreadOf(k))
	if !j.sets[k].tas {
		s.goneNonTAS(j, k, p)
	}
}

// retryWaiting: the pods that wait for nodes, tried again now.
func (s *sim) retryWaiting() error {
	return s.retryJobs(slices.Collect(maps.Keys(s.waiting)))
}

// retryJobs: the pods of `jobs` that still wait for nodes, tried again job by job in the order
// they began to wait (kube-scheduler's order for them: sandbox/control_plane.py says why).
func (s *sim) retryJobs(jobs []int) error {
	slices.SortFunc(jobs, func(a, b int) int {
		return cmp.Compare(s.jobs[a].waitingSince, s.jobs[b].waitingSince)
	})
	for _, i := range jobs {
		if s.waiting[i] {
			if err := s.place(s.jobs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropLastRan: the timeline without its last "ran" step.
func dropLastRan(steps []step) []step {
	for k := len(steps) - 1; k >= 0; k-- {
		if steps[k].Event == "ran" {
			return append(steps[:k:k], steps[k+1:]...)
		}
	}
	return steps
}

// nextToPlace: the job Kueue admitted first of those whose new pods wait for the scheduler,
// in the order another run's cluster saw those admissions where it is given for both
// (Input.PlacementOrder).
func (s *sim) nextToPlace() (int, bool) {
	first, found := 0, false
	for i := range s.toPlace {
		if !found || s.placedBefore(i, first) {
			first, found = i, true
		}
	}
	return first, found
}

func (s *sim) placedBefore(a, b int) bool {
	ra, okA := s.placementRank(a)
	rb, okB := s.placementRank(b)
	if okA && okB && ra != rb {
		return ra < rb
	}
	return s.jobs[a].admittedSeq < s.jobs[b].admittedSeq
}

// placementRank: the place of the job's current admission in Input.PlacementOrder.
func (s *sim) placementRank(i int) (int, bool) {
	j := s.jobs[i]
	ranks := s.placement[j.in.Index]
	if j.admissions < 1 || j.admissions > len(ranks) {
		return 0, false
	}
	return ranks[j.admissions-1], true
}

// release lets the job's new pods go to the scheduler: they are placed now, and, when they
// do not all fit, tried again as capacity is freed.
func (s *sim) release(i int) error {
	delete(s.toPlace, i)
	j := s.jobs[i]
	j.released = true
	return s.place(j)
}

// held: the job's new pods wait for the scheduler until Kueue is done with the instant
// (settle); whether they are held.
func (s *sim) held(i int) bool {
	if s.jobs[i].released {
		return false
	}
	s.toPlace[i] = true
	return true
}

// wait: the job has pods no node takes; they are tried again when capacity is freed.
func (s *sim) wait(i int, why string) {
	j := s.jobs[i]
	if !s.waiting[i] {
		s.waitSeq++
		j.waitingSince = s.waitSeq
	}
	s.waiting[i] = true
	j.stuck = why
}

// bind: the job's pods that are not bound yet, each to the node the scheduler would choose,
// pod set by pod set (specs: each one's pod spec as its controller makes its pods now); whether
// all of them now are.
func (s *sim) bind(i int, specs []corev1.PodSpec) bool {
	j := s.jobs[i]
	if len(j.where) == 0 {
		tas, parts := s.tasSets(j, specs)
		for k := range j.sets {
			j.sets[k].spec, j.sets[k].tas, j.sets[k].parts = specs[k], false, nil
			if tas != nil {
				j.sets[k].tas, j.sets[k].parts = tas[k], parts[k]
			}
		}
	}
	why := ""
	for _, k := range bindOrder(j) {
		more, short := s.bindSet(j, k)
		j.where = append(j.where, more...)
		for range more {
			j.whose = append(j.whose, k)
		}
		if why == "" {
			why = short
		}
	}
	if len(j.where) < j.count {
		s.wait(i, why)
		return false
	}
	delete(s.waiting, i)
	j.stuck = ""
	j.running = true
	j.startedAt, j.run = s.now, j.run+1
	j.intervals = append(j.intervals, interval{Start: s.now})
	j.timeline = append(j.timeline, step{At: s.now, Event: "ran", Nodes: s.nodes.nodeNames(j.where)})
	if j.in.Duration >= 0 {
		s.push(ev{at: s.now + j.in.Duration, kind: evFinish, idx: i, run: j.run})
	}
	return true
}

// bindOrderer: a kind whose controller makes its pod sets' pods in another order than Kueue's
// pod sets: the order they reach kube-scheduler (mpijob.go), or nil for Kueue's.
type bindOrderer interface {
	bindOrder(sets int) []int
}

// bindOrder: the job's pod sets in the order their pods are placed: Kueue's, unless the kind's
// controller makes them in another.
func bindOrder(j *jobState) []int {
	if j.family != nil {
		if o, ok := j.family.jobKind.(bindOrderer); ok {
			if order := o.bindOrder(len(j.sets)); order != nil {
				return order
			}
		}
	}
	order := make([]int, len(j.sets))
	for k := range order {
		order[k] = k
	}
	return order
}

// bindSet: pod set k's pods that are not bound yet, placed; a pod set Kueue admitted by TAS
// domain by domain, as the topology ungater sent them (tas.go; the pods of a domain already
// bound are on its nodes, the domains' nodes apart). The nodes taken, and why the rest do not
// fit.
func (s *sim) bindSet(j *jobState, k int) (placement, string) {
	set := &j.sets[k]
	if set.parts == nil {
		more, short := s.nodes.place(&set.spec, set.count-countOf(j.whose, k), j.spreadOf(k))
		if !set.tas {
			s.placedNonTAS(j, k, &set.spec, more)
		}
		return more, short
	}
	var all placement
	why := ""
	for d := range set.parts {
		part := &set.parts[d]
		bound := 0
		for n, w := range j.where {
			if j.whose[n] == k && s.nodes.nodes[w].selectedBy(part.spec.NodeSelector, nil) {
				bound++
			}
		}
		more, short := s.nodes.place(&part.spec, part.count-bound, j.spreadOf(k))
		all = append(all, more...)
		if why == "" {
			why = short
		}
	}
	return all, why
}

// place: the job's pods, waiting for nodes, tried again.
func (s *sim) place(j *jobState) error {
	switch {
	case j.members != nil:
		return s.groupLife(s.byPod[j.members[0]])
	case j.pod:
		return s.podLife(j.key)
	case j.family != nil:
		return s.familyPods(j.family, j.key)
	}
	return s.pods(j.key)
}

// countOf: how many of xs are x.
func countOf(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// pods: the Job controller and the scheduler, for one job: an unsuspended job's pods are
// placed if they all fit, and run; a suspended job's pods are deleted at once.
func (s *sim) pods(key types.NamespacedName) error {
	i, ok := s.byJob[key]
	if !ok {
		return nil
	}
	j := s.jobs[i]
	var bj batchv1.Job
	if err := s.get(key, &bj); err != nil {
		if apierrors.IsNotFound(err) {
			s.stop(j)
			return nil
		}
		return err
	}
	suspended := bj.Spec.Suspend != nil && *bj.Spec.Suspend
	switch {
	case j.finished:
		delete(s.waiting, i)
	case suspended && (len(j.where) > 0 || bj.Status.Active > 0):
		s.stopping[i] = true // its pods stop once Kueue is done with the instant (stopping.go)
	case suspended:
		delete(s.waiting, i)
		delete(s.toPlace, i)
		j.stuck, j.released = "", false
	case !j.running:
		if s.held(i) || !s.bind(i, []corev1.PodSpec{bj.Spec.Template.Spec}) {
			return nil
		}
		now := metav1.NewTime(s.clock.Now())
		bj.Status.Active, bj.Status.Ready = int32(j.count), ptr(int32(j.count))
		if bj.Status.StartTime == nil {
			bj.Status.StartTime = &now
		}
		return s.cl.Status().Update(s.ctx, &bj)
	}
	return nil
}

// holding: the Workloads that hold quota now, as one string (the set `see` keeps), a
// Deployment's replica's by its replica: Kueue preempts a replica by deleting its pod and the
// ReplicaSet makes another, a Workload of another name in the same place, so a loop of
// preemptions of replicas comes round to the same holders (a fair-sharing preemptor and the
// replica made again taking turns: cross-check seed 707 at 16440 s never came to rest).
func (s *sim) holding() string {
	if !s.heldValid { // sorted and printed again only when a Workload came or went (see)
		held := make([]string, 0, len(s.holders))
		for key := range s.holders {
			if as, ok := s.heldAs[key]; ok {
				held = append(held, as)
			} else {
				held = append(held, key.String())
			}
		}
		slices.Sort(held)
		s.heldText, s.heldValid = fmt.Sprint(held), true
	}
	return s.heldText
}

// heldJobs: the jobs whose pods wait for Kueue to be done with the instant, sampled with the
// holders: once Kueue is done, the engine lets them go one job a step and the holders stay as
// they are, which without them looked like a loop that had come round (a seed's third job of
// an instant never placed).
func (s *sim) heldJobs() string {
	return fmt.Sprint(slices.Sorted(maps.Keys(s.toPlace)))
}
