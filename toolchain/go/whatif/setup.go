package main

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/config"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/job"
	"sigs.k8s.io/kueue/pkg/controller/jobs/pod"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/metrics"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/util/waitforpodsready"
)

// Building the in-process Kueue for a replay: the client, cache, queues, scheduler and
// controllers, configured as Kueue's manager configures them.

// jobOwnerKey, podOwnerKey: the field indexes the Job and Pod reconcilers find their
// Workloads by.
var (
	jobOwnerKey = jobframework.OwnerReferenceIndexKey(batchv1.SchemeGroupVersion.WithKind("Job"))
	podOwnerKey = jobframework.OwnerReferenceIndexKey(corev1.SchemeGroupVersion.WithKind("Pod"))
)

// owner: a Job or a Pod of the mix, by kind and name.
type owner struct {
	kind string
	types.NamespacedName
}

type nopRecorder struct{}

func (nopRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...interface{}) {
}

func newSim(in *Input) (*sim, error) {
	ctx := ctrllog.IntoContext(context.Background(), ctrllog.Log)
	s := &sim{
		ctx:      ctx,
		clock:    testingclock.NewFakeClock(epoch),
		byJob:    map[types.NamespacedName]int{},
		byPod:    map[types.NamespacedName]int{},
		byUID:    map[types.UID]int{},
		seen:     map[types.NamespacedName]*kueue.Workload{},
		seenJobs: map[types.NamespacedName]ctrl.Object{},
		seenPods: map[types.NamespacedName]ctrl.Object{},
		owned:    map[owner][]types.NamespacedName{},
		until:    in.Until,
		waiting:  map[int]bool{},
		retry:    map[int]bool{},
	}
	s.dirty.reset()

	cfg, err := loadConfiguration(in.Configuration)
	if err != nil {
		return nil, err
	}

	// Kueue's test client (its scheme and indexes), on a plain object tracker: the default,
	// field-managed one rebuilds a REST mapper on every patch, most of a replay's time.
	scheme := utiltesting.NewClientBuilder().Build().Scheme() // the same scheme, from a builder of its own
	s.tracker = clienttesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())
	withStatus := []ctrl.Object{&kueue.Workload{}, &batchv1.Job{}, &corev1.Pod{}, &kueue.ClusterQueue{}, &kueue.LocalQueue{}, &kueue.Cohort{}}
	s.statusTypes = map[schema.GroupVersionKind]bool{}
	for _, o := range withStatus {
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			return nil, err
		}
		s.statusTypes[gvk] = true
	}
	builder := utiltesting.NewClientBuilder().
		WithObjectTracker(s.tracker).
		WithStatusSubresource(withStatus...).
		WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerOrPodType, indexer.IndexLimitRangeHasContainerOrPodType)
	if err := job.SetupIndexes(ctx, utiltesting.AsIndexer(builder)); err != nil {
		return nil, fmt.Errorf("job indexes: %w", err)
	}
	if err := pod.SetupIndexes(ctx, utiltesting.AsIndexer(builder)); err != nil {
		return nil, fmt.Errorf("pod indexes: %w", err)
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
	s.reads = newReads()
	s.cl = interceptor.NewClient(s.base, interceptor.Funcs{
		Get: func(ctx context.Context, c ctrl.WithWatch, key ctrl.ObjectKey, obj ctrl.Object, opts ...ctrl.GetOption) error {
			return s.reads.get(ctx, c, key, obj, opts...)
		},
		Create: func(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.CreateOption) error {
			s.simulatedTimes(obj)
			s.stamp(obj)
			if err := s.defaults.apply(s.scheme, obj); err != nil {
				return err
			}
			err := s.reads.write(obj, func() error { return c.Create(ctx, obj, opts...) })
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
			s.simulatedTimes(obj)
			err := s.reads.write(obj, func() error { return c.Update(ctx, obj, opts...) })
			s.dirty.mark(obj)
			return err
		},
		Patch: func(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, patch ctrl.Patch, opts ...ctrl.PatchOption) error {
			s.simulatedTimes(obj)
			po := &ctrl.PatchOptions{}
			po.ApplyOptions(opts)
			plain := len(po.DryRun) == 0 && po.Force == nil
			err := s.reads.patch(obj, func() error { return s.fastPatch(ctx, obj, patch, false, plain) },
				func() error { return c.Patch(ctx, obj, patch, opts...) })
			s.dirty.mark(obj)
			return err
		},
		Delete: func(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.DeleteOption) error {
			err := s.reads.write(obj, func() error { return c.Delete(ctx, obj, opts...) })
			s.dirty.mark(obj)
			return err
		},
		SubResourceUpdate: func(ctx context.Context, c ctrl.Client, sub string, obj ctrl.Object, opts ...ctrl.SubResourceUpdateOption) error {
			s.simulatedTimes(obj)
			err := s.reads.write(obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
			s.dirty.mark(obj)
			return err
		},
		SubResourcePatch: func(ctx context.Context, c ctrl.Client, sub string, obj ctrl.Object, patch ctrl.Patch, opts ...ctrl.SubResourcePatchOption) error {
			s.simulatedTimes(obj)
			po := &ctrl.SubResourcePatchOptions{}
			po.ApplyOptions(opts)
			plain := sub == "status" && po.SubResourceBody == nil && len(po.DryRun) == 0 && (po.Force == nil || patch.Type() == types.ApplyPatchType)
			err := s.reads.patch(obj, func() error { return s.fastPatch(ctx, obj, patch, true, plain) },
				func() error { return utiltesting.TreatSSAAsStrategicMerge(ctx, c, sub, obj, patch, opts...) })
			s.dirty.mark(obj)
			return err
		},
		// Kueue's pod reconciler marks a pod it stops with a condition by server-side apply;
		// the in-memory client has no field manager, so the apply is a strategic merge of the
		// applied fields (a pod's conditions merge by type), as Kueue's unit tests treat it.
		SubResourceApply: func(ctx context.Context, c ctrl.Client, sub string, ac runtime.ApplyConfiguration, opts ...ctrl.SubResourceApplyOption) error {
			data, err := json.Marshal(ac)
			if err != nil {
				return err
			}
			var meta struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(data, &meta); err != nil {
				return err
			}
			if meta.Kind != "Pod" || sub != "status" {
				return fmt.Errorf("the engine applies only a Pod's status, not %s/%s", meta.Kind, sub)
			}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: meta.Metadata.Name, Namespace: meta.Metadata.Namespace}}
			err = s.reads.write(p, func() error {
				return c.SubResource(sub).Patch(ctx, p, ctrl.RawPatch(types.StrategicMergePatchType, data))
			})
			s.dirty.mark(p)
			return err
		},
	})

	expectations := preemptexpectations.New()
	// Kueue's LocalQueue metrics only feed Prometheus, which the engine does not serve; they
	// are off, as a Configuration with metrics.localQueueMetrics.enable false has them. On
	// they cost a walk over the ClusterQueue's pending workloads at every requeue: an eighth
	// of a 5,000-workload replay.
	noLQMetrics := &metrics.LocalQueueMetricsConfig{Enabled: false}
	cacheOpts := []schdcache.Option{
		schdcache.WithPodsReadyTracking(waitforpodsready.Enabled(cfg.WaitForPodsReady) &&
			cfg.WaitForPodsReady.BlockAdmission != nil && *cfg.WaitForPodsReady.BlockAdmission),
		schdcache.WithFairSharing(cfg.FairSharing != nil),
		schdcache.WithLocalQueueMetrics(noLQMetrics),
	}
	queueOpts := []qcache.Option{
		qcache.WithLocalQueueMetrics(noLQMetrics),
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
	podRec, err := pod.NewReconciler(ctx, s.cl, utiltesting.AsIndexer(utiltesting.NewClientBuilder()), nopRecorder{},
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
	s.podRec = podRec
	s.admitPod = func(ctx context.Context, p *corev1.Pod) error {
		return pod.WhatIfAdmit(ctx, s.cl, s.queues, cfg.ManageJobsWithoutQueueName, nsSelector, p)
	}

	s.nodes = newCluster(in.Nodes)
	s.nodes.settle(in.Pods)
	for i, j := range in.Jobs {
		st := &jobState{in: j, uid: uidFor("job", j.Index), pod: j.Kind == "Pod"}
		if st.pod {
			var p corev1.Pod
			if err := json.Unmarshal(j.Manifest, &p); err != nil {
				return nil, fmt.Errorf("pod %d: %w", j.Index, err)
			}
			if p.Namespace == "" {
				p.Namespace = "default"
			}
			st.key = types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
			st.template, st.count = corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}, 1
			s.byPod[st.key] = i
		} else {
			var bj batchv1.Job
			if err := json.Unmarshal(j.Manifest, &bj); err != nil {
				return nil, fmt.Errorf("job %d: %w", j.Index, err)
			}
			if bj.Namespace == "" {
				bj.Namespace = "default"
			}
			st.key = types.NamespacedName{Namespace: bj.Namespace, Name: bj.Name}
			st.template, st.count = bj.Spec.Template, parallelism(&bj)
			s.byJob[st.key] = i
		}
		s.jobs = append(s.jobs, st)
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
	features.WhatIfFreezeGates()
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
	kind := "Job"
	name, ok := lo.FieldSelector.RequiresExactMatch(jobOwnerKey)
	if !ok {
		kind = "Pod"
		if name, ok = lo.FieldSelector.RequiresExactMatch(podOwnerKey); !ok {
			return false, nil
		}
	}
	list.Items = nil
	for _, key := range s.owned[owner{kind, types.NamespacedName{Namespace: lo.Namespace, Name: name}}] {
		var wl kueue.Workload
		if err := s.reads.get(ctx, s.base, key, &wl); err != nil {
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
// simulatedTimes: a Workload condition whose lastTransitionTime is later than the simulated
// now got it from the wall clock (Kueue's SetRequeuedCondition leaves the time to
// apimeta.SetStatusCondition, which takes metav1.Now()); on a cluster that is the cluster's
// now, so here it is the simulated one: on every object written, and on the result of a
// patch (its bytes were made before the write reached the engine).
func (s *sim) simulatedTimes(obj ctrl.Object) {
	wl, ok := obj.(*kueue.Workload)
	if !ok {
		return
	}
	now := s.clock.Now()
	for i := range wl.Status.Conditions {
		if c := &wl.Status.Conditions[i]; c.LastTransitionTime.After(now) {
			c.LastTransitionTime = metav1.NewTime(now)
		}
	}
}

func (s *sim) stamp(obj ctrl.Object) {
	obj.SetCreationTimestamp(metav1.NewTime(s.clock.Now()))
	if wl, ok := obj.(*kueue.Workload); ok {
		for _, ref := range wl.OwnerReferences {
			if ref.Kind == "Job" || ref.Kind == "Pod" {
				o := owner{ref.Kind, types.NamespacedName{Namespace: wl.Namespace, Name: ref.Name}}
				s.owned[o] = append(s.owned[o], types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name})
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

// get: a read of the in-memory client through the engine's read cache.
func (s *sim) get(key types.NamespacedName, obj ctrl.Object) error {
	return s.reads.get(s.ctx, s.base, key, obj)
}
