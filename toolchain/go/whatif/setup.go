package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/config"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	deploymentjob "sigs.k8s.io/kueue/pkg/controller/jobs/deployment"
	"sigs.k8s.io/kueue/pkg/controller/jobs/job"
	"sigs.k8s.io/kueue/pkg/controller/jobs/leaderworkerset"
	"sigs.k8s.io/kueue/pkg/controller/jobs/pod"
	"sigs.k8s.io/kueue/pkg/controller/jobs/statefulset"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/metrics"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	utilexpectations "sigs.k8s.io/kueue/pkg/util/expectations"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/util/waitforpodsready"
)

// Building the in-process Kueue for a replay: the cache, queues, scheduler and controllers,
// configured as Kueue's manager configures them, on the engine's client (client.go).

type nopRecorder struct{}

func (nopRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...interface{}) {
}

func newSim(in *Input) (*sim, error) {
	s := &sim{
		ctx:      ctrllog.IntoContext(context.Background(), ctrllog.Log),
		clock:    testingclock.NewFakeClock(epoch),
		byJob:    map[types.NamespacedName]int{},
		byPod:    map[types.NamespacedName]int{},
		sts:      statefulSets{by: map[types.NamespacedName]int{}, seen: map[types.NamespacedName]ctrl.Object{}},
		lwss:     leaderWorkerSets{seen: map[types.NamespacedName]ctrl.Object{}},
		byUID:    map[types.UID]int{},
		seen:     map[types.NamespacedName]*kueue.Workload{},
		holders:  map[types.NamespacedName]bool{},
		seenJobs: map[types.NamespacedName]ctrl.Object{},
		seenPods: map[types.NamespacedName]ctrl.Object{},
		families: newFamilies(),
		owned:    map[owner][]types.NamespacedName{},
		until:    in.Until,
		waiting:  map[int]bool{},
		retry:    map[int]bool{},
		toPlace:  map[int]bool{},
		stopping: map[int]bool{},
		dying:    map[types.NamespacedName]bool{},
		heldAs:   map[types.NamespacedName]string{},
		services: services{},
	}
	s.dirty.reset()
	cfg, err := loadConfiguration(in.Configuration)
	if err != nil {
		return nil, err
	}
	objs, err := s.newClient(in)
	if err != nil {
		return nil, err
	}
	if err := s.newKueue(cfg, objs); err != nil {
		return nil, err
	}
	s.newLocalQueueController(cfg)
	if err := s.startLocalQueues(); err != nil {
		return nil, err
	}
	if err := s.newJobControllers(cfg); err != nil {
		return nil, err
	}
	s.requeuePeriod = time.Second
	if features.Enabled(features.SchedulerLongRequeueInterval) {
		s.requeuePeriod = 10 * time.Second
	}
	s.nodes = newCluster(in.Nodes)
	s.workloadUIDs = in.WorkloadUIDs
	s.placement = map[int][]int{}
	for rank, index := range in.PlacementOrder {
		s.placement[index] = append(s.placement[index], rank)
	}
	s.loadTAS(objs, in.Nodes)
	s.settleNodes(in.Pods)
	if err := s.addJobs(in.Jobs); err != nil {
		return nil, err
	}
	if err := s.addChanges(in.Changes); err != nil {
		return nil, err
	}
	s.stats.KueueVersion = os.Getenv("GPUQ_KUEUE_VERSION")
	return s, nil
}

// newKueue: Kueue's scheduler cache, queue manager, scheduler and workload controller, with
// the stack's objects loaded.
func (s *sim) newKueue(cfg *configapi.Configuration, objs []ctrl.Object) error {
	expectations := preemptexpectations.New()
	// Kueue's LocalQueue metrics only feed Prometheus, which the engine does not serve; they
	// are off, as a Configuration with metrics.localQueueMetrics.enable false has them. On
	// they cost a walk over the ClusterQueue's pending workloads at every requeue: an eighth
	// of a 5,000-workload replay.
	noLQMetrics := &metrics.LocalQueueMetricsConfig{Enabled: false}
	s.cache = schdcache.New(s.cl, cacheOptions(cfg, noLQMetrics)...)
	var rq requeuer
	s.queues, rq = qcache.NewManagerForUnitTestsWithRequeuer(s.cl, s.cache, queueOptions(cfg, noLQMetrics, s.clock, expectations)...)
	s.rq = rq
	if err := s.load(objs); err != nil {
		return err
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
	if afsEnabled(cfg) {
		wlOpts = append(wlOpts, core.WithWorkloadUpdateWatchers(lqWatcher{s}))
	}
	s.wlRec = core.NewWorkloadReconciler(s.cl, s.queues, s.cache, nopRecorder{}, wlOpts...)
	return nil
}

// cacheOptions: the scheduler cache's options, as Kueue's manager sets them from cfg.
func cacheOptions(cfg *configapi.Configuration, lqMetrics *metrics.LocalQueueMetricsConfig) []schdcache.Option {
	opts := []schdcache.Option{
		schdcache.WithPodsReadyTracking(waitforpodsready.Enabled(cfg.WaitForPodsReady) &&
			cfg.WaitForPodsReady.BlockAdmission != nil && *cfg.WaitForPodsReady.BlockAdmission),
		schdcache.WithFairSharing(cfg.FairSharing != nil),
		schdcache.WithLocalQueueMetrics(lqMetrics),
	}
	if cfg.Resources != nil {
		opts = append(opts, schdcache.WithExcludedResourcePrefixes(cfg.Resources.ExcludeResourcePrefixes),
			schdcache.WithResourceTransformations(cfg.Resources.Transformations))
	}
	if cfg.AdmissionFairSharing != nil {
		opts = append(opts, schdcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	}
	return opts
}

// queueOptions: the queue manager's options, as Kueue's manager sets them from cfg, on the
// simulated clock.
func queueOptions(cfg *configapi.Configuration, lqMetrics *metrics.LocalQueueMetricsConfig, clock *testingclock.FakeClock,
	expectations *utilexpectations.Store) []qcache.Option {
	opts := []qcache.Option{
		qcache.WithLocalQueueMetrics(lqMetrics),
		qcache.WithClock(clock),
		qcache.WithPodsReadyRequeuingTimestamp(requeuingTimestamp(cfg)),
		qcache.WithPreemptionExpectations(expectations),
	}
	if cfg.Resources != nil {
		opts = append(opts, qcache.WithExcludedResourcePrefixes(cfg.Resources.ExcludeResourcePrefixes),
			qcache.WithResourceTransformations(cfg.Resources.Transformations))
	}
	if cfg.AdmissionFairSharing != nil {
		opts = append(opts, qcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	}
	return opts
}

// newJobControllers: Kueue's batch/v1 Job and Pod reconcilers, each family's (kinds.go), and its
// Pod webhooks, for the
// integrations cfg enables, as its manager sets them up.
func (s *sim) newJobControllers(cfg *configapi.Configuration) error {
	nsSelector := labels.Everything()
	if cfg.ManagedJobsNamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(cfg.ManagedJobsNamespaceSelector)
		if err != nil {
			return fmt.Errorf("managedJobsNamespaceSelector: %w", err)
		}
		nsSelector = sel
	}
	frameworks := []string{"batch/job"}
	if cfg.Integrations != nil {
		frameworks = cfg.Integrations.Frameworks
	}
	opts := []jobframework.Option{
		jobframework.WithManageJobsWithoutQueueName(cfg.ManageJobsWithoutQueueName),
		jobframework.WithManagedJobsNamespaceSelector(nsSelector),
		jobframework.WithWaitForPodsReady(cfg.WaitForPodsReady),
		jobframework.WithEnabledFrameworks(frameworks),
		jobframework.WithCache(s.cache),
		jobframework.WithQueues(s.queues),
		jobframework.WithClock(s.clock),
	}
	var err error
	if s.jobRec, err = job.NewReconciler(s.ctx, s.cl, utiltesting.AsIndexer(utiltesting.NewClientBuilder()), nopRecorder{}, opts...); err != nil {
		return err
	}
	if s.podRec, err = pod.NewReconciler(s.ctx, s.cl, utiltesting.AsIndexer(utiltesting.NewClientBuilder()), nopRecorder{}, opts...); err != nil {
		return err
	}
	for _, f := range s.families {
		if f.rec, err = f.newReconciler(s.ctx, s.cl, utiltesting.AsIndexer(utiltesting.NewClientBuilder()), opts...); err != nil {
			return fmt.Errorf("%s reconciler: %w", f.kind(), err)
		}
	}
	s.admitPod = func(ctx context.Context, p *corev1.Pod) error {
		return pod.WhatIfAdmit(ctx, s.cl, s.queues, cfg.ManageJobsWithoutQueueName, nsSelector, p)
	}
	if s.sts.rec, err = statefulset.NewReconciler(s.ctx, s.cl, nil, nopRecorder{}, opts...); err != nil {
		return err
	}
	if s.sts.podRec, err = statefulset.NewPodReconciler(s.ctx, s.cl, nil, nopRecorder{}, opts...); err != nil {
		return err
	}
	if s.lwss.rec, err = leaderworkerset.NewReconciler(s.ctx, s.cl, nil, nopRecorder{}, opts...); err != nil {
		return err
	}
	s.lwss.admit = func(ctx context.Context, l *lwsv1.LeaderWorkerSet) error {
		return leaderworkerset.WhatIfAdmit(ctx, s.cl, s.queues, cfg.ManageJobsWithoutQueueName, nsSelector, l)
	}
	s.deploys.admit = func(ctx context.Context, d *appsv1.Deployment) error {
		return deploymentjob.WhatIfAdmit(ctx, s.cl, s.queues, cfg.ManageJobsWithoutQueueName, nsSelector, d)
	}
	s.sts.admit = func(ctx context.Context, sts *appsv1.StatefulSet) error {
		return statefulset.WhatIfAdmit(ctx, s.cl, s.queues, cfg.ManageJobsWithoutQueueName, nsSelector, sts)
	}
	return nil
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
	freezeGates()
	return &cfg, nil
}

func requeuingTimestamp(cfg *configapi.Configuration) configapi.RequeuingTimestamp {
	if cfg.WaitForPodsReady != nil && cfg.WaitForPodsReady.RequeuingStrategy != nil &&
		cfg.WaitForPodsReady.RequeuingStrategy.Timestamp != nil {
		return *cfg.WaitForPodsReady.RequeuingStrategy.Timestamp
	}
	return configapi.EvictionTimestamp
}

// load registers the stack's objects with the cache and the queue manager, as Kueue's
// Topology, ResourceFlavor, Cohort, ClusterQueue and LocalQueue controllers do when they see
// them.
func (s *sim) load(objs []ctrl.Object) error {
	log := logr.Discard()
	for _, o := range objs {
		if t, ok := o.(*kueue.Topology); ok { // as Kueue's TAS Topology controller does (tas.go)
			s.cache.AddOrUpdateTopology(log, t)
		}
	}
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
	s.loading = stackQueues(objs)
	defer func() { s.loading = nil }()
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

// stackQueues: the stack's LocalQueues by the ClusterQueue they name, each list in the order the
// in-memory client lists objects (namespace, then name).
func stackQueues(objs []ctrl.Object) map[string][]types.NamespacedName {
	byCQ := map[string][]types.NamespacedName{}
	for _, o := range objs {
		if lq, ok := o.(*kueue.LocalQueue); ok {
			cq := string(lq.Spec.ClusterQueue)
			byCQ[cq] = append(byCQ[cq], types.NamespacedName{Namespace: lq.Namespace, Name: lq.Name})
		}
	}
	for _, keys := range byCQ {
		slices.SortFunc(keys, byKey)
	}
	return byCQ
}

// byKey orders keys by namespace, then name.
func byKey(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// loadingQueues answers, while load runs, the one List Kueue's cache and queue manager each
// make when a ClusterQueue is added ("the LocalQueues whose spec.clusterQueue is this one"),
// from stackQueues, with the LocalQueues as stored: the in-memory client's List decodes every
// stored LocalQueue from JSON and sorts them on each call, so a stack of 1,000 ClusterQueues
// and as many LocalQueues decoded two million (a fifth of the set-up of Kueue's large-scale
// configuration). Only while load runs: then the client holds the stack's LocalQueues as given,
// and no change of the stack has moved one (changes.go).
func (s *sim) loadingQueues(ctx context.Context, list *kueue.LocalQueueList, opts []ctrl.ListOption) (bool, error) {
	lo := &ctrl.ListOptions{}
	lo.ApplyOptions(opts)
	if s.loading == nil || lo.FieldSelector == nil || lo.LabelSelector != nil || lo.Namespace != "" || lo.Limit != 0 {
		return false, nil
	}
	cq, ok := lo.FieldSelector.RequiresExactMatch(indexer.QueueClusterQueueKey)
	if !ok || len(lo.FieldSelector.Requirements()) != 1 {
		return false, nil
	}
	list.Items = nil
	for _, key := range s.loading[cq] {
		var lq kueue.LocalQueue
		if err := s.reads.get(ctx, s.base, key, &lq); err != nil {
			return true, err
		}
		list.Items = append(list.Items, lq)
	}
	return true, nil
}
