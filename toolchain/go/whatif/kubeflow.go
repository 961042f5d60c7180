package main

// Kubeflow v1 jobs (Kueue's kubeflow integrations; PyTorchJob), as kinds.go plays them: one pod
// set per replica type in Kueue's order (Master, then Worker), its replicas' pods, each
// template with the node selectors Kueue put in. Running, every replica active and the Running
// condition true (what Kueue's kubeflowjob reads as its pods ready); suspended, none active
// and Suspended; done, the Succeeded condition, which Kueue reads as finished.

import (
	"context"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/pytorchjob"
)

type pyTorchJobKind struct{}

func (pyTorchJobKind) kind() string { return kftraining.PyTorchJobKind }
func (pyTorchJobKind) gvk() schema.GroupVersionKind {
	return kftraining.SchemeGroupVersion.WithKind(kftraining.PyTorchJobKind)
}
func (pyTorchJobKind) addToScheme(s *runtime.Scheme) error { return kftraining.AddToScheme(s) }
func (pyTorchJobKind) empty() ctrl.Object                  { return &kftraining.PyTorchJob{} }
func (pyTorchJobKind) setupIndexes(ctx context.Context, ix ctrl.FieldIndexer) error {
	return pytorchjob.SetupIndexes(ctx, ix)
}
func (pyTorchJobKind) newReconciler(ctx context.Context, cl ctrl.Client, ix ctrl.FieldIndexer, opts ...jobframework.Option) (reconcile.Reconciler, error) {
	return pytorchjob.NewReconciler(ctx, cl, ix, nopRecorder{}, opts...)
}

// decode: the PyTorchJob as the training operator's defaulting webhook leaves it (replica types
// camel-cased, replicas 1 where none is given), which is what Kueue's webhook and reconciler
// then read.
func (pyTorchJobKind) decode(manifest []byte) (ctrl.Object, error) {
	var pj kftraining.PyTorchJob
	if err := decodeAs(manifest, &pj); err != nil {
		return nil, err
	}
	kftraining.SetDefaults_PyTorchJob(&pj)
	return &pj, nil
}

var pyTorchReplicaTypes = []kftraining.ReplicaType{kftraining.PyTorchJobReplicaTypeMaster, kftraining.PyTorchJobReplicaTypeWorker}

// replicas: the job's replica specs present, in Kueue's pod set order.
func replicas(specs map[kftraining.ReplicaType]*kftraining.ReplicaSpec, order []kftraining.ReplicaType) []*kftraining.ReplicaSpec {
	var out []*kftraining.ReplicaSpec
	for _, t := range order {
		if r := specs[t]; r != nil {
			out = append(out, r)
		}
	}
	return out
}

func (k pyTorchJobKind) replicas(o ctrl.Object) []*kftraining.ReplicaSpec {
	return replicas(o.(*kftraining.PyTorchJob).Spec.PyTorchReplicaSpecs, pyTorchReplicaTypes)
}

func (k pyTorchJobKind) podSets(o ctrl.Object) []podSet {
	var sets []podSet
	for _, r := range k.replicas(o) {
		sets = append(sets, podSet{count: int(ptrOr(r.Replicas, 1))})
	}
	return sets
}

func (k pyTorchJobKind) specs(o ctrl.Object) []corev1.PodSpec {
	var specs []corev1.PodSpec
	for _, r := range k.replicas(o) {
		specs = append(specs, r.Template.Spec)
	}
	return specs
}

func (pyTorchJobKind) suspended(o ctrl.Object) bool {
	return ptrTrue(o.(*kftraining.PyTorchJob).Spec.RunPolicy.Suspend)
}
func (pyTorchJobKind) suspend(o ctrl.Object) {
	o.(*kftraining.PyTorchJob).Spec.RunPolicy.Suspend = ptr(true)
}

func (pyTorchJobKind) phase(o ctrl.Object) jobPhase {
	return kubeflowPhase(&o.(*kftraining.PyTorchJob).Status)
}

func (k pyTorchJobKind) setPhase(o ctrl.Object, p jobPhase, now metav1.Time) {
	pj := o.(*kftraining.PyTorchJob)
	setKubeflowPhase(&pj.Status, pj.Spec.PyTorchReplicaSpecs, p, now)
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
