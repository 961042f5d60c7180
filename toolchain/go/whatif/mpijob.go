package main

// MPIJobs (kubeflow.org/v2beta1, the mpi-operator's; Kueue's mpijob integration), as kinds.go
// plays them: one pod set per replica type in Kueue's order (Launcher, then Worker), its
// replicas' pods (1 where none is given, as Kueue counts them; runLauncherAsWorker changes no
// count), each template with the node selectors Kueue put in. Its status is the Kubeflow v1
// jobs' own schema (the mpi-operator's v2beta1 merged it from the training operator's common
// types), so kubeflow.go's one rule writes and reads it: running, every replica active and the
// Running condition true (what Kueue's mpijob reads as its pods ready); suspended, none active
// and Suspended; done, Succeeded, which Kueue reads as finished. Its launcher Job, worker pods,
// services and hostfile are not objects here: Kueue's integration reads only the MPIJob.

import (
	"context"
	"encoding/json"
	"fmt"

	kfmpi "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/mpijob"
)

type mpiJobKind struct{}

func (mpiJobKind) kind() string                        { return kfmpi.Kind }
func (mpiJobKind) gvk() schema.GroupVersionKind        { return kfmpi.SchemeGroupVersionKind }
func (mpiJobKind) addToScheme(s *runtime.Scheme) error { return kfmpi.AddToScheme(s) }
func (mpiJobKind) empty() ctrl.Object                  { return &kfmpi.MPIJob{} }
func (mpiJobKind) setupIndexes(ctx context.Context, ix ctrl.FieldIndexer) error {
	return mpijob.SetupIndexes(ctx, ix)
}
func (mpiJobKind) newReconciler(ctx context.Context, cl ctrl.Client, ix ctrl.FieldIndexer, opts ...jobframework.Option) (reconcile.Reconciler, error) {
	return mpijob.NewReconciler(ctx, cl, ix, nopRecorder{}, opts...)
}

// decode: the MPIJob as the API server stores it, with the mpi-operator CRD's defaults
// (launcherCreationPolicy AtStartup, mpiImplementation OpenMPI, runLauncherAsWorker false). The
// mpi-operator's own defaulter (a Worker's replicas 0, a Launcher's 1) runs only on its
// controller's copy, never written back, so Kueue reads replicas as the user wrote them.
func (mpiJobKind) decode(manifest []byte) (ctrl.Object, error) {
	var mj kfmpi.MPIJob
	if err := decodeAs(manifest, &mj); err != nil {
		return nil, err
	}
	if mj.Spec.LauncherCreationPolicy == "" {
		mj.Spec.LauncherCreationPolicy = kfmpi.LauncherCreationPolicyAtStartup
	}
	if mj.Spec.MPIImplementation == "" {
		mj.Spec.MPIImplementation = kfmpi.MPIImplementationOpenMPI
	}
	if mj.Spec.RunLauncherAsWorker == nil {
		mj.Spec.RunLauncherAsWorker = ptr(false)
	}
	return &mj, nil
}

var mpiReplicaTypes = []kfmpi.MPIReplicaType{kfmpi.MPIReplicaTypeLauncher, kfmpi.MPIReplicaTypeWorker}

// headlessService: the Service the mpi-operator makes for an MPIJob not yet done, suspended or
// not (newJobService, github.com/kubeflow/mpi-operator v0.8.0): headless, named as the job, in
// its namespace, selecting training.kubeflow.org/operator-name: mpi-operator and
// training.kubeflow.org/job-name: the job's name, which the launcher's pod and the workers'
// both carry: its pods and no others, so kube-scheduler spreads them as one group (cross-check
// seed 802 at 1h36m: nlp/j006's launcher and 4 workers on three l40s nodes, 1+2+2).
func (mpiJobKind) headlessService(o ctrl.Object) (types.NamespacedName, string, bool) {
	mj := o.(*kfmpi.MPIJob)
	return types.NamespacedName{Namespace: mj.Namespace, Name: mj.Name}, spreadGroup(mj.Namespace, mj.Name), true
}

// bindOrder: the workers' pods first, the launcher's last. The mpi-operator makes the workers'
// pods itself and the launcher as a batch Job, whose pod kube-controller-manager's Job
// controller makes after, so on a cluster the workers reach kube-scheduler first (cross-check
// seed 802). Kueue's pod sets: Launcher, then Worker; a job of one keeps Kueue's order (nil).
func (mpiJobKind) bindOrder(sets int) []int {
	if sets == 2 {
		return []int{1, 0}
	}
	return nil
}

func mpiReplica(r *kfmpi.ReplicaSpec) (*int32, corev1.PodSpec) { return r.Replicas, r.Template.Spec }

// replicas: the job's replica specs present, in Kueue's pod set order.
func (mpiJobKind) replicas(o ctrl.Object) []*kfmpi.ReplicaSpec {
	return replicas(o.(*kfmpi.MPIJob).Spec.MPIReplicaSpecs, mpiReplicaTypes)
}

func (k mpiJobKind) podSets(o ctrl.Object) []podSet {
	sets, _ := replicaPodSets(k.replicas(o), mpiReplica)
	return sets
}

func (k mpiJobKind) specs(o ctrl.Object) []corev1.PodSpec {
	_, specs := replicaPodSets(k.replicas(o), mpiReplica)
	return specs
}

func (mpiJobKind) suspended(o ctrl.Object) bool {
	return ptrTrue(o.(*kfmpi.MPIJob).Spec.RunPolicy.Suspend)
}
func (mpiJobKind) suspend(o ctrl.Object) { o.(*kfmpi.MPIJob).Spec.RunPolicy.Suspend = ptr(true) }

func (mpiJobKind) phase(o ctrl.Object) jobPhase {
	st := asKubeflowStatus(o.(*kfmpi.MPIJob).Status)
	return kubeflowPhase(&st)
}

// setPhase: what the mpi-operator writes, by kubeflow.go's rule for a Kubeflow v1 job's status.
func (mpiJobKind) setPhase(o ctrl.Object, p jobPhase, now metav1.Time) {
	mj := o.(*kfmpi.MPIJob)
	specs := map[kftraining.ReplicaType]*kftraining.ReplicaSpec{}
	for t, r := range mj.Spec.MPIReplicaSpecs {
		if r != nil {
			specs[kftraining.ReplicaType(t)] = &kftraining.ReplicaSpec{Replicas: r.Replicas}
		}
	}
	st := asKubeflowStatus(mj.Status)
	setKubeflowPhase(&st, specs, p, now)
	mj.Status = convertStatus[kfmpi.JobStatus](st)
}

// asKubeflowStatus: an MPIJob's status as the Kubeflow v1 type of the same schema.
func asKubeflowStatus(st kfmpi.JobStatus) kftraining.JobStatus {
	return convertStatus[kftraining.JobStatus](st)
}

// convertStatus: a status into a type of the same JSON schema (the two JobStatus types share
// theirs field for field; Go will not convert them directly, their enum fields' named types
// differing).
func convertStatus[To any](from any) To {
	var to To
	raw, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(raw, &to)
	}
	if err != nil {
		panic(fmt.Sprintf("a job status of one schema did not convert: %v", err))
	}
	return to
}
