package main

// RayJobs (Kueue's rayjob integration), as kinds.go plays them: pod sets as Kueue makes them,
// the head (one pod), each worker group (its replicas x numOfHosts) and, in K8sJobMode, the
// submitter (one pod, the template Kueue puts in when it unsuspends it). Running, its
// deployment Running and its cluster ready (what Kueue reads as its pods ready); suspended,
// Suspended; done, Complete with the job SUCCEEDED, which Kueue reads as finished. Its
// RayCluster, submitter Job and pods are not objects here: Kueue's integration reads the RayJob.
// RayClusters (rayClusterKind, below) share the cluster's pod sets and defaults.

import (
	"context"
	"math"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/raycluster"
	"sigs.k8s.io/kueue/pkg/controller/jobs/rayjob"
)

type rayJobKind struct{}

func (rayJobKind) kind() string                        { return "RayJob" }
func (rayJobKind) gvk() schema.GroupVersionKind        { return rayv1.GroupVersion.WithKind("RayJob") }
func (rayJobKind) addToScheme(s *runtime.Scheme) error { return rayv1.AddToScheme(s) }
func (rayJobKind) empty() ctrl.Object                  { return &rayv1.RayJob{} }
func (rayJobKind) suspended(o ctrl.Object) bool        { return o.(*rayv1.RayJob).Spec.Suspend }
func (rayJobKind) suspend(o ctrl.Object)               { o.(*rayv1.RayJob).Spec.Suspend = true }
func (rayJobKind) setupIndexes(ctx context.Context, ix ctrl.FieldIndexer) error {
	return rayjob.SetupIndexes(ctx, ix)
}
func (rayJobKind) newReconciler(ctx context.Context, cl ctrl.Client, ix ctrl.FieldIndexer, opts ...jobframework.Option) (reconcile.Reconciler, error) {
	return rayjob.NewReconciler(ctx, cl, ix, nopRecorder{}, opts...)
}

// decode: the RayJob as the API server stores it, with KubeRay's CRD defaults: submissionMode
// K8sJobMode; a worker group's replicas and minReplicas 0, maxReplicas the largest int32,
// numOfHosts 1.
func (rayJobKind) decode(manifest []byte) (ctrl.Object, error) {
	var rj rayv1.RayJob
	if err := decodeAs(manifest, &rj); err != nil {
		return nil, err
	}
	if rj.Spec.SubmissionMode == "" {
		rj.Spec.SubmissionMode = rayv1.K8sJobMode
	}
	if c := rj.Spec.RayClusterSpec; c != nil {
		defaultWorkerGroups(c)
	}
	return &rj, nil
}

// defaultWorkerGroups: KubeRay's CRD defaults of a cluster's worker groups: replicas and
// minReplicas 0, maxReplicas the largest int32, numOfHosts 1.
func defaultWorkerGroups(c *rayv1.RayClusterSpec) {
	for k := range c.WorkerGroupSpecs {
		w := &c.WorkerGroupSpecs[k]
		if w.Replicas == nil {
			w.Replicas = ptr(int32(0))
		}
		if w.MinReplicas == nil {
			w.MinReplicas = ptr(int32(0))
		}
		if w.MaxReplicas == nil {
			w.MaxReplicas = ptr(int32(math.MaxInt32))
		}
		if w.NumOfHosts == 0 {
			w.NumOfHosts = 1
		}
	}
}

// podSets: the head's, each worker group's (its replicas x numOfHosts) and, in K8sJobMode, the
// submitter's, as Kueue's rayjob integration counts them.
func (rayJobKind) podSets(o ctrl.Object) []podSet {
	rj := o.(*rayv1.RayJob)
	sets := clusterPodSets(rj.Spec.RayClusterSpec)
	if rj.Spec.SubmissionMode == rayv1.K8sJobMode {
		sets = append(sets, podSet{count: 1})
	}
	return sets
}

// clusterPodSets: a Ray cluster's head's pod set (one pod) and each worker group's (its
// replicas x numOfHosts), as Kueue's raycluster code (which its rayjob shares) counts them.
func clusterPodSets(c *rayv1.RayClusterSpec) []podSet {
	sets := []podSet{{count: 1}}
	for _, w := range c.WorkerGroupSpecs {
		sets = append(sets, podSet{count: int(ptrOr(w.Replicas, 1) * max(w.NumOfHosts, 1))})
	}
	return sets
}

// clusterSpecs: a Ray cluster's head's pod spec and each worker group's.
func clusterSpecs(c *rayv1.RayClusterSpec) []corev1.PodSpec {
	specs := []corev1.PodSpec{c.HeadGroupSpec.Template.Spec}
	for _, w := range c.WorkerGroupSpecs {
		specs = append(specs, w.Template.Spec)
	}
	return specs
}

// submitterResources: what KubeRay (and Kueue, counting it) give a submitter of no template of
// its own.
func submitterResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("200Mi")},
	}
}

// specs: the head's pod spec (in SidecarMode with the submitter container KubeRay adds), each
// worker group's, and the submitter's (the template Kueue put in when it unsuspended it).
func (rayJobKind) specs(o ctrl.Object) []corev1.PodSpec {
	rj := o.(*rayv1.RayJob)
	c := rj.Spec.RayClusterSpec
	head := *c.HeadGroupSpec.Template.Spec.DeepCopy()
	if rj.Spec.SubmissionMode == rayv1.SidecarMode {
		head.Containers = append(head.Containers, corev1.Container{Name: "ray-job-submitter", Resources: submitterResources()})
	}
	specs := clusterSpecs(c)
	specs[0] = head
	if rj.Spec.SubmissionMode == rayv1.K8sJobMode {
		submitter := corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-job-submitter", Resources: submitterResources()}}}
		if rj.Spec.SubmitterPodTemplate != nil {
			submitter = rj.Spec.SubmitterPodTemplate.Spec
		}
		specs = append(specs, submitter)
	}
	return specs
}

func (rayJobKind) phase(o ctrl.Object) jobPhase {
	switch o.(*rayv1.RayJob).Status.JobDeploymentStatus {
	case rayv1.JobDeploymentStatusComplete, rayv1.JobDeploymentStatusFailed:
		return phaseSucceeded
	case rayv1.JobDeploymentStatusRunning, rayv1.JobDeploymentStatusInitializing:
		return phaseRunning
	}
	return phaseStopped
}

// setPhase: the status KubeRay writes: Running with the cluster ready; Suspended with no
// cluster; Complete with the job SUCCEEDED.
func (rayJobKind) setPhase(o ctrl.Object, p jobPhase, now metav1.Time) {
	st := &o.(*rayv1.RayJob).Status
	switch p {
	case phaseRunning:
		st.JobDeploymentStatus, st.JobStatus = rayv1.JobDeploymentStatusRunning, rayv1.JobStatusRunning
		//lint:ignore SA1019 deprecated in KubeRay, but the field Kueue's PodsReady reads
		st.RayClusterStatus.State = rayv1.Ready
		st.StartTime = &now
	case phaseSucceeded:
		st.JobDeploymentStatus, st.JobStatus = rayv1.JobDeploymentStatusComplete, rayv1.JobStatusSucceeded
		st.Message = "the job succeeded"
		st.EndTime = &now
	default:
		st.JobDeploymentStatus, st.JobStatus = rayv1.JobDeploymentStatusSuspended, rayv1.JobStatusNew
		st.RayClusterStatus = rayv1.RayClusterStatus{}
	}
}

// RayClusters (Kueue's raycluster integration): pod sets the head (one pod) and each worker
// group (its replicas x numOfHosts). Running, its state ready (what Kueue reads as its pods
// ready); suspended, suspended. Kueue reads no end of a RayCluster (its Finished is never
// true): a cluster runs until someone deletes it, so when its time is up the engine deletes it
// as its user would (deletedWhenDone), and Kueue, finding its owner gone, finishes its
// Workload and frees its quota (FinishOrphanedWorkloads).
type rayClusterKind struct{}

func (rayClusterKind) kind() string                        { return "RayCluster" }
func (rayClusterKind) gvk() schema.GroupVersionKind        { return rayv1.GroupVersion.WithKind("RayCluster") }
func (rayClusterKind) addToScheme(s *runtime.Scheme) error { return rayv1.AddToScheme(s) }
func (rayClusterKind) empty() ctrl.Object                  { return &rayv1.RayCluster{} }
func (rayClusterKind) suspended(o ctrl.Object) bool {
	return ptrTrue(o.(*rayv1.RayCluster).Spec.Suspend)
}
func (rayClusterKind) suspend(o ctrl.Object) { o.(*rayv1.RayCluster).Spec.Suspend = ptr(true) }
func (rayClusterKind) deletedWhenDone()      {}
func (rayClusterKind) setupIndexes(ctx context.Context, ix ctrl.FieldIndexer) error {
	return raycluster.SetupIndexes(ctx, ix)
}
func (rayClusterKind) newReconciler(ctx context.Context, cl ctrl.Client, ix ctrl.FieldIndexer, opts ...jobframework.Option) (reconcile.Reconciler, error) {
	return raycluster.NewReconciler(ctx, cl, ix, nopRecorder{}, opts...)
}

// decode: the RayCluster as the API server stores it, with KubeRay's CRD defaults of its
// worker groups.
func (rayClusterKind) decode(manifest []byte) (ctrl.Object, error) {
	var rc rayv1.RayCluster
	if err := decodeAs(manifest, &rc); err != nil {
		return nil, err
	}
	defaultWorkerGroups(&rc.Spec)
	return &rc, nil
}

func (rayClusterKind) podSets(o ctrl.Object) []podSet {
	return clusterPodSets(&o.(*rayv1.RayCluster).Spec)
}

func (rayClusterKind) specs(o ctrl.Object) []corev1.PodSpec {
	return clusterSpecs(&o.(*rayv1.RayCluster).Spec)
}

func (rayClusterKind) phase(o ctrl.Object) jobPhase {
	//lint:ignore SA1019 deprecated in KubeRay, but the field Kueue's PodsReady reads
	if o.(*rayv1.RayCluster).Status.State == rayv1.Ready {
		return phaseRunning
	}
	return phaseStopped
}

// setPhase: the state KubeRay writes: ready with its pods running, suspended without them. A
// RayCluster is never done (deletedWhenDone).
func (rayClusterKind) setPhase(o ctrl.Object, p jobPhase, now metav1.Time) {
	st := &o.(*rayv1.RayCluster).Status
	if p == phaseRunning {
		//lint:ignore SA1019 deprecated in KubeRay, but the field Kueue's PodsReady reads
		st.State = rayv1.Ready
		st.LastUpdateTime = &now
		return
	}
	//lint:ignore SA1019 deprecated in KubeRay, but the field Kueue's PodsReady reads
	st.State = rayv1.Suspended
	st.LastUpdateTime = &now
}
