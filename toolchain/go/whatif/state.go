package main

import (
	"container/heap"
	"context"
	"reflect"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// The engine's bookkeeping: a job through the replay, the output lines, the event heap,
// and the informer's view of what changed.

type interval struct {
	Start float64  `json:"start"`
	End   *float64 `json:"end"`
}

// podSet: the pods of one spec a job runs (a Job's or a Pod's one, a JobSet's one per
// replicated job, a Kubeflow job's or an MPIJob's one per replica type), the spec as it was when its first pod was bound.
type podSet struct {
	spec  corev1.PodSpec
	count int
	// tas: its pods are TAS pods (Kueue's TAS cache counts them by its admission, not as
	// pods); parts: where the topology ungater sends them, when Kueue admitted it by TAS
	// (tas.go), else nil.
	tas   bool
	parts []domainPart
	// spread: its pods' groups for PodTopologySpread when they are not the job's (spread.go,
	// spreadIn), e.g. an LWS group's leader and workers; "" the job's.
	spread string
}

// jobState follows one job of the mix (a batch/v1 Job, a plain Pod, or a job of a family:
// kinds.go) through the replay.
type jobState struct {
	in  JobInput
	pod bool // a plain Pod (Kueue's pod integration), not a Job
	// members: a pod group's Pods (podgroup.go), nil for any other job; key is then the pod
	// reconciler's request for the group.
	members []types.NamespacedName
	// set: a StatefulSet's name (statefulset.go; its pods are members), nil for any other
	// job; made: how many pods its controller has made for it.
	set  *types.NamespacedName
	made int
	// last: its Workload as the replay last saw it (kept for the report once it is deleted).
	last     *kueue.Workload
	family   *family // a kind whose controller kinds.go plays (a JobSet, a PyTorchJob, ...), else nil
	key      types.NamespacedName
	uid      types.UID
	template corev1.PodTemplateSpec
	count    int // its pods, over its pod sets
	sets     []podSet
	running  bool
	// where: the node of each of its bound pods; whose: each one's pod set.
	where      placement
	whose      []int
	startedAt  float64
	run        int
	runSeconds float64
	intervals  []interval
	admittedAt *float64
	first      *kueue.Admission // its first admission (the flavors a start-time estimate names)
	hadQuota   bool
	evictions  [][]metav1.Condition
	timeline   []step
	finished   bool
	stuck      string
	// waitingSince: when its pods began to wait for nodes (the engine's sequence), the order in
	// which waiting pods are tried again.
	waitingSince int
	// released: its current pods went to the scheduler (sim.release); new pods are held.
	released bool
	// admittedSeq: its last admission's place among all (the order held pods are released in).
	admittedSeq int
	admissions  int // how many times it was admitted
	workload    *types.NamespacedName
	submitted   bool
	problem     string
	// spread: the group of its pods a Service, a StatefulSet or a ReplicaSet selects ("" none;
	// spread.go), for the scheduler's PodTopologySpread score; a pod set's own comes first.
	spread string
	// deploy: a Deployment's (deployment.go): on its row, and on each pod made for it (a
	// plain Pod), else nil.
	deploy *deployment
	// lws: a LeaderWorkerSet's (lws.go): on its row, and on each of its groups (a pod group),
	// else nil.
	lws *leaderWorkerSet
}

// step: one change of a workload's hold on quota or of its pods, when it happened: admitted
// (with the admission, for its flavors), evicted (with the Evicted and Preempted conditions)
// or ran (its pods placed, with their nodes), so that two engines' stories can be set side by
// side and the first place they part found.
type step struct {
	At        float64            `json:"at"`
	Event     string             `json:"event"`
	Admission *kueue.Admission   `json:"admission,omitempty"`
	Why       []metav1.Condition `json:"why,omitempty"`
	Nodes     []string           `json:"nodes,omitempty"` // ran: where its pods were placed
}

// Result is one "workload" line of the output.
type Result struct {
	Type       string          `json:"type"`
	Index      int             `json:"index"`
	Workload   *kueue.Workload `json:"workload"`
	AdmittedAt *float64        `json:"admittedAt"`
	// FirstAdmission: the Workload's status.admission when it was first admitted.
	FirstAdmission *kueue.Admission     `json:"firstAdmission,omitempty"`
	RunSeconds     float64              `json:"runSeconds"` // how long its pods ran, over all its runs
	Intervals      []interval           `json:"intervals"`
	Evictions      [][]metav1.Condition `json:"evictions"`
	Timeline       []step               `json:"timeline"`
	AllRunning     bool                 `json:"allRunning"`
	Stuck          string               `json:"stuck,omitempty"`
	Problem        string               `json:"problem,omitempty"`
	// Deleted: its Workload is gone, deleted with its owner when its time was up (a
	// StatefulSet's: statefulset.go); Workload is the last the replay saw of it.
	Deleted bool `json:"deleted,omitempty"`
	// Replicas: a Deployment's current pods' Workloads (deployment_result.go), one a replica.
	Replicas []*kueue.Workload `json:"replicas,omitempty"`
}

// Summary is the last line of the output: the clock's figures.
type Summary struct {
	Type             string  `json:"type"`
	SimulatedSeconds float64 `json:"simulatedSeconds"`
	WallSeconds      float64 `json:"wallSeconds"`
	Events           int     `json:"events"`
	Instants         int     `json:"instants"`
	Cycles           int     `json:"cycles"`
	Reconciles       int     `json:"reconciles"`
	KueueVersion     string  `json:"kueueVersion"`
	Churn            []Churn `json:"churn"`
}

// Churn is one instant that ended in a preemption loop.
type Churn struct {
	At     float64 `json:"at"`
	Steps  int     `json:"steps"`
	Period int     `json:"period"` // steps between two sightings of the same holders
}

type evKind int

const (
	evFinish evKind = iota // ends first: a job submitted as another ends finds its quota free
	evTimer
	evChange // a change of the stack (Input.Changes), before the instant's submissions
	evSubmit
)

type ev struct {
	at   float64
	kind evKind
	idx  int // job index (finish, submit) or timer target
	run  int
	seq  int
	tgt  target
}

// objKind: what a reconcile request or an informer's event is about.
type objKind int

const (
	kindWorkload objKind = iota
	kindJob
	kindPod
	kindLocalQueue // only with admission fair sharing (afs.go)
	kindStatefulSet
	kindStatefulSetPod // Kueue's StatefulSet pod reconciler's (statefulset.go)
	kindLWS            // Kueue's LeaderWorkerSet reconciler's (lws.go)
	kindFamily         // the first family's (kinds.go); the next ones' follow
)

type target struct {
	kind objKind
	key  types.NamespacedName
}

type evHeap []ev

func (h evHeap) Len() int { return len(h) }
func (h evHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	if h[i].kind != h[j].kind {
		return h[i].kind < h[j].kind
	}
	if h[i].idx != h[j].idx {
		return h[i].idx < h[j].idx
	}
	return h[i].seq < h[j].seq
}
func (h evHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)   { *h = append(*h, x.(ev)) }
func (h *evHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// dirty: the objects written since the controllers last looked (an informer's view).
//
// Workloads come back in the order they were first written since the last look, as a watch
// delivers them: Kueue's scheduler admits a cycle's workloads one after another in its own
// order (the engine makes those writes synchronous), and that order, not their names, is the
// one the admitted jobs' pods go to the scheduler in (sim.track, admittedSeq).
type dirty struct {
	mu        sync.Mutex
	workloads map[types.NamespacedName]int // the order of its first write since the last take
	jobs      map[types.NamespacedName]bool
	pods      map[types.NamespacedName]bool
	others    map[reflect.Type]map[types.NamespacedName]bool // the families' kinds (kinds.go), by Go type
}

func (d *dirty) mark(obj ctrl.Object) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	switch obj.(type) {
	case *kueue.Workload:
		if _, ok := d.workloads[key]; !ok {
			d.workloads[key] = len(d.workloads)
		}
	case *batchv1.Job:
		d.jobs[key] = true
	case *corev1.Pod:
		d.pods[key] = true
	default:
		t := reflect.TypeOf(obj)
		if d.others[t] == nil {
			d.others[t] = map[types.NamespacedName]bool{}
		}
		d.others[t][key] = true
	}
}

func (d *dirty) empty() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.workloads)+len(d.jobs)+len(d.pods)+len(d.others) == 0
}

// onlyWorkloads: whether nothing but Workloads was written since the last take.
func (d *dirty) onlyWorkloads() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.jobs)+len(d.pods)+len(d.others) == 0
}

func (d *dirty) reset() {
	d.workloads, d.jobs, d.pods = map[types.NamespacedName]int{}, map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}
	d.others = map[reflect.Type]map[types.NamespacedName]bool{}
}

func (d *dirty) take() (wls, jobs, pods []types.NamespacedName, others map[reflect.Type][]types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wls = make([]types.NamespacedName, len(d.workloads))
	for k, i := range d.workloads {
		wls[i] = k
	}
	jobs, pods = sortedKeys(d.jobs), sortedKeys(d.pods)
	others = map[reflect.Type][]types.NamespacedName{}
	for t, keys := range d.others {
		others[t] = sortedKeys(keys)
	}
	d.reset()
	return wls, jobs, pods, others
}

func sortedKeys(m map[types.NamespacedName]bool) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].Name < keys[j].Name
	})
	return keys
}

type requeuer interface{ ProcessRequeues(context.Context) int }

// workQueue: reconcile requests in the order first asked, each once.
type workQueue struct {
	order []types.NamespacedName
	in    map[types.NamespacedName]bool
}

func (q *workQueue) add(k types.NamespacedName) {
	if q.in == nil {
		q.in = map[types.NamespacedName]bool{}
	}
	if !q.in[k] {
		q.in[k] = true
		q.order = append(q.order, k)
	}
}

func (q *workQueue) len() int { return len(q.order) }

func (q *workQueue) drain() []types.NamespacedName {
	out := q.order
	q.order, q.in = nil, nil
	return out
}

func (s *sim) push(e ev) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.events, e)
}

func (s *sim) setNow(t float64) {
	s.now = t
	at := epoch.Add(time.Duration(t * float64(time.Second)))
	if at.Before(s.clock.Now()) { // Kueue's clock never goes back (submitting)
		at = s.clock.Now()
	}
	s.clock.SetTime(at)
}

// submitting moves Kueue's clock to a later second than the last submission's, when it is
// not there already: jobs submitted at one instant arrive one after another, as kubectl
// applies them and as the sandbox engine creates them (each in a later second than the one
// before), so Kueue sees their creation, and the admissions they get at once, in that order
// (a workload admitted later is the more recent one a reclaim takes first). The replay's own
// time stays the instant; only Kueue's clock runs these seconds ahead, until the next instant
// that is later.
func (s *sim) submitting() {
	if next := s.lastSubmit.Add(time.Second); !s.lastSubmit.IsZero() && s.clock.Now().Before(next) {
		s.clock.SetTime(next)
	}
	s.lastSubmit = s.clock.Now()
}

// ringWatch: the sets of quota holders sampled at one instant (sim.go, A preemption loop),
// each with the step it was first seen at, and the last one sampled.
type ringWatch struct {
	first map[string]int
	last  string
}

func newRingWatch() *ringWatch { return &ringWatch{first: map[string]int{}} }

// due: whether step is one at which the holders are sampled.
func (r *ringWatch) due(step int) bool { return step >= churnAfter && step%churnEvery == 0 }

// seen records the holders sampled at step; when the same holders were seen before, with
// others in between, the steps since then (the loop's period) and true. Holders that have not
// changed since the last sample are no loop come round: the instant goes on elsewhere (its
// pods let go, its pending workloads tried again).
func (r *ringWatch) seen(step int, held string) (int, bool) {
	if len(r.first) > 0 && held == r.last {
		return 0, false
	}
	r.last = held
	if first, again := r.first[held]; again {
		return step - first, true
	}
	r.first[held] = step
	return 0, false
}

// spreadOf: the PodTopologySpread groups of pod set k's pods (spread.go).
func (j *jobState) spreadOf(k int) string {
	if j.sets[k].spread != "" {
		return j.sets[k].spread
	}
	return j.spread
}
