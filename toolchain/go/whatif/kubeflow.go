package main

// Kubeflow v1 jobs (Kueue's kubeflow integrations: PyTorchJob, TFJob, XGBoostJob, PaddleJob,
// JAXJob), as kinds.go plays them: one pod set per replica type in Kueue's order (a PyTorchJob's
// Master then Worker; a TFJob's Chief, Master, PS, Worker, Evaluator; an XGBoostJob's and a
// PaddleJob's Master then Worker; a JAXJob's Worker), its replicas' pods, each
// template with the node selectors Kueue put in. Running, every replica active and the Running
// condition true (what Kueue's kubeflowjob reads as its pods ready); suspended, none active
// and Suspended; done, the Succeeded condition, which Kueue reads as finished.

import (
	"context"
	"fmt"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/jaxjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/paddlejob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/pytorchjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/tfjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/xgboostjob"
)

// kubeflowKind: one Kubeflow v1 job kind of the training operator (kubeflow.org/v1). They
// differ only in their Go type, where their replica specs live, the replica types Kueue makes
// pod sets of (in its order) and their defaulting; the rest is this one code for them all.
type kubeflowKind struct {
	name  string
	order []kftraining.ReplicaType // Kueue's pod set order (its OrderedReplicaTypes)
	new   func() ctrl.Object
	// parts: the job's replica specs, run policy and status.
	parts func(ctrl.Object) (map[kftraining.ReplicaType]*kftraining.ReplicaSpec, *kftraining.RunPolicy, *kftraining.JobStatus)
	// defaults: the training operator's defaulting webhook (its SetDefaults_ for the kind).
	defaults   func(ctrl.Object)
	indexes    func(context.Context, ctrl.FieldIndexer) error
	reconciler jobframework.ReconcilerFactory
}

// kubeflowKinds: the Kubeflow v1 kinds the engine plays, each with its Kueue integration's
// package (kubeflow/jobs/<kind>).
func kubeflowKinds() []kubeflowKind {
	return []kubeflowKind{
		{name: kftraining.PyTorchJobKind, new: func() ctrl.Object { return &kftraining.PyTorchJob{} },
			order: []kftraining.ReplicaType{kftraining.PyTorchJobReplicaTypeMaster, kftraining.PyTorchJobReplicaTypeWorker},
			parts: func(o ctrl.Object) (map[kftraining.ReplicaType]*kftraining.ReplicaSpec, *kftraining.RunPolicy, *kftraining.JobStatus) {
				j := o.(*kftraining.PyTorchJob)
				return j.Spec.PyTorchReplicaSpecs, &j.Spec.RunPolicy, &j.Status
			},
			defaults:   func(o ctrl.Object) { kftraining.SetDefaults_PyTorchJob(o.(*kftraining.PyTorchJob)) },
			indexes:    pytorchjob.SetupIndexes,
			reconciler: pytorchjob.NewReconciler},
		{name: kftraining.TFJobKind, new: func() ctrl.Object { return &kftraining.TFJob{} },
			order: []kftraining.ReplicaType{kftraining.TFJobReplicaTypeChief, kftraining.TFJobReplicaTypeMaster,
				kftraining.TFJobReplicaTypePS, kftraining.TFJobReplicaTypeWorker, kftraining.TFJobReplicaTypeEval},
			parts: func(o ctrl.Object) (map[kftraining.ReplicaType]*kftraining.ReplicaSpec, *kftraining.RunPolicy, *kftraining.JobStatus) {
				j := o.(*kftraining.TFJob)
				return j.Spec.TFReplicaSpecs, &j.Spec.RunPolicy, &j.Status
			},
			defaults:   func(o ctrl.Object) { kftraining.SetDefaults_TFJob(o.(*kftraining.TFJob)) },
			indexes:    tfjob.SetupIndexes,
			reconciler: tfjob.NewReconciler},
		{name: kftraining.XGBoostJobKind, new: func() ctrl.Object { return &kftraining.XGBoostJob{} },
			order: []kftraining.ReplicaType{kftraining.XGBoostJobReplicaTypeMaster, kftraining.XGBoostJobReplicaTypeWorker},
			parts: func(o ctrl.Object) (map[kftraining.ReplicaType]*kftraining.ReplicaSpec, *kftraining.RunPolicy, *kftraining.JobStatus) {
				j := o.(*kftraining.XGBoostJob)
				return j.Spec.XGBReplicaSpecs, &j.Spec.RunPolicy, &j.Status
			},
			defaults:   func(o ctrl.Object) { kftraining.SetDefaults_XGBoostJob(o.(*kftraining.XGBoostJob)) },
			indexes:    xgboostjob.SetupIndexes,
			reconciler: xgboostjob.NewReconciler},
		{name: kftraining.PaddleJobKind, new: func() ctrl.Object { return &kftraining.PaddleJob{} },
			order: []kftraining.ReplicaType{kftraining.PaddleJobReplicaTypeMaster, kftraining.PaddleJobReplicaTypeWorker},
			parts: func(o ctrl.Object) (map[kftraining.ReplicaType]*kftraining.ReplicaSpec, *kftraining.RunPolicy, *kftraining.JobStatus) {
				j := o.(*kftraining.PaddleJob)
				return j.Spec.PaddleReplicaSpecs, &j.Spec.RunPolicy, &j.Status
			},
			defaults:   func(o ctrl.Object) { kftraining.SetDefaults_PaddleJob(o.(*kftraining.PaddleJob)) },
			indexes:    paddlejob.SetupIndexes,
			reconciler: paddlejob.NewReconciler},
		{name: kftraining.JAXJobKind, new: func() ctrl.Object { return &kftraining.JAXJob{} },
			order: []kftraining.ReplicaType{kftraining.JAXJobReplicaTypeWorker},
			parts: func(o ctrl.Object) (map[kftraining.ReplicaType]*kftraining.ReplicaSpec, *kftraining.RunPolicy, *kftraining.JobStatus) {
				j := o.(*kftraining.JAXJob)
				return j.Spec.JAXReplicaSpecs, &j.Spec.RunPolicy, &j.Status
			},
			defaults:   func(o ctrl.Object) { kftraining.SetDefaults_JAXJob(o.(*kftraining.JAXJob)) },
			indexes:    jaxjob.SetupIndexes,
			reconciler: jaxjob.NewReconciler},
	}
}

// kubeflowKindOf: the Kubeflow v1 kind of that name.
func kubeflowKindOf(name string) kubeflowKind {
	for _, k := range kubeflowKinds() {
		if k.name == name {
			return k
		}
	}
	panic("no Kubeflow v1 kind " + name)
}

func (k kubeflowKind) kind() string { return k.name }
func (k kubeflowKind) gvk() schema.GroupVersionKind {
	return kftraining.SchemeGroupVersion.WithKind(k.name)
}
func (kubeflowKind) addToScheme(s *runtime.Scheme) error { return kftraining.AddToScheme(s) }
func (k kubeflowKind) empty() ctrl.Object                { return k.new() }
func (k kubeflowKind) setupIndexes(ctx context.Context, ix ctrl.FieldIndexer) error {
	return k.indexes(ctx, ix)
}
func (k kubeflowKind) newReconciler(ctx context.Context, cl ctrl.Client, ix ctrl.FieldIndexer, opts ...jobframework.Option) (reconcile.Reconciler, error) {
	return k.reconciler(ctx, cl, ix, nopRecorder{}, opts...)
}

// decode: the job as the training operator's defaulting webhook leaves it (replica types
// camel-cased, replicas 1 where none is given), which is what Kueue's webhook and reconciler
// then read. A job the defaulting fails on (a PaddleJob's elasticPolicy without a Worker: it
// reads the Worker's replicas) is refused, as the webhook's recovered panic refuses it.
func (k kubeflowKind) decode(manifest []byte) (obj ctrl.Object, err error) {
	obj = k.new()
	if err := decodeAs(manifest, obj); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			obj, err = nil, fmt.Errorf("the training operator's defaulting failed on it: %v", r)
		}
	}()
	k.defaults(obj)
	return obj, nil
}

// replicas: the job's replica specs present, in Kueue's pod set order (a Kubeflow v1 job's and
// an MPIJob's: their replica types and specs are types of their own, alike).
func replicas[T comparable, R any](specs map[T]*R, order []T) []*R {
	var out []*R
	for _, t := range order {
		if r := specs[t]; r != nil {
			out = append(out, r)
		}
	}
	return out
}

// replicaPodSets: a pod set of each replica spec (its replicas' pods, 1 when it gives none), and
// each one's pod spec, from what part says of it (its replicas and its template).
func replicaPodSets[R any](specs []*R, part func(*R) (*int32, corev1.PodSpec)) ([]podSet, []corev1.PodSpec) {
	var sets []podSet
	var pods []corev1.PodSpec
	for _, r := range specs {
		n, spec := part(r)
		sets = append(sets, podSet{count: int(ptrOr(n, 1))})
		pods = append(pods, spec)
	}
	return sets, pods
}

func kubeflowReplica(r *kftraining.ReplicaSpec) (*int32, corev1.PodSpec) {
	return r.Replicas, r.Template.Spec
}

func (k kubeflowKind) replicas(o ctrl.Object) []*kftraining.ReplicaSpec {
	specs, _, _ := k.parts(o)
	return replicas(specs, k.order)
}

func (k kubeflowKind) podSets(o ctrl.Object) []podSet {
	sets, _ := replicaPodSets(k.replicas(o), kubeflowReplica)
	return sets
}

func (k kubeflowKind) specs(o ctrl.Object) []corev1.PodSpec {
	_, specs := replicaPodSets(k.replicas(o), kubeflowReplica)
	return specs
}

func (k kubeflowKind) suspended(o ctrl.Object) bool {
	_, run, _ := k.parts(o)
	return ptrTrue(run.Suspend)
}
func (k kubeflowKind) suspend(o ctrl.Object) {
	_, run, _ := k.parts(o)
	run.Suspend = ptr(true)
}

func (k kubeflowKind) phase(o ctrl.Object) jobPhase {
	_, _, st := k.parts(o)
	return kubeflowPhase(st)
}

func (k kubeflowKind) setPhase(o ctrl.Object, p jobPhase, now metav1.Time) {
	specs, _, st := k.parts(o)
	setKubeflowPhase(st, specs, p, now)
}

// kubeflowPhase: what a Kubeflow v1 job's status says.
func kubeflowPhase(st *kftraining.JobStatus) jobPhase {
	switch {
	case kubeflowCondition(st, kftraining.JobSucceeded):
		return phaseSucceeded
	case kubeflowCondition(st, kftraining.JobRunning):
		return phaseRunning
	}
	for _, r := range st.ReplicaStatuses {
		if r.Active > 0 {
			return phaseRunning
		}
	}
	return phaseStopped
}

func kubeflowCondition(st *kftraining.JobStatus, t kftraining.JobConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// setKubeflowPhase: the status the training operator writes: each replica type's pods active
// (running) or succeeded (done), none when suspended; the Running, Suspended and Succeeded
// conditions to match. The mpi-operator writes an MPIJob's the same way (mpijob.go).
func setKubeflowPhase(st *kftraining.JobStatus, specs map[kftraining.ReplicaType]*kftraining.ReplicaSpec, p jobPhase, now metav1.Time) {
	st.ReplicaStatuses = map[kftraining.ReplicaType]*kftraining.ReplicaStatus{}
	for t, r := range specs {
		n := ptrOr(r.Replicas, 1)
		switch p {
		case phaseRunning:
			st.ReplicaStatuses[t] = &kftraining.ReplicaStatus{Active: n}
		case phaseSucceeded:
			st.ReplicaStatuses[t] = &kftraining.ReplicaStatus{Succeeded: n}
		default:
			st.ReplicaStatuses[t] = &kftraining.ReplicaStatus{}
		}
	}
	set := func(t kftraining.JobConditionType, on bool, reason string) {
		status := corev1.ConditionFalse
		if on {
			status = corev1.ConditionTrue
		}
		for k := range st.Conditions {
			if c := &st.Conditions[k]; c.Type == t {
				if c.Status != status {
					c.Status, c.Reason, c.LastTransitionTime = status, reason, now
				}
				c.LastUpdateTime = now
				return
			}
		}
		if on {
			st.Conditions = append(st.Conditions, kftraining.JobCondition{Type: t, Status: status, Reason: reason,
				LastUpdateTime: now, LastTransitionTime: now})
		}
	}
	set(kftraining.JobRunning, p == phaseRunning, "JobRunning")
	set(kftraining.JobSuspended, p == phaseStopped, "JobSuspended")
	set(kftraining.JobSucceeded, p == phaseSucceeded, "JobSucceeded")
	if p == phaseSucceeded {
		st.CompletionTime = &now
	}
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
