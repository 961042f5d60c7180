package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/job"
	"sigs.k8s.io/kueue/pkg/controller/jobs/pod"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
)

// The engine's API server: controller-runtime's in-memory client holding the stack's objects,
// and the interceptors every controller's write and read pass through: the simulated clock's
// times, the informers' view of what changed (dirty), the read cache and patch path
// (reads.go, patch.go), and the owners' index of Workloads.

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

// newClient: the client, holding the stack's objects (in.Objects, with their CRDs' defaults),
// which it returns.
func (s *sim) newClient(in *Input) ([]ctrl.Object, error) {
	builder, err := s.clientBuilder()
	if err != nil {
		return nil, err
	}
	objs, err := decodeObjects(s.scheme, in.Objects)
	if err != nil {
		return nil, err
	}
	runtimes, err := s.runtimeObjects(in.Runtimes)
	if err != nil {
		return nil, err
	}
	objs = append(objs, runtimes...)
	if s.defaults, err = loadCRDDefaults(in.CRDs); err != nil {
		return nil, err
	}
	for _, o := range objs {
		if err := s.defaults.apply(s.scheme, o); err != nil {
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
	s.cl = interceptor.NewClient(s.base, s.interceptors())
	s.lendClient()
	return objs, nil
}

// clientBuilder: Kueue's test client (its scheme and indexes), on a plain object tracker: the
// default, field-managed one rebuilds a REST mapper on every patch, most of a replay's time.
func (s *sim) clientBuilder() (*fake.ClientBuilder, error) {
	// Kueue's test scheme with each family's API (JobSet, Kubeflow's, ...), as Kueue's manager
	// adds each integration's (jobframework's AddToScheme callbacks); the same scheme, from a
	// builder of its own.
	addToScheme := []func(*runtime.Scheme) error{lwsv1.AddToScheme}
	withStatus := []ctrl.Object{&kueue.Workload{}, &batchv1.Job{}, &corev1.Pod{}, &kueue.ClusterQueue{}, &kueue.LocalQueue{}, &kueue.Cohort{},
		&lwsv1.LeaderWorkerSet{}}
	for _, f := range s.families {
		addToScheme = append(addToScheme, f.addToScheme)
		withStatus = append(withStatus, f.empty())
	}
	s.scheme = utiltesting.NewClientBuilder(addToScheme...).Build().Scheme()
	s.tracker = clienttesting.NewObjectTracker(s.scheme, serializer.NewCodecFactory(s.scheme).UniversalDecoder())
	s.statusTypes = map[schema.GroupVersionKind]bool{}
	for _, o := range withStatus {
		gvk, err := apiutil.GVKForObject(o, s.scheme)
		if err != nil {
			return nil, err
		}
		s.statusTypes[gvk] = true
	}
	builder := utiltesting.NewClientBuilder(addToScheme...).
		WithObjectTracker(s.tracker).
		WithStatusSubresource(withStatus...).
		WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerOrPodType, indexer.IndexLimitRangeHasContainerOrPodType)
	if err := job.SetupIndexes(s.ctx, utiltesting.AsIndexer(builder)); err != nil {
		return nil, fmt.Errorf("job indexes: %w", err)
	}
	if err := pod.SetupIndexes(s.ctx, utiltesting.AsIndexer(builder)); err != nil {
		return nil, fmt.Errorf("pod indexes: %w", err)
	}
	for _, f := range s.families {
		if err := f.setupIndexes(s.ctx, utiltesting.AsIndexer(builder)); err != nil {
			return nil, fmt.Errorf("%s indexes: %w", f.kind(), err)
		}
	}
	return builder, nil
}

func (s *sim) interceptors() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c ctrl.WithWatch, key ctrl.ObjectKey, obj ctrl.Object, opts ...ctrl.GetOption) error {
			return s.reads.get(ctx, c, key, obj, opts...)
		},
		Create:            s.onCreate,
		List:              s.onList,
		Update:            s.onUpdate,
		Patch:             s.onPatch,
		Delete:            s.onDelete,
		SubResourceUpdate: s.onSubResourceUpdate,
		SubResourcePatch:  s.onSubResourcePatch,
		SubResourceApply:  s.onSubResourceApply,
	}
}

func (s *sim) onCreate(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.CreateOption) error {
	// A dry run (Kueue's TrainJob PodSets makes one of a throwaway Workload for its
	// defaults) gets the API server's defaults and nothing else: no object, no owner's entry.
	if slices.Contains((&ctrl.CreateOptions{}).ApplyOptions(opts).DryRun, metav1.DryRunAll) {
		return s.defaults.apply(s.scheme, obj)
	}
	s.simulatedTimes(obj)
	s.stamp(obj)
	if err := s.defaults.apply(s.scheme, obj); err != nil {
		return err
	}
	err := s.reads.write(obj, func() error { return c.Create(ctx, obj, opts...) })
	s.dirty.mark(obj)
	return err
}

func (s *sim) onList(ctx context.Context, c ctrl.WithWatch, list ctrl.ObjectList, opts ...ctrl.ListOption) error {
	if wls, ok := list.(*kueue.WorkloadList); ok {
		if done, err := s.listOwned(ctx, wls, opts); done {
			return err
		}
	}
	if lqs, ok := list.(*kueue.LocalQueueList); ok {
		if done, err := s.loadingQueues(ctx, lqs, opts); done {
			return err
		}
	}
	return c.List(ctx, list, opts...)
}

func (s *sim) onUpdate(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.UpdateOption) error {
	s.simulatedTimes(obj)
	uo := &ctrl.UpdateOptions{}
	uo.ApplyOptions(opts)
	err := s.reads.patch(obj, func() error { return s.fastUpdate(ctx, obj, len(uo.DryRun) == 0) },
		func() error { return c.Update(ctx, obj, opts...) })
	s.dirty.mark(obj)
	return err
}

func (s *sim) onPatch(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, patch ctrl.Patch, opts ...ctrl.PatchOption) error {
	s.simulatedTimes(obj)
	po := &ctrl.PatchOptions{}
	po.ApplyOptions(opts)
	plain := len(po.DryRun) == 0 && po.Force == nil
	err := s.reads.patch(obj, func() error { return s.fastPatch(ctx, obj, patch, false, plain) },
		func() error { return c.Patch(ctx, obj, patch, opts...) })
	s.dirty.mark(obj)
	return err
}

func (s *sim) onDelete(ctx context.Context, c ctrl.WithWatch, obj ctrl.Object, opts ...ctrl.DeleteOption) error {
	err := s.reads.write(obj, func() error {
		gvk, err := apiutil.GVKForObject(obj, s.scheme)
		if err != nil {
			return c.Delete(ctx, obj, opts...) // the client's own error
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		since := s.deletingSince(gvr, obj)
		if err := c.Delete(ctx, obj, opts...); err != nil {
			return err
		}
		return s.simulatedDeletion(gvr, obj, since)
	})
	s.dirty.mark(obj)
	return err
}

// deletingSince: when the stored object's deletion began (nil: it is not being deleted, or
// not stored).
func (s *sim) deletingSince(gvr schema.GroupVersionResource, obj ctrl.Object) *metav1.Time {
	stored, err := s.tracker.Get(gvr, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return nil
	}
	m, err := meta.Accessor(stored)
	if err != nil {
		return nil
	}
	return m.GetDeletionTimestamp()
}

// simulatedDeletion: an object a delete left waiting on its finalizers (a deleted replica's
// Workload, Kueue's resource-in-use finalizer on it) got its deletionTimestamp from the wall
// clock: the in-memory client's Delete takes metav1.Now(), and takes it again on each delete
// of an object already being deleted. On a cluster it is the API server's now at the first
// delete, kept after; here the simulated now, or the time of the first delete (since). It is
// written to the tracker as it stands, in the same write: the resourceVersion the client's
// delete gave it stays.
func (s *sim) simulatedDeletion(gvr schema.GroupVersionResource, obj ctrl.Object, since *metav1.Time) error {
	stored, err := s.tracker.Get(gvr, obj.GetNamespace(), obj.GetName())
	if apierrors.IsNotFound(err) {
		return nil // no finalizer held it: gone
	}
	if err != nil {
		return err
	}
	m, err := meta.Accessor(stored)
	if err != nil || m.GetDeletionTimestamp() == nil {
		return err
	}
	if since == nil {
		now := metav1.NewTime(s.clock.Now())
		since = &now
	}
	m.SetDeletionTimestamp(since)
	return s.tracker.Update(gvr, stored, obj.GetNamespace())
}

func (s *sim) onSubResourceUpdate(ctx context.Context, c ctrl.Client, sub string, obj ctrl.Object, opts ...ctrl.SubResourceUpdateOption) error {
	s.simulatedTimes(obj)
	uo := &ctrl.SubResourceUpdateOptions{}
	uo.ApplyOptions(opts)
	plain := sub == "status" && uo.SubResourceBody == nil && len(uo.DryRun) == 0
	err := s.reads.patch(obj, func() error { return s.fastStatusUpdate(ctx, obj, plain) },
		func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
	s.dirty.mark(obj)
	return err
}

func (s *sim) onSubResourcePatch(ctx context.Context, c ctrl.Client, sub string, obj ctrl.Object, patch ctrl.Patch, opts ...ctrl.SubResourcePatchOption) error {
	s.simulatedTimes(obj)
	po := &ctrl.SubResourcePatchOptions{}
	po.ApplyOptions(opts)
	plain := sub == "status" && po.SubResourceBody == nil && len(po.DryRun) == 0 && (po.Force == nil || patch.Type() == types.ApplyPatchType)
	err := s.reads.patch(obj, func() error { return s.fastPatch(ctx, obj, patch, true, plain) },
		func() error { return utiltesting.TreatSSAAsStrategicMerge(ctx, c, sub, obj, patch, opts...) })
	s.dirty.mark(obj)
	return err
}

// onSubResourceApply: Kueue's pod reconciler marks a pod it stops with a condition by
// server-side apply; the in-memory client has no field manager, so the apply is a strategic
// merge of the applied fields (a pod's conditions merge by type), as Kueue's unit tests treat it.
func (s *sim) onSubResourceApply(ctx context.Context, c ctrl.Client, sub string, ac runtime.ApplyConfiguration, _ ...ctrl.SubResourceApplyOption) error {
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
	var kind, name string
	for k, key := range s.ownerKeys() {
		if n, ok := lo.FieldSelector.RequiresExactMatch(key); ok {
			kind, name = k, n
		}
	}
	if kind == "" {
		return false, nil
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

// stamp gives an object created in the replay its creation time (the simulated now) and,
// for a Workload, a UID in its Job's mix order.
func (s *sim) stamp(obj ctrl.Object) {
	obj.SetCreationTimestamp(metav1.NewTime(s.clock.Now()))
	if wl, ok := obj.(*kueue.Workload); ok {
		for _, ref := range wl.OwnerReferences {
			if ref.Kind == "Job" || ref.Kind == "Pod" || s.familyOf(ref.Kind) != nil {
				o := owner{ref.Kind, types.NamespacedName{Namespace: wl.Namespace, Name: ref.Name}}
				s.owned[o] = append(s.owned[o], types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name})
			}
		}
		for _, ref := range wl.OwnerReferences {
			if i, ok := s.workloadOwner(ref.UID, wl.Name); ok {
				uid := uidFor("workload", s.jobs[i].in.Index)
				if given, ok := s.workloadUIDs[s.givenUIDIndex(i)]; ok {
					uid = types.UID(given)
				}
				wl.SetUID(uid)
				return
			}
		}
		s.seq++
		wl.SetUID(types.UID(fmt.Sprintf("00000002-0000-4000-8000-%012d", s.seq)))
	}
}

// get: a read of the in-memory client through the engine's read cache.
func (s *sim) get(key types.NamespacedName, obj ctrl.Object) error {
	return s.reads.get(s.ctx, s.base, key, obj)
}
