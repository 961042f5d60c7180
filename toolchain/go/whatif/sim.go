package main

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/config"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/job"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/util/waitforpodsready"
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
// engine samples who holds quota every churnEvery steps; when a set of holders comes back,
// the instant ends there and the loop is reported (Summary.Churn).
// idleTimers: how many instants of controllers' requeues that change nothing, with nothing
// else left, end the replay (a periodic requeue would otherwise go on forever).
const idleTimers = 100

const (
	churnAfter = 300
	churnEvery = 10
)

// trace: GPUQ_WHATIF_TRACE=1 prints what each settling step handled, to stderr.
var trace = os.Getenv("GPUQ_WHATIF_TRACE") != ""

type interval struct {
	Start float64  `json:"start"`
	End   *float64 `json:"end"`
}

// jobState follows one job of the mix through the replay.
type jobState struct {
	in          JobInput
	key         types.NamespacedName
	uid         types.UID
	template    corev1.PodTemplateSpec
	count       int
	running     bool
	where       placement
	spec        corev1.PodSpec
	startedAt   float64
	run         int
	runSeconds  float64
	intervals   []interval
	admittedAt  *float64
	hadQuota    bool
	evictions   [][]metav1.Condition
	finished    bool
	stuck       string
	workload    *types.NamespacedName
	submitted   bool
	problem     string
	completedAt *float64
}

// Result is one "workload" line of the output.
type Result struct {
	Type       string               `json:"type"`
	Index      int                  `json:"index"`
	Workload   *kueue.Workload      `json:"workload"`
	AdmittedAt *float64             `json:"admittedAt"`
	RunSeconds float64              `json:"runSeconds"` // how long its pods ran, over all its runs
	Intervals  []interval           `json:"intervals"`
	Evictions  [][]metav1.Condition `json:"evictions"`
	AllRunning bool                 `json:"allRunning"`
	Stuck      string               `json:"stuck,omitempty"`
	Problem    string               `json:"problem,omitempty"`
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

type target struct {
	workload bool
	key      types.NamespacedName
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
type dirty struct {
	mu        sync.Mutex
	workloads map[types.NamespacedName]bool
	jobs      map[types.NamespacedName]bool
}

func (d *dirty) mark(obj ctrl.Object) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	switch obj.(type) {
	case *kueue.Workload:
		d.workloads[key] = true
	case *batchv1.Job:
		d.jobs[key] = true
	}
}

func (d *dirty) empty() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.workloads)+len(d.jobs) == 0
}

func (d *dirty) take() ([]types.NamespacedName, []types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w, j := sortedKeys(d.workloads), sortedKeys(d.jobs)
	d.workloads, d.jobs = map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}
	return w, j
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

type sim struct {
	ctx      context.Context
	clock    *testingclock.FakeClock
	base     ctrl.WithWatch
	cl       ctrl.Client
	cache    *schdcache.Cache
	queues   *qcache.Manager
	rq       requeuer
	sched    *scheduler.Scheduler
	wlRec    *core.WorkloadReconciler
	jobRec   reconcile.Reconciler
	nodes    *cluster
	jobs     []*jobState
	byJob    map[types.NamespacedName]int
	byUID    map[types.UID]int
	seen     map[types.NamespacedName]*kueue.Workload
	seenJobs map[types.NamespacedName]*batchv1.Job
	owned    map[types.NamespacedName][]types.NamespacedName // Job -> its Workloads
	defaults crdDefaults
	scheme   *runtime.Scheme
	dirty    dirty
	wlQ      workQueue
	jobQ     workQueue
	events   evHeap
	seq      int
	now      float64
	until    float64
	wg       sync.WaitGroup
	stats    Summary
	waiting  map[int]bool // running-but-unplaced jobs (unsuspended, pods pending)
	changes  int          // objects seen changed (informer events), for idle instants
}

// jobOwnerKey: the field index the Job reconciler finds a Job's Workloads by.
var jobOwnerKey = jobframework.OwnerReferenceIndexKey(batchv1.SchemeGroupVersion.WithKind("Job"))

type nopRecorder struct{}

func (nopRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...interface{}) {
}

func newSim(in *Input) (*sim, error) {
	ctx := ctrllog.IntoContext(context.Background(), ctrllog.Log)
	s := &sim{
		ctx:      ctx,
		clock:    testingclock.NewFakeClock(epoch),
		byJob:    map[types.NamespacedName]int{},
		byUID:    map[types.UID]int{},
		seen:     map[types.NamespacedName]*kueue.Workload{},
		seenJobs: map[types.NamespacedName]*batchv1.Job{},
		owned:    map[types.NamespacedName][]types.NamespacedName{},
		until:    in.Until,
		waiting:  map[int]bool{},
	}
	s.dirty.workloads, s.dirty.jobs = map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}

	cfg, err := loadConfiguration(in.Configuration)
	if err != nil {
		return nil, err
	}

	// Kueue's test client (its scheme and indexes), on a plain object tracker: the default,
	// field-managed one rebuilds a REST mapper on every patch, most of a replay's time.
	scheme := utiltesting.NewClientBuilder().Build().Scheme() // the same scheme, from a builder of its own
	builder := utiltesting.NewClientBuilder().
		WithObjectTracker(clienttesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())).
		WithStatusSubresource(&kueue.Workload{}, &batchv1.Job{}, &kueue.ClusterQueue{}, &kueue.LocalQueue{}, &kueue.Cohort{}).
		WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerOrPodType, indexer.IndexLimitRangeHasContainerOrPodType)
	if err := job.SetupIndexes(ctx, utiltesting.AsIndexer(builder)); err != nil {
		return nil, fmt.Errorf("job indexes: %w", err)
	}
	objs, err := decodeObjects(scheme, in.Objects)
	if err != nil {
		return nil, err
	}
	if s.defaults, err = loadCRDDefaults(in.CRDs); err != nil {
		return nil, err
	}
	s.scheme = scheme
	for _, o := range objs {
		if err := s.defaults.apply(scheme, o); err != nil {
			return nil, fmt.Errorf("defaulting %s: %w", o.GetName(), err)
		}
		if trace {
			b, _ := json.Marshal(o)
			fmt.Fprintf(os.Stderr, "object %s\n", b)
		}
	}
	if trace {
		fmt.Fprintf(os.Stderr, "crd schemas: %d\n", len(s.defaults))
	}
	s.base = builder.WithObjects(objs...).Build()
	s.cl = interceptor.NewClient(s.base, interceptor.Funcs{
		Create: func(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.CreateOption) error {
			s.stamp(obj)
			if err := s.defaults.apply(s.scheme, obj); err != nil {
				return err
			}
			err := c.Create(ctx, obj, opts...)
			s.dirty.mark(obj)
			return err
		},
		List: func(ctx context.Context, c ctrl.WithWatch, list ctrl.ObjectList, opts ...ctrl.ListOption) error {
			if wls, ok := list.(*kueue.WorkloadList); ok {
				if done, err := s.listOwned(ctx, wls, opts); done {
					return err
				}
			}
			return c.List(ctx, list, opts...)
		},
		Update: func(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.UpdateOption) error {
			err := c.Update(ctx, obj, opts...)
			s.dirty.mark(obj)
			return err
		},
		Patch: func(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, patch ctrl.Patch, opts ...ctrl.PatchOption) error {
			err := c.Patch(ctx, obj, patch, opts...)
			s.dirty.mark(obj)
			return err
		},
		Delete: func(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...)
			s.dirty.mark(obj)
			return err
		},
		SubResourceUpdate: func(ctx context.Context, c ctrl.Client, sub string, obj ctrl.Object, opts ...ctrl.SubResourceUpdateOption) error {
			err := c.SubResource(sub).Update(ctx, obj, opts...)
			s.dirty.mark(obj)
			return err
		},
		SubResourcePatch: func(ctx context.Context, c ctrl.Client, sub string, obj ctrl.Object, patch ctrl.Patch, opts ...ctrl.SubResourcePatchOption) error {
			err := utiltesting.TreatSSAAsStrategicMerge(ctx, c, sub, obj, patch, opts...)
			s.dirty.mark(obj)
			return err
		},
	})

	expectations := preemptexpectations.New()
	cacheOpts := []schdcache.Option{
		schdcache.WithPodsReadyTracking(waitforpodsready.Enabled(cfg.WaitForPodsReady) &&
			cfg.WaitForPodsReady.BlockAdmission != nil && *cfg.WaitForPodsReady.BlockAdmission),
		schdcache.WithFairSharing(cfg.FairSharing != nil),
	}
	queueOpts := []qcache.Option{
		qcache.WithClock(s.clock),
		qcache.WithPodsReadyRequeuingTimestamp(requeuingTimestamp(cfg)),
		qcache.WithPreemptionExpectations(expectations),
	}
	if cfg.Resources != nil {
		cacheOpts = append(cacheOpts, schdcache.WithExcludedResourcePrefixes(cfg.Resources.ExcludeResourcePrefixes),
			schdcache.WithResourceTransformations(cfg.Resources.Transformations))
		queueOpts = append(queueOpts, qcache.WithExcludedResourcePrefixes(cfg.Resources.ExcludeResourcePrefixes),
			qcache.WithResourceTransformations(cfg.Resources.Transformations))
	}
	if cfg.AdmissionFairSharing != nil {
		cacheOpts = append(cacheOpts, schdcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
		queueOpts = append(queueOpts, qcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	}
	s.cache = schdcache.New(s.cl, cacheOpts...)
	var rq requeuer
	s.queues, rq = qcache.NewManagerForUnitTestsWithRequeuer(s.cl, s.cache, queueOpts...)
	s.rq = rq
	if err := s.load(objs); err != nil {
		return nil, err
	}
	s.sched = scheduler.New(s.queues, s.cache, s.cl, nopRecorder{},
		scheduler.WithClock(nil, s.clock),
		scheduler.WithPodsReadyRequeuingTimestamp(requeuingTimestamp(cfg)),
		scheduler.WithFairSharing(cfg.FairSharing),
		scheduler.WithAdmissionFairSharing(cfg.AdmissionFairSharing),
		scheduler.WithPreemptionExpectations(expectations),
	)
	s.sched.WhatIfSynchronousAdmission(func() { s.wg.Add(1) }, func() { s.wg.Done() })
	wlOpts := append(core.WhatIfWorkloadOptions(cfg, s.clock), core.WithPreemptionExpectations(expectations))
	s.wlRec = core.NewWorkloadReconciler(s.cl, s.queues, s.cache, nopRecorder{}, wlOpts...)

	nsSelector := labels.Everything()
	if cfg.ManagedJobsNamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(cfg.ManagedJobsNamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("managedJobsNamespaceSelector: %w", err)
		}
		nsSelector = sel
	}
	frameworks := []string{"batch/job"}
	if cfg.Integrations != nil {
		frameworks = cfg.Integrations.Frameworks
	}
	jobRec, err := job.NewReconciler(ctx, s.cl, utiltesting.AsIndexer(utiltesting.NewClientBuilder()), nopRecorder{},
		jobframework.WithManageJobsWithoutQueueName(cfg.ManageJobsWithoutQueueName),
		jobframework.WithManagedJobsNamespaceSelector(nsSelector),
		jobframework.WithWaitForPodsReady(cfg.WaitForPodsReady),
		jobframework.WithEnabledFrameworks(frameworks),
		jobframework.WithCache(s.cache),
		jobframework.WithQueues(s.queues),
		jobframework.WithClock(s.clock),
	)
	if err != nil {
		return nil, err
	}
	s.jobRec = jobRec

	s.nodes = newCluster(in.Nodes)
	for i, j := range in.Jobs {
		var bj batchv1.Job
		if err := json.Unmarshal(j.Manifest, &bj); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.Index, err)
		}
		if bj.Namespace == "" {
			bj.Namespace = "default"
		}
		st := &jobState{in: j, key: types.NamespacedName{Namespace: bj.Namespace, Name: bj.Name},
			uid: uidFor("job", j.Index), template: bj.Spec.Template, count: parallelism(&bj)}
		s.jobs = append(s.jobs, st)
		s.byJob[st.key] = i
		s.byUID[st.uid] = i
		s.push(ev{at: j.SubmitAt, kind: evSubmit, idx: i})
	}
	s.stats.KueueVersion = os.Getenv("GPUQ_KUEUE_VERSION")
	return s, nil
}

func loadConfiguration(text string) (*configapi.Configuration, error) {
	f, err := os.CreateTemp("", "gpuq-whatif-config-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(text); err != nil {
		return nil, err
	}
	f.Close()
	scheme := runtime.NewScheme()
	if err := configapi.AddToScheme(scheme); err != nil {
		return nil, err
	}
	_, cfg, err := config.Load(scheme, f.Name())
	if err != nil {
		return nil, fmt.Errorf("the Kueue manager configuration: %w", err)
	}
	if err := config.LoadAndValidateFeatureGates("", cfg.FeatureGates).ToAggregate(); err != nil {
		return nil, fmt.Errorf("feature gates: %w", err)
	}
	// The in-memory client turns server-side apply into a merge patch, which cannot remove a
	// field; Kueue's merge-patch mode computes patches that do (null for a removed admission).
	// It changes how Kueue writes a Workload's status, not what it decides.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.WorkloadRequestUseMergePatch): true}); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func requeuingTimestamp(cfg *configapi.Configuration) configapi.RequeuingTimestamp {
	if cfg.WaitForPodsReady != nil && cfg.WaitForPodsReady.RequeuingStrategy != nil &&
		cfg.WaitForPodsReady.RequeuingStrategy.Timestamp != nil {
		return *cfg.WaitForPodsReady.RequeuingStrategy.Timestamp
	}
	return configapi.EvictionTimestamp
}

func parallelism(j *batchv1.Job) int {
	if j.Spec.Parallelism != nil {
		return int(*j.Spec.Parallelism)
	}
	return 1
}

// uidFor: UIDs that sort in mix order, as Kueue breaks ties by UID.
func uidFor(kind string, index int) types.UID {
	prefix := "00000000"
	if kind == "workload" {
		prefix = "00000001"
	}
	return types.UID(fmt.Sprintf("%s-0000-4000-8000-%012d", prefix, index))
}

// listOwned answers the Job reconciler's "the Workloads of this Job" from the engine's own
// record of who owns what, instead of the in-memory client's List, which serializes every
// Workload of the replay on each call (its cost would grow with the mix squared).
func (s *sim) listOwned(ctx context.Context, list *kueue.WorkloadList, opts []ctrl.ListOption) (bool, error) {
	lo := &ctrl.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.FieldSelector == nil || lo.LabelSelector != nil || lo.Namespace == "" {
		return false, nil
	}
	name, ok := lo.FieldSelector.RequiresExactMatch(jobOwnerKey)
	if !ok {
		return false, nil
	}
	list.Items = nil
	for _, key := range s.owned[types.NamespacedName{Namespace: lo.Namespace, Name: name}] {
		var wl kueue.Workload
		if err := s.base.Get(ctx, key, &wl); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return true, err
		}
		list.Items = append(list.Items, wl)
	}
	return true, nil
}

// stamp gives an object created in the replay its creation time (the simulated now) and,
// for a Workload, a UID in its Job's mix order.
func (s *sim) stamp(obj ctrl.Object) {
	obj.SetCreationTimestamp(metav1.NewTime(s.clock.Now()))
	if wl, ok := obj.(*kueue.Workload); ok {
		for _, ref := range wl.OwnerReferences {
			if ref.Kind == "Job" {
				owner := types.NamespacedName{Namespace: wl.Namespace, Name: ref.Name}
				s.owned[owner] = append(s.owned[owner], types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name})
			}
		}
		for _, ref := range wl.OwnerReferences {
			if i, ok := s.byUID[ref.UID]; ok {
				wl.SetUID(uidFor("workload", s.jobs[i].in.Index))
				return
			}
		}
		s.seq++
		wl.SetUID(types.UID(fmt.Sprintf("00000002-0000-4000-8000-%012d", s.seq)))
	}
}

// load registers the stack's objects with the cache and the queue manager, as Kueue's
// ResourceFlavor, Cohort, ClusterQueue and LocalQueue controllers do when they see them.
func (s *sim) load(objs []ctrl.Object) error {
	log := logr.Discard()
	for _, o := range objs {
		if rf, ok := o.(*kueue.ResourceFlavor); ok {
			s.cache.AddOrUpdateResourceFlavor(log, rf)
		}
	}
	for _, o := range objs {
		if c, ok := o.(*kueue.Cohort); ok {
			if err := s.cache.AddOrUpdateCohort(c); err != nil {
				return fmt.Errorf("cohort %s: %w", c.Name, err)
			}
			s.queues.AddOrUpdateCohort(s.ctx, c)
		}
	}
	// LocalQueues first: the queue manager attaches them to their ClusterQueue when it comes;
	// the cache reads them from the client with the ClusterQueue.
	for _, o := range objs {
		if lq, ok := o.(*kueue.LocalQueue); ok {
			if err := s.queues.AddLocalQueue(s.ctx, lq); err != nil {
				return fmt.Errorf("localqueue %s/%s: %w", lq.Namespace, lq.Name, err)
			}
		}
	}
	for _, o := range objs {
		if cq, ok := o.(*kueue.ClusterQueue); ok {
			if err := s.cache.AddClusterQueue(s.ctx, cq); err != nil {
				return fmt.Errorf("clusterqueue %s: %w", cq.Name, err)
			}
			if err := s.queues.AddClusterQueue(s.ctx, cq); err != nil {
				return fmt.Errorf("clusterqueue %s: %w", cq.Name, err)
			}
		}
	}
	return nil
}

func (s *sim) push(e ev) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.events, e)
}

func (s *sim) setNow(t float64) {
	s.now = t
	s.clock.SetTime(epoch.Add(time.Duration(t * float64(time.Second))))
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
		// Ends and timers first, then the submissions one by one, each after the cluster has
		// reacted to what came before it: jobs submitted at one instant arrive in mix order,
		// one after another (as kubectl applies them, and as the sandbox engine replays them).
		for s.events.Len() > 0 && s.events[0].at == at {
			e := heap.Pop(&s.events).(ev)
			s.stats.Events++
			timers = timers && e.kind == evTimer
			if e.kind == evSubmit {
				if err := s.settle(); err != nil {
					return err
				}
			}
			if err := s.apply(e); err != nil {
				return err
			}
		}
		if err := s.settle(); err != nil {
			return err
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
		if j.running && j.run == e.run && !j.finished {
			return s.complete(j)
		}
	case evTimer:
		if e.tgt.workload {
			s.wlQ.add(e.tgt.key)
		} else {
			s.jobQ.add(e.tgt.key)
		}
	}
	return nil
}

// submit creates the Job as kubectl would after Kueue's Job webhook: suspended.
func (s *sim) submit(j *jobState) error {
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

// complete: the job's time is up; its pods succeed and the Job is complete.
func (s *sim) complete(j *jobState) error {
	var bj batchv1.Job
	if err := s.base.Get(s.ctx, j.key, &bj); err != nil {
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

// stop: the job's pods are gone; their nodes are free.
func (s *sim) stop(j *jobState) {
	if !j.running {
		return
	}
	s.nodes.release(&j.spec, j.where)
	j.running, j.where = false, nil
	j.runSeconds += s.now - j.startedAt
	end := s.now
	j.intervals[len(j.intervals)-1].End = &end
	for i := range s.jobs { // freed capacity: pods that wait for nodes may fit now
		if s.waiting[i] {
			s.jobQ.add(s.jobs[i].key)
		}
	}
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
	if err := s.base.Get(s.ctx, key, &bj); err != nil {
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
	case suspended && (j.running || bj.Status.Active > 0):
		s.stop(j)
		delete(s.waiting, i)
		bj.Status.Active, bj.Status.Ready = 0, ptr(int32(0))
		return s.cl.Status().Update(s.ctx, &bj)
	case suspended:
		delete(s.waiting, i)
		j.stuck = ""
	case !j.running:
		spec := bj.Spec.Template.Spec
		where, why := s.nodes.place(&spec, j.count)
		if where == nil {
			s.waiting[i] = true
			j.stuck = why
			return nil
		}
		delete(s.waiting, i)
		j.stuck = ""
		j.running, j.where, j.spec = true, where, spec
		j.startedAt, j.run = s.now, j.run+1
		j.intervals = append(j.intervals, interval{Start: s.now})
		if j.in.Duration >= 0 {
			s.push(ev{at: s.now + j.in.Duration, kind: evFinish, idx: i, run: j.run})
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

// observe: an informer's event for one Workload, handed to the workload controller's
// event handlers (which keep the cache and the queues), then queued for reconciling along
// with its owner Job.
func (s *sim) observe(key types.NamespacedName) error {
	wl := &kueue.Workload{}
	err := s.base.Get(s.ctx, key, wl)
	old := s.seen[key]
	switch {
	case apierrors.IsNotFound(err):
		if old != nil {
			s.wlRec.Delete(event.TypedDeleteEvent[*kueue.Workload]{Object: old})
			delete(s.seen, key)
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
	s.seen[key] = wl
	s.changes++
	if trace {
		var cs []string
		for _, c := range wl.Status.Conditions {
			cs = append(cs, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
		fmt.Fprintf(os.Stderr, "  wl %s rv=%s %v\n", key.Name, wl.ResourceVersion, cs)
	}
	for _, ref := range wl.OwnerReferences {
		if i, ok := s.byUID[ref.UID]; ok {
			j := s.jobs[i]
			j.workload = &key
			s.jobQ.add(j.key)
			s.track(j, wl)
		}
	}
	return nil
}

// holding: the Workloads that hold quota now, as one string.
func (s *sim) holding() string {
	keys := make([]types.NamespacedName, 0)
	for k, wl := range s.seen {
		if workload.HasQuotaReservation(wl) && !apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
			keys = append(keys, k)
		}
	}
	m := map[types.NamespacedName]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return fmt.Sprint(sortedKeys(m))
}

// jobChanged: whether the Job differs from what the controllers last saw (an informer's
// update event); a write that changed nothing makes none.
func (s *sim) jobChanged(key types.NamespacedName) (bool, error) {
	bj := &batchv1.Job{}
	err := s.base.Get(s.ctx, key, bj)
	old := s.seenJobs[key]
	switch {
	case apierrors.IsNotFound(err):
		delete(s.seenJobs, key)
		return old != nil, nil
	case err != nil:
		return false, err
	case old != nil && (old.ResourceVersion == bj.ResourceVersion || sameButVersion(old, bj)):
		return false, nil
	}
	s.seenJobs[key] = bj
	s.changes++
	return true, nil
}

// sameButVersion: equal but for the resourceVersion (and managed fields).
func sameButVersion[T ctrl.Object](a, b T) bool {
	a2, b2 := a.DeepCopyObject().(T), b.DeepCopyObject().(T)
	for _, o := range []T{a2, b2} {
		o.SetResourceVersion("")
		o.SetManagedFields(nil)
	}
	return equality.Semantic.DeepEqual(a2, b2)
}

// track: what the workload's change means for the report (first admission, evictions).
func (s *sim) track(j *jobState, wl *kueue.Workload) {
	holds := workload.HasQuotaReservation(wl) && !apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)
	if holds && j.admittedAt == nil {
		at := s.now
		j.admittedAt = &at
	}
	if j.hadQuota && !holds && !apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		var conds []metav1.Condition
		for _, t := range []string{kueue.WorkloadEvicted, kueue.WorkloadPreempted} {
			if c := apimeta.FindStatusCondition(wl.Status.Conditions, t); c != nil {
				conds = append(conds, *c)
			}
		}
		j.evictions = append(j.evictions, conds)
	}
	j.hadQuota = holds
}

func (s *sim) reconcile(r reconcile.Reconciler, key types.NamespacedName, isWorkload bool) error {
	s.stats.Reconciles++
	res, err := r.Reconcile(s.ctx, reconcile.Request{NamespacedName: key})
	if err != nil {
		// A controller's error is retried, as controller-runtime would, at the next step.
		res.RequeueAfter = time.Second
	}
	if res.RequeueAfter > 0 {
		s.push(ev{at: s.now + res.RequeueAfter.Seconds(), kind: evTimer, tgt: target{workload: isWorkload, key: key}})
	}
	return nil
}

// settle runs everything the current instant sets off until nothing is left to do.
func (s *sim) settle() error {
	limit := maxSteps + 100*len(s.jobs)
	holders := map[string]int{} // who holds quota, sampled as the instant goes on
	if v, err := strconv.Atoi(os.Getenv("GPUQ_WHATIF_MAX_STEPS")); err == nil {
		limit = v
	}
	for step := 0; step < limit; step++ {
		wls, jobs := s.dirty.take()
		for _, k := range wls {
			if err := s.observe(k); err != nil {
				return err
			}
		}
		for _, k := range jobs {
			changed, err := s.jobChanged(k)
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
		wq, jq := s.wlQ.drain(), s.jobQ.drain()
		for _, k := range wq {
			if err := s.reconcile(s.wlRec, k, true); err != nil {
				return err
			}
		}
		for _, k := range jq {
			if err := s.reconcile(s.jobRec, k, false); err != nil {
				return err
			}
		}
		if step >= churnAfter && step%churnEvery == 0 {
			held := s.holding()
			if first, again := holders[held]; again {
				s.stats.Churn = append(s.stats.Churn, Churn{At: s.now, Steps: step, Period: step - first})
				return nil // a preemption loop: the same holders come back; see Churn
			}
			holders[held] = step
		}
		if trace && step < 200 {
			fmt.Fprintf(os.Stderr, "t=%v step=%d wls=%v jobs=%v wq=%v jq=%v\n", s.now, step, wls, jobs, wq, jq)
		}
		if len(wls)+len(jobs)+len(wq)+len(jq) > 0 {
			continue
		}
		// Scheduling cycles first, the inadmissible workloads' requeue after: Kueue batches
		// that requeue by a second (1 s; 10 s with SchedulerLongRequeueInterval), in which
		// time its scheduler runs every cycle the heads it has allow.
		if s.queues.WhatIfHasHeads() {
			before := s.queues.WhatIfQueueState()
			s.stats.Cycles++
			s.sched.WhatIfCycle(s.ctx)
			s.wg.Wait()
			if !s.dirty.empty() || s.wlQ.len()+s.jobQ.len() > 0 || s.queues.WhatIfQueueState() != before {
				continue
			}
			// A fixed point: the cycle changed nothing (a StrictFIFO head that does not fit
			// is put back at once and tried again and again).
		}
		if s.rq.ProcessRequeues(s.ctx) > 0 {
			continue
		}
		return nil
	}
	return fmt.Errorf("the replay did not come to rest at %.0fs after %d steps", s.now, limit)
}

func (s *sim) results() []Result {
	out := make([]Result, 0, len(s.jobs))
	for _, j := range s.jobs {
		r := Result{Type: "workload", Index: j.in.Index, AdmittedAt: j.admittedAt, RunSeconds: j.runSeconds,
			Intervals: j.intervals, Evictions: j.evictions, AllRunning: j.running, Stuck: j.stuck, Problem: j.problem}
		if r.Intervals == nil {
			r.Intervals = []interval{}
		}
		if r.Evictions == nil {
			r.Evictions = [][]metav1.Condition{}
		}
		if j.workload != nil {
			wl := &kueue.Workload{}
			if err := s.base.Get(s.ctx, *j.workload, wl); err == nil {
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
