package main

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/scheduler"
	"sigs.k8s.io/kueue/pkg/workload"
)

// epoch: simulated second 0. Any fixed instant does; a whole second keeps Kueue's
// second-precision timestamps aligned with the replay's offsets.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// maxSteps bounds one settle: a replay that does not come to rest is an error, not a hang.
const maxSteps = 10_000

// A preemption loop: Kueue can preempt and readmit in a ring (a team reclaims from a
// borrower, which readmitted preempts within its queue, whose victim reclaims...), forever
// while nothing else happens. On a cluster each turn takes as long as evicted pods take to
// stop; in simulated time the turns would never end. After churnAfter steps at one instant the
// engine samples who holds quota (and whose pods wait to be let go) every churnEvery steps;
// when a set of holders comes back,
// the instant ends there and the loop is reported (Summary.Churn).
// idleTimers: how many instants of controllers' requeues that change nothing, with nothing
// else left, end the replay (a periodic requeue would otherwise go on forever).
const idleTimers = 100

const (
	churnAfter = 50
	churnEvery = 2
)

// trace: GPUQ_WHATIF_TRACE=1 prints what each settling step handled, to stderr.
var trace = os.Getenv("GPUQ_WHATIF_TRACE") != ""

// progress: GPUQ_WHATIF_PROGRESS=1 prints a line per instant settled (its simulated second,
// the scheduling cycles and events so far), to stderr: how far a replay stopped by a time
// bound got, as the output comes only when it ends.
var progress = os.Getenv("GPUQ_WHATIF_PROGRESS") != ""

type sim struct {
	ctx         context.Context
	clock       *testingclock.FakeClock
	base        ctrl.WithWatch
	cl          ctrl.Client
	cache       *schdcache.Cache
	queues      *qcache.Manager
	rq          requeuer
	sched       *scheduler.Scheduler
	wlRec       *core.WorkloadReconciler
	jobRec      reconcile.Reconciler
	podRec      reconcile.Reconciler // nil without Kueue's pod integration
	sts         statefulSets
	deploys     deployments
	lwss        leaderWorkerSets
	families    []*family            // the kinds whose controllers kinds.go plays, with Kueue's reconcilers
	lqRec       reconcile.Reconciler // Kueue's LocalQueue controller: only with admission fair sharing (afs.go)
	lqQ         workQueue
	lqDue       map[types.NamespacedName]float64         // each LocalQueue's pending timer (reconcileQueueAt)
	afterCycles workQueue                                // workload reconciles for after the instant's cycles (changes.go)
	admitPod    func(context.Context, *corev1.Pod) error // Kueue's Pod webhooks
	nodes       *cluster
	jobs        []*jobState
	byJob       map[types.NamespacedName]int
	byPod       map[types.NamespacedName]int
	byUID       map[types.UID]int
	seen        map[types.NamespacedName]*kueue.Workload
	holders     map[types.NamespacedName]bool // the seen Workloads that hold quota now (holding)
	heldText    string                        // holding's last answer, while holders has not changed since
	heldValid   bool
	heldAs      map[types.NamespacedName]string      // a Deployment's replica's Workload: its replica (holding)
	seenJobs    map[types.NamespacedName]ctrl.Object // Jobs and Pods, as their informers last saw them
	seenPods    map[types.NamespacedName]ctrl.Object
	owned       map[owner][]types.NamespacedName  // a Job or Pod -> its Workloads
	loading     map[string][]types.NamespacedName // while load runs: the stack's LocalQueues by ClusterQueue (loadingQueues)
	defaults    crdDefaults
	reads       *reads
	tracker     clienttesting.ObjectTracker
	statusTypes map[schema.GroupVersionKind]bool
	scheme      *runtime.Scheme
	dirty       dirty
	wlQ         workQueue
	jobQ        workQueue
	podQ        workQueue
	retry       map[int]bool // jobs whose pods wait for nodes, to try again: capacity was freed
	events      evHeap
	seq         int
	now         float64
	until       float64
	wg          sync.WaitGroup
	stats       Summary
	waiting     map[int]bool                  // running-but-unplaced jobs (unsuspended, pods pending)
	waitSeq     int                           // jobs that began to wait for nodes so far (jobState.waitingSince)
	services    services                      // the Services jobs' controllers made (spread.go)
	tas         *tasFeed                      // the TAS cache's feed of pods that are not TAS pods; nil without a Topology (tas.go)
	toPlace     map[int]bool                  // jobs whose new pods wait until Kueue is done with the instant (held)
	stopping    map[int]bool                  // suspended jobs whose pods run until Kueue is done with the instant (stopping.go)
	dying       map[types.NamespacedName]bool // deleted pods that run until Kueue is done with the instant (stopping.go)
	admitSeq    int                           // admissions so far (jobState.admittedSeq)
	// requeuePeriod: how long after a change Kueue requeues the inadmissible workloads it may
	// let in (its batch period: 1 s; 10 s with SchedulerLongRequeueInterval).
	requeuePeriod time.Duration
	lastSubmit    time.Time      // Kueue's clock at the last submission (submitting)
	workloadUIDs  map[int]string // Input.WorkloadUIDs
	// placement: by job index, the place of each of its admissions in Input.PlacementOrder.
	placement map[int][]int
	changes   int // objects seen changed (informer events), for idle instants
	// stackChanges: Input.Changes's objects, decoded and defaulted, by the change's index.
	stackChanges [][]ctrl.Object
	// informed, when set (by a test), sees the Workloads the informer hands out at each step,
	// in the order it hands them out.
	informed func(wls []types.NamespacedName)
}

// replay: the event loop. Each instant's events are applied, then everything settles at
// that instant; then the clock jumps to the next event.
func (s *sim) replay() error {
	s.setNow(0)
	if err := s.settle(); err != nil {
		return err
	}
	last, idle := 0.0, 0 // the last instant that changed something; timer-only instants since
	for s.events.Len() > 0 {
		at := s.events[0].at
		if s.until > 0 && at > s.until {
			break
		}
		if s.onlyTimers() && (s.until == 0 || idle >= idleTimers) {
			// Without --until the replay ends at the mix's last event, as the sandbox engine's
			// does: what controllers' requeues do after it (a waitForPodsReady eviction and
			// readmission, again and again) would go on for ever. With --until it goes on to
			// then, unless the requeues stop changing anything.
			break
		}
		s.setNow(at)
		s.stats.Instants++
		changes, timers := s.changes, s.events[0].kind == evTimer
		// Ends and timers first, then the stack's changes, then the submissions one by one,
		// each after the cluster has reacted to what came before it: jobs submitted at one
		// instant arrive in mix order, one after another (as kubectl applies them, and as the
		// sandbox engine replays them).
		for s.events.Len() > 0 && s.events[0].at == at {
			e := heap.Pop(&s.events).(ev)
			s.stats.Events++
			timers = timers && e.kind == evTimer
			if e.kind == evSubmit || e.kind == evChange {
				if err := s.settle(); err != nil {
					return err
				}
			}
			if e.kind == evSubmit {
				s.submitting()
			}
			if err := s.apply(e); err != nil {
				return err
			}
		}
		if err := s.settle(); err != nil {
			return err
		}
		s.reads.turn() // the reads kept of what this instant and the last did not touch go (reads.go)
		if progress {
			fmt.Fprintf(os.Stderr, "at %.3fs: %d instants, %d events, %d cycles\n", at, s.stats.Instants, s.stats.Events, s.stats.Cycles)
		}
		if timers && s.changes == changes {
			idle++
		} else {
			last, idle = at, 0
		}
	}
	// The replay ends at its last instant that changed something (or at --until): a
	// controller's requeue that found nothing to do is no event of the replay.
	s.now = last
	if s.until > s.now {
		s.setNow(s.until)
	}
	for _, j := range s.jobs {
		if j.running {
			j.runSeconds += s.now - j.startedAt
			j.startedAt = s.now
		}
	}
	s.stats.SimulatedSeconds = s.now
	return nil
}

// onlyTimers: nothing but controllers' requeues is left to happen.
func (s *sim) onlyTimers() bool {
	for _, e := range s.events {
		if e.kind != evTimer {
			return false
		}
	}
	return true
}

func (s *sim) apply(e ev) error {
	switch e.kind {
	case evSubmit:
		return s.submit(s.jobs[e.idx])
	case evFinish:
		j := s.jobs[e.idx]
		if (j.running || j.deploy != nil || j.lws != nil) && j.run == e.run && !j.finished {
			return s.complete(j)
		}
	case evTimer:
		if e.tgt.kind == kindLocalQueue && !s.lqTimerDue(e) {
			return nil
		}
		s.queue(e.tgt.kind).add(e.tgt.key)
	case evChange:
		return s.changeStack(s.stackChanges[e.idx])
	}
	return nil
}

// queue: the reconcile requests of a kind's controller.
func (s *sim) queue(k objKind) *workQueue {
	switch k {
	case kindWorkload:
		return &s.wlQ
	case kindPod:
		return &s.podQ
	case kindLocalQueue:
		return &s.lqQ
	case kindStatefulSet:
		return &s.sts.q
	case kindStatefulSetPod:
		return &s.sts.podQ
	case kindLWS:
		return &s.lwss.q
	}
	if k >= kindFamily {
		return &s.families[k-kindFamily].q
	}
	return &s.jobQ
}

// ownerQueue: the reconcile requests of the controller of the job's kind.
func (s *sim) ownerQueue(j *jobState) *workQueue {
	switch {
	case j.pod:
		return &s.podQ
	case j.family != nil:
		return &j.family.q
	}
	return &s.jobQ
}

// submit creates the Job as kubectl would after Kueue's Job webhook: suspended. A Pod goes
// through Kueue's own Pod webhooks.
func (s *sim) submit(j *jobState) error {
	switch {
	case j.set != nil:
		return s.submitStatefulSet(j)
	case j.deploy != nil:
		return s.submitDeployment(j)
	case j.lws != nil:
		return s.submitLWS(j)
	case j.members != nil:
		return s.submitGroup(j)
	case j.pod:
		return s.submitPod(j)
	case j.family != nil:
		return s.submitFamily(j)
	}
	var bj batchv1.Job
	if err := json.Unmarshal(j.in.Manifest, &bj); err != nil {
		return err
	}
	if bj.Namespace == "" {
		bj.Namespace = "default"
	}
	defaultJob(&bj)
	bj.UID = j.uid
	suspend := true
	bj.Spec.Suspend = &suspend
	bj.ResourceVersion = ""
	if err := s.cl.Create(s.ctx, &bj); err != nil {
		j.problem = fmt.Sprintf("the API refused it: %v", err)
		return nil
	}
	j.submitted = true
	// Creation time is set by stamp(); UID was set above and kept by the fake client.
	return nil
}

// complete: the job's time is up; its pods succeed and the Job is complete. While some pod
// waits for a node, its pods end one at a time and the scheduler tries the waiting pods on
// each one's end, the last's too, before the next job of the instant ends (endOneByOne).
func (s *sim) complete(j *jobState) error {
	var err error
	switch {
	case j.set != nil:
		err = s.completeStatefulSet(j)
	case j.deploy != nil: // its row: its pods serve until it is deleted
		err = s.deleteDeployment(j)
	case j.lws != nil && !isLWSGroup(j): // its row: its groups serve until it is deleted
		err = s.deleteLWS(j)
	case j.members != nil:
		err = s.completeGroup(j)
	case j.pod:
		err = s.completePod(j)
	case j.family != nil:
		err = s.completeFamily(j)
	default:
		err = s.completeJob(j)
	}
	if err != nil || len(s.waiting) == 0 {
		return err
	}
	return s.retryWaiting()
}

// completeJob: the Job's pods succeed and it is complete.
func (s *sim) completeJob(j *jobState) error {
	var bj batchv1.Job
	if err := s.get(j.key, &bj); err != nil {
		return err
	}
	if err := s.endOneByOne(j); err != nil {
		return err
	}
	s.stop(j)
	j.finished = true
	now := metav1.NewTime(s.clock.Now())
	bj.Status.Active, bj.Status.Ready = 0, ptr(int32(0))
	bj.Status.Succeeded = int32(j.count)
	bj.Status.CompletionTime = &now
	bj.Status.Conditions = append(bj.Status.Conditions,
		batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
		batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
	)
	return s.cl.Status().Update(s.ctx, &bj)
}

func ptr[T any](v T) *T { return &v }

// defaultJob: what the API server's defaulting gives a batch/v1 Job that Kueue reads.
func defaultJob(j *batchv1.Job) {
	if j.Spec.Parallelism == nil && j.Spec.Completions == nil {
		j.Spec.Completions = ptr(int32(1))
	}
	if j.Spec.Parallelism == nil {
		j.Spec.Parallelism = ptr(int32(1))
	}
	if j.Spec.BackoffLimit == nil {
		j.Spec.BackoffLimit = ptr(int32(6))
	}
	if j.Spec.CompletionMode == nil {
		mode := batchv1.NonIndexedCompletion
		j.Spec.CompletionMode = &mode
	}
}

// see records the Workload at key as the informer last saw it (nil: deleted), and whether it
// holds quota, so that sampling the holders (holding) costs the holders, not every Workload
// the replay has seen.
func (s *sim) see(key types.NamespacedName, wl *kueue.Workload) {
	had := s.holders[key]
	switch {
	case wl == nil:
		delete(s.seen, key)
		delete(s.holders, key)
	case workload.HasQuotaReservation(wl) && !apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished):
		s.seen[key] = wl
		s.holders[key] = true
	default:
		s.seen[key] = wl
		delete(s.holders, key)
	}
	if had != s.holders[key] {
		s.heldValid = false
	}
}

// observe: an informer's event for one Workload, handed to the workload controller's
// event handlers (which keep the cache and the queues), then queued for reconciling along
// with its owner Job.
func (s *sim) observe(key types.NamespacedName) error {
	wl := &kueue.Workload{}
	err := s.get(key, wl)
	old := s.seen[key]
	switch {
	case apierrors.IsNotFound(err):
		if old != nil {
			s.wlRec.Delete(event.TypedDeleteEvent[*kueue.Workload]{Object: old})
			s.see(key, nil)
			s.lwsWorkloadChanged(old)
		}
		return nil
	case err != nil:
		return err
	case old == nil:
		if s.wlRec.Create(event.TypedCreateEvent[*kueue.Workload]{Object: wl}) {
			s.wlQ.add(key)
		}
	case old.ResourceVersion == wl.ResourceVersion || sameButVersion(old, wl):
		return nil // the API server makes no event of a write that changes nothing
	default:
		if s.wlRec.Update(event.TypedUpdateEvent[*kueue.Workload]{ObjectOld: old, ObjectNew: wl}) {
			s.wlQ.add(key)
		}
	}
	s.see(key, wl)
	s.changes++
	if trace {
		var cs []string
		for _, c := range wl.Status.Conditions {
			cs = append(cs, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
		fmt.Fprintf(os.Stderr, "  wl %s rv=%s %v\n", key.Name, wl.ResourceVersion, cs)
	}
	s.lwsWorkloadChanged(wl)
	seen := map[int]bool{} // a pod group's Workload is owned by each of its members
	for _, ref := range wl.OwnerReferences {
		if i, ok := s.workloadOwner(ref.UID, key.Name); ok && !seen[i] {
			seen[i] = true
			j := s.jobs[i]
			j.workload, j.last = &key, wl
			if isReplica(j) && s.heldAs[key] == "" {
				s.heldAs[key], s.heldValid = fmt.Sprintf("%s replica %d", j.deploy.name, j.deploy.slot[i]), false
			}
			s.ownerQueue(j).add(j.key)
			s.track(j, wl)
		}
	}
	return nil
}

// changed: whether the Job (or Pod) differs from what the controllers last saw (an
// informer's update event); a write that changed nothing makes none.
func (s *sim) changed(key types.NamespacedName, seen map[types.NamespacedName]ctrl.Object, obj ctrl.Object) (bool, error) {
	err := s.get(key, obj)
	old := seen[key]
	switch {
	case apierrors.IsNotFound(err):
		delete(seen, key)
		return old != nil, nil
	case err != nil:
		return false, err
	case old != nil && (old.GetResourceVersion() == obj.GetResourceVersion() || sameButVersion(old, obj)):
		return false, nil
	}
	seen[key] = obj
	s.changes++
	return true, nil
}

// sameButVersion: equal but for the resourceVersion (and managed fields). The status is
// compared first: nearly every write changes it, and the whole object's walk would pass
// through the pod template before it got there. cur is the engine's own fresh read: it takes
// old's version and managed fields for the comparison and gets its own back after it, so
// neither object is copied.
func sameButVersion[T ctrl.Object](old, cur T) bool {
	if o, c := reflect.ValueOf(old).Elem().FieldByName("Status"), reflect.ValueOf(cur).Elem().FieldByName("Status"); o.IsValid() &&
		!equality.Semantic.DeepEqual(o.Interface(), c.Interface()) {
		return false
	}
	rv, mf := cur.GetResourceVersion(), cur.GetManagedFields()
	cur.SetResourceVersion(old.GetResourceVersion())
	cur.SetManagedFields(old.GetManagedFields())
	same := equality.Semantic.DeepEqual(old, cur)
	cur.SetResourceVersion(rv)
	cur.SetManagedFields(mf)
	return same
}

// track: what the workload's change means for the report (first admission, evictions).
func (s *sim) track(j *jobState, wl *kueue.Workload) {
	holds := workload.HasQuotaReservation(wl) && !apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)
	if holds && j.admittedAt == nil {
		at := s.now
		j.admittedAt = &at
		j.first = wl.Status.Admission.DeepCopy()
	}
	if holds && !j.hadQuota {
		s.admitSeq++
		j.admittedSeq = s.admitSeq
		j.admissions++
		j.timeline = append(j.timeline, step{At: s.now, Event: "admitted", Admission: wl.Status.Admission.DeepCopy()})
	}
	if j.hadQuota && !holds && !apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		var conds []metav1.Condition
		for _, t := range []string{kueue.WorkloadEvicted, kueue.WorkloadPreempted} {
			if c := apimeta.FindStatusCondition(wl.Status.Conditions, t); c != nil {
				conds = append(conds, *c)
			}
		}
		j.evictions = append(j.evictions, conds)
		j.timeline = append(j.timeline, step{At: s.now, Event: "evicted", Why: conds})
	}
	j.hadQuota = holds
}

func (s *sim) reconcile(r reconcile.Reconciler, key types.NamespacedName, kind objKind) error {
	s.stats.Reconciles++
	res, err := r.Reconcile(s.ctx, reconcile.Request{NamespacedName: key})
	if err != nil {
		// A controller's error is retried, as controller-runtime would, at the next step.
		res.RequeueAfter = time.Second
	}
	switch {
	case res.RequeueAfter > 0 && kind == kindLocalQueue:
		s.reconcileQueueAt(key, s.now+res.RequeueAfter.Seconds())
	case res.RequeueAfter > 0:
		s.push(ev{at: s.now + res.RequeueAfter.Seconds(), kind: evTimer, tgt: target{kind: kind, key: key}})
	}
	return nil
}

// settle runs everything the current instant sets off until nothing is left to do.
func (s *sim) settle() error {
	limit := maxSteps + 100*len(s.jobs)
	holders := newRingWatch()   // who holds quota, sampled as the instant goes on
	rounds := map[string]bool{} // what the instant's cycles left, once it is long (comeRound)
	if v, err := strconv.Atoi(os.Getenv("GPUQ_WHATIF_MAX_STEPS")); err == nil {
		limit = v
	}
	for step := 0; step < limit; step++ {
		wls, jobs, pods, others := s.dirty.take()
		if s.informed != nil && len(wls) > 0 {
			s.informed(wls)
		}
		if err := s.inform(wls, jobs, pods); err != nil {
			return err
		}
		if err := s.informFamilies(others); err != nil {
			return err
		}
		if err := s.informServing(others); err != nil {
			return err
		}
		retry := slices.Collect(maps.Keys(s.retry))
		clear(s.retry)
		if err := s.retryJobs(retry); err != nil {
			return err
		}
		wq, jq, pq, lq := s.wlQ.drain(), s.jobQ.drain(), s.podQ.drain(), s.lqQ.drain()
		fq := s.drainFamilies()
		if err := s.reconcileAll(wq, jq, pq, fq); err != nil {
			return err
		}
		sq, err := s.reconcileServing()
		if err != nil {
			return err
		}
		for _, k := range lq {
			if err := s.reconcile(s.lqRec, k, kindLocalQueue); err != nil {
				return err
			}
		}
		if holders.due(step) {
			if period, again := holders.seen(step, s.holding()+s.heldJobs()); again {
				s.stats.Churn = append(s.stats.Churn, Churn{At: s.now, Steps: step, Period: period})
				return nil // a preemption loop: the same holders come back; see Churn
			}
		}
		if trace && step < 200 {
			fmt.Fprintf(os.Stderr, "t=%v step=%d wls=%v jobs=%v wq=%v jq=%v\n", s.now, step, wls, jobs, wq, jq)
		}
		if len(wls)+len(jobs)+len(pods)+len(others)+len(retry)+len(wq)+len(jq)+len(pq)+len(lq)+len(fq)+sq > 0 {
			continue
		}
		// Scheduling cycles first, the inadmissible workloads' requeue after: Kueue batches
		// that requeue by a second (1 s; 10 s with SchedulerLongRequeueInterval), in which
		// time its scheduler runs every cycle the heads it has allow.
		if s.hasHeads() {
			before := s.queueState()
			s.stats.Cycles++
			s.sched.WhatIfCycle(s.ctx)
			s.wg.Wait()
			others, busy := s.leftByCycle(before)
			// A head gone back to its heap to try its next flavors is busy too: the next cycle
			// differs, though this one wrote nothing new (its message may read as the last one's).
			if (busy || s.flavorsLeft()) && (others || step < churnAfter || !s.comeRound(rounds)) {
				continue
			}
			// A fixed point: the cycle changed nothing (a StrictFIFO head that fits nowhere), or
			// left what an earlier cycle of the instant left (comeRound: a loop).
		}
		if s.afterCycles.len() > 0 {
			for _, k := range s.afterCycles.drain() {
				s.wlQ.add(k)
			}
			continue
		}
		if s.rq.ProcessRequeues(s.ctx) > 0 {
			// The requeue comes a batch period after what set it off, on Kueue's clock as on a
			// cluster's (and the sandbox's): what it admits is the more recent by that much.
			s.clock.SetTime(s.clock.Now().Add(s.requeuePeriod))
			continue
		}
		if len(s.stopping)+len(s.dying) > 0 {
			if err := s.stopWhatRan(); err != nil {
				return err
			}
			continue
		}
		// Kueue is done with the instant: the pods of the jobs it admitted go to the
		// scheduler, one job at a time in the order Kueue admitted them, the cluster settling
		// after each (the sandbox engine's gate holds them so: sandbox/replay/gate.py).
		if i, ok := s.nextToPlace(); ok {
			if err := s.release(i); err != nil {
				return err
			}
			continue
		}
		return nil
	}
	return fmt.Errorf("the replay did not come to rest at %.0fs after %d steps", s.now, limit)
}

// inform: the informers' events for what was written since the controllers last looked:
// Workloads to the workload controller's handlers, changed Jobs and Pods to the kubelet's
// part (pods, podLife) and their reconcilers' queues.
func (s *sim) inform(wls, jobs, pods []types.NamespacedName) error {
	for _, k := range wls {
		if err := s.observe(k); err != nil {
			return err
		}
	}
	for _, k := range jobs {
		changed, err := s.changed(k, s.seenJobs, &batchv1.Job{})
		if err != nil {
			return err
		}
		if !changed {
			continue
		}
		if err := s.pods(k); err != nil {
			return err
		}
		s.jobQ.add(k)
	}
	for _, k := range pods {
		changed, err := s.changed(k, s.seenPods, &corev1.Pod{})
		if err != nil {
			return err
		}
		if !changed {
			continue
		}
		if err := s.podLife(k); err != nil {
			return err
		}
		s.podQ.add(s.podRequest(k))
		s.setPodChanged(k)
		s.lwsPodChanged(k)
		if err := s.replicaChanged(k); err != nil {
			return err
		}
	}
	return nil
}

// reconcileAll: the queued reconcile requests, by controller.
func (s *sim) reconcileAll(wq, jq, pq []types.NamespacedName, fq [][]types.NamespacedName) error {
	for _, k := range wq {
		if err := s.reconcile(s.wlRec, k, kindWorkload); err != nil {
			return err
		}
	}
	for _, k := range jq {
		if err := s.reconcile(s.jobRec, k, kindJob); err != nil {
			return err
		}
	}
	for _, k := range pq {
		if err := s.reconcile(s.podRec, k, kindPod); err != nil {
			return err
		}
	}
	for i, keys := range fq {
		f := s.families[i]
		for _, k := range keys {
			if err := s.reconcile(f.rec, k, f.obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// drainFamilies: each family's queued reconcile requests, in the families' order; none at all
// (nil) when no family has any.
func (s *sim) drainFamilies() [][]types.NamespacedName {
	if s.familiesQueued() == 0 {
		return nil
	}
	out := make([][]types.NamespacedName, len(s.families))
	for i, f := range s.families {
		out[i] = f.q.drain()
	}
	return out
}

func (s *sim) familiesQueued() int {
	n := 0
	for _, f := range s.families {
		n += f.q.len()
	}
	return n
}

func (s *sim) results() []Result {
	out := make([]Result, 0, len(s.jobs))
	for _, j := range s.jobs {
		if isReplica(j) || isLWSGroup(j) { // its Deployment's or LWS's row tells of it
			continue
		}
		r := Result{Type: "workload", Index: j.in.Index, AdmittedAt: j.admittedAt, FirstAdmission: j.first, RunSeconds: j.runSeconds,
			Intervals: j.intervals, Evictions: j.evictions, Timeline: j.timeline, AllRunning: j.running, Stuck: j.stuck, Problem: j.problem}
		if r.Intervals == nil {
			r.Intervals = []interval{}
		}
		if r.Evictions == nil {
			r.Evictions = [][]metav1.Condition{}
		}
		if r.Timeline == nil {
			r.Timeline = []step{}
		}
		if j.deploy != nil {
			r = s.deploymentResult(j, r)
		}
		if j.lws != nil {
			r = s.lwsResult(j, r)
		}
		if j.workload != nil {
			wl := &kueue.Workload{}
			err := s.get(*j.workload, wl)
			if apierrors.IsNotFound(err) && j.set != nil && j.finished && j.last != nil {
				wl, err, r.Deleted = j.last.DeepCopy(), nil, true
			}
			if err == nil {
				wl.ManagedFields = nil
				r.Workload = wl
			}
		}
		out = append(out, r)
	}
	return out
}

func (s *sim) summary() Summary {
	s.stats.Type = "summary"
	return s.stats
}
