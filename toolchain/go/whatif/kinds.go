package main

// Job kinds whose controller the engine plays only as far as Kueue reads it (JobSet in
// jobset.go, the Kubeflow v1 jobs (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob) in
// kubeflow.go, RayJob and RayCluster in ray.go, MPIJob in mpijob.go, TrainJob in trainjob.go): Kueue's own reconciler
// for the kind makes its Workload and suspends or unsuspends it; here, as the kind's
// controller, the kube-scheduler and the kubelets would, an unsuspended job's pods (its pod
// sets, counted as Kueue's integration counts them) are placed on the nodes and its status says
// they run; a suspended one's pods are gone at once and its status says so; when its time is
// up its status says it succeeded, which Kueue reads as finished (a kind Kueue reads no end of,
// a RayCluster, is deleted then, as its user would: deletedWhenDone). Its child objects and
// pods are not objects here: Kueue's integration reads only the job. What differs by kind (its
// API, pod sets, templates and status) is a jobKind; the rest is the one code below.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

// jobPhase: what a job's status says of its pods.
type jobPhase int

const (
	phaseStopped   jobPhase = iota // suspended: no pods
	phaseRunning                   // all its pods run
	phaseSucceeded                 // done
)

// jobKind: one kind's API and controller, as far as the engine plays it.
type jobKind interface {
	// kind: the mix's kind (JobInput.Kind) and its Workloads' owner kind.
	kind() string
	gvk() schema.GroupVersionKind
	addToScheme(*runtime.Scheme) error
	// integration: Kueue's setup of the kind (its indexes, its reconciler).
	setupIndexes(context.Context, ctrl.FieldIndexer) error
	newReconciler(context.Context, ctrl.Client, ctrl.FieldIndexer, ...jobframework.Option) (reconcile.Reconciler, error)
	// empty: an object of the kind to read into.
	empty() ctrl.Object
	// decode: the manifest as the API server stores it (its CRD's defaults).
	decode(manifest []byte) (ctrl.Object, error)
	// podSets: its pod sets as Kueue's integration counts them (their counts only).
	podSets(ctrl.Object) []podSet
	// specs: each pod set's pod spec as it stands (with what Kueue put in when it unsuspended it).
	specs(ctrl.Object) []corev1.PodSpec
	suspended(ctrl.Object) bool
	suspend(ctrl.Object)
	// phase: what its status says now; setPhase writes what its controller would at now.
	phase(ctrl.Object) jobPhase
	setPhase(obj ctrl.Object, p jobPhase, now metav1.Time)
}

// jobKinds: every kind the engine plays this way, in the order of their objKind.
func jobKinds() []jobKind {
	return []jobKind{jobSetKind{}, kubeflowKindOf(kftraining.PyTorchJobKind), rayJobKind{}, mpiJobKind{},
		kubeflowKindOf(kftraining.TFJobKind), kubeflowKindOf(kftraining.XGBoostJobKind),
		kubeflowKindOf(kftraining.PaddleJobKind), kubeflowKindOf(kftraining.JAXJobKind), rayClusterKind{},
		trainJobKind{c: &lentClient{}}}
}

// clientReader: a kind whose pod sets Kueue's integration reads through the client (a
// TrainJob's, from its runtime), lent the replay's client once it is made, before any job.
type clientReader interface {
	useClient(context.Context, ctrl.Client)
}

// lendClient: the replay's client to each kind that reads through it.
func (s *sim) lendClient() {
	for _, f := range s.families {
		if r, ok := f.jobKind.(clientReader); ok {
			r.useClient(s.ctx, s.cl)
		}
	}
}

// deletedWhenDone: a kind Kueue reads no end of (a RayCluster: its Finished is never true).
// When its time is up its user deletes it, and Kueue finishes the Workload of an owner gone.
type deletedWhenDone interface{ deletedWhenDone() }

// family: one jobKind in a replay: Kueue's reconciler for it, its reconcile requests, its jobs
// by name and how its informer last saw them.
type family struct {
	jobKind
	rec  reconcile.Reconciler
	q    workQueue
	by   map[types.NamespacedName]int
	seen map[types.NamespacedName]ctrl.Object
	typ  reflect.Type
	obj  objKind
}

func newFamilies() []*family {
	var out []*family
	for i, k := range jobKinds() {
		out = append(out, &family{jobKind: k, by: map[types.NamespacedName]int{}, seen: map[types.NamespacedName]ctrl.Object{},
			typ: reflect.TypeOf(k.empty()), obj: kindFamily + objKind(i)})
	}
	return out
}

// familyOf: the family of a mix's kind (nil for a Job or a Pod).
func (s *sim) familyOf(kind string) *family {
	for _, f := range s.families {
		if f.kind() == kind {
			return f
		}
	}
	return nil
}

// ownerKeys: each owner kind's index key of its Workloads (Job, Pod and every family's).
func (s *sim) ownerKeys() map[string]string {
	keys := map[string]string{"Job": jobOwnerKey, "Pod": podOwnerKey}
	for _, f := range s.families {
		keys[f.kind()] = jobframework.OwnerReferenceIndexKey(f.gvk())
	}
	return keys
}

// addFamilyJob: a job of the mix of a family's kind.
func (s *sim) addFamilyJob(st *jobState, f *family, i int) error {
	obj, err := f.decode(st.in.Manifest)
	if err != nil {
		return fmt.Errorf("%s %d: %w", f.kind(), st.in.Index, err)
	}
	st.family = f
	st.key = types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	st.sets = f.podSets(obj)
	f.by[st.key] = i
	return nil
}

// decodeAs: a manifest into obj, in namespace default when it names none.
func decodeAs(manifest []byte, obj ctrl.Object) error {
	if err := json.Unmarshal(manifest, obj); err != nil {
		return err
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	return nil
}

// defaultReplicas: a Deployment's or StatefulSet's replicas as the API server stores them: 1
// when not given.
func defaultReplicas(replicas *int32) *int32 {
	if replicas == nil {
		return ptr(int32(1))
	}
	return replicas
}

// submitFamily creates the job as kubectl would after Kueue's webhook for its kind: suspended.
func (s *sim) submitFamily(j *jobState) error {
	obj, err := j.family.decode(j.in.Manifest)
	if err != nil {
		return err
	}
	obj.SetUID(j.uid)
	obj.SetResourceVersion("")
	j.family.suspend(obj)
	if err := s.cl.Create(s.ctx, obj); err != nil {
		j.problem = fmt.Sprintf("the API refused it: %v", err)
		return nil
	}
	j.submitted = true
	// Its controller's Service, if it makes one, is made as it first sees the job, before any
	// pod: the group the Service selects is the one the job's pods spread in (spread.go).
	if m, ok := j.family.jobKind.(serviceMaker); ok {
		if name, group, made := m.headlessService(obj); made && s.services.create(name, group) == group {
			j.spread = group
		}
	}
	return nil
}

// serviceMaker: a kind whose controller makes a Service selecting a job's pods: its name, the
// group of pods it selects (spreadGroup) and whether it makes one for this job.
type serviceMaker interface {
	headlessService(o ctrl.Object) (types.NamespacedName, string, bool)
}

// familyPods: the kind's controller and the scheduler, for one job: an unsuspended one's pods
// are placed if they all fit, and run; a suspended one's are deleted at once.
func (s *sim) familyPods(f *family, key types.NamespacedName) error {
	i, ok := f.by[key]
	if !ok {
		return nil
	}
	j := s.jobs[i]
	obj := f.empty()
	if err := s.get(key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			s.stop(j)
			return nil
		}
		return err
	}
	suspended := f.suspended(obj)
	switch {
	case j.finished:
		delete(s.waiting, i)
	case suspended && (len(j.where) > 0 || f.phase(obj) != phaseStopped):
		s.stop(j)
		delete(s.waiting, i)
		f.setPhase(obj, phaseStopped, metav1.NewTime(s.clock.Now()))
		return s.cl.Status().Update(s.ctx, obj)
	case suspended:
		delete(s.waiting, i)
		delete(s.toPlace, i)
		j.stuck, j.released = "", false
	case !j.running:
		if s.held(i) || !s.bind(i, f.specs(obj)) {
			return nil
		}
		f.setPhase(obj, phaseRunning, metav1.NewTime(s.clock.Now()))
		return s.cl.Status().Update(s.ctx, obj)
	}
	return nil
}

// completeFamily: the job's time is up; its pods succeed and its status says it succeeded (or,
// for a kind Kueue reads no end of, its user deletes it).
func (s *sim) completeFamily(j *jobState) error {
	obj := j.family.empty()
	if err := s.get(j.key, obj); err != nil {
		return err
	}
	if err := s.endOneByOne(j); err != nil {
		return err
	}
	s.stop(j)
	j.finished = true
	if _, ok := j.family.jobKind.(deletedWhenDone); ok {
		return s.cl.Delete(s.ctx, obj)
	}
	j.family.setPhase(obj, phaseSucceeded, metav1.NewTime(s.clock.Now()))
	return s.cl.Status().Update(s.ctx, obj)
}

// informFamilies: each family's changed jobs to its controller's part and Kueue's reconciler.
func (s *sim) informFamilies(changed map[reflect.Type][]types.NamespacedName) error {
	for _, f := range s.families {
		for _, k := range changed[f.typ] {
			moved, err := s.changed(k, f.seen, f.empty())
			if err != nil {
				return err
			}
			if !moved {
				continue
			}
			if err := s.familyPods(f, k); err != nil {
				return err
			}
			f.q.add(k)
		}
	}
	return nil
}

// admitAndCreate: obj through Kueue's webhook for its kind (admit), then created, and the job
// submitted; false, with the job's problem naming which refused it, when either does.
func admitAndCreate[T ctrl.Object](s *sim, j *jobState, obj T, admit func(context.Context, T) error, kind string) bool {
	if err := admit(s.ctx, obj); err != nil {
		j.problem = fmt.Sprintf("Kueue's %s webhook refused it: %v", kind, err)
		return false
	}
	if err := s.cl.Create(s.ctx, obj); err != nil {
		j.problem = fmt.Sprintf("the API refused it: %v", err)
		return false
	}
	j.submitted = true
	return true
}

// deleteIfThere deletes obj, which its owner's deletion or the garbage collector may have
// taken already (nothing to do then).
func (s *sim) deleteIfThere(obj ctrl.Object) error {
	return ctrl.IgnoreNotFound(s.cl.Delete(s.ctx, obj))
}
