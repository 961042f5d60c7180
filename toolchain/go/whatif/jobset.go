package main

// JobSets (Kueue's jobset integration), as kinds.go plays them: one pod set per replicated job
// (replicas x its Job's pods at once), each replicated job's template with the node selectors
// Kueue put in; running, each replicated job's Jobs ready and active; done, they succeeded and
// the JobSet is Completed, which Kueue reads as finished.

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/jobset"
)

type jobSetKind struct{}

func (jobSetKind) kind() string                        { return "JobSet" }
func (jobSetKind) gvk() schema.GroupVersionKind        { return jobsetapi.GroupVersion.WithKind("JobSet") }
func (jobSetKind) addToScheme(s *runtime.Scheme) error { return jobsetapi.AddToScheme(s) }
func (jobSetKind) empty() ctrl.Object                  { return &jobsetapi.JobSet{} }
func (jobSetKind) suspended(o ctrl.Object) bool        { return ptrTrue(o.(*jobsetapi.JobSet).Spec.Suspend) }
func (jobSetKind) suspend(o ctrl.Object)               { o.(*jobsetapi.JobSet).Spec.Suspend = ptr(true) }
func (jobSetKind) setupIndexes(ctx context.Context, ix ctrl.FieldIndexer) error {
	return jobset.SetupIndexes(ctx, ix)
}
func (jobSetKind) newReconciler(ctx context.Context, cl ctrl.Client, ix ctrl.FieldIndexer, opts ...jobframework.Option) (reconcile.Reconciler, error) {
	return jobset.NewReconciler(ctx, cl, ix, nopRecorder{}, opts...)
}

// decode: the JobSet as the API server stores it: a replicated job's replicas 1 when it gives
// none (the JobSet CRD's default).
func (jobSetKind) decode(manifest []byte) (ctrl.Object, error) {
	var js jobsetapi.JobSet
	if err := decodeAs(manifest, &js); err != nil {
		return nil, err
	}
	var given struct {
		Spec struct {
			ReplicatedJobs []struct {
				Replicas *int32 `json:"replicas"`
			} `json:"replicatedJobs"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(manifest, &given); err != nil {
		return nil, err
	}
	for k, rj := range given.Spec.ReplicatedJobs {
		if rj.Replicas == nil && k < len(js.Spec.ReplicatedJobs) {
			js.Spec.ReplicatedJobs[k].Replicas = 1
		}
	}
	return &js, nil
}

// podSets: a pod set per replicated job, its pods counted as Kueue's integration counts them
// (replicas x its Job's pods at once).
func (jobSetKind) podSets(o ctrl.Object) []podSet {
	js := o.(*jobsetapi.JobSet)
	sets := make([]podSet, 0, len(js.Spec.ReplicatedJobs))
	for k := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[k]
		sets = append(sets, podSet{count: int(rj.Replicas * jobset.PodsCountPerReplica(rj))})
	}
	return sets
}

func (jobSetKind) specs(o ctrl.Object) []corev1.PodSpec {
	js := o.(*jobsetapi.JobSet)
	specs := make([]corev1.PodSpec, 0, len(js.Spec.ReplicatedJobs))
	for k := range js.Spec.ReplicatedJobs {
		specs = append(specs, js.Spec.ReplicatedJobs[k].Template.Spec.Template.Spec)
	}
	return specs
}

func (jobSetKind) phase(o ctrl.Object) jobPhase {
	js := o.(*jobsetapi.JobSet)
	switch {
	case js.Status.TerminalState != "":
		return phaseSucceeded
	case len(js.Status.ReplicatedJobsStatus) > 0:
		return phaseRunning
	}
	return phaseStopped
}

// setPhase: each replicated job's status with all its Jobs in one state (ready and active, or
// succeeded), or none; done, the JobSet Completed.
func (jobSetKind) setPhase(o ctrl.Object, p jobPhase, now metav1.Time) {
	js := o.(*jobsetapi.JobSet)
	if p == phaseStopped {
		js.Status.ReplicatedJobsStatus = nil
		return
	}
	out := make([]jobsetapi.ReplicatedJobStatus, 0, len(js.Spec.ReplicatedJobs))
	for _, rj := range js.Spec.ReplicatedJobs {
		st := jobsetapi.ReplicatedJobStatus{Name: rj.Name}
		if p == phaseRunning {
			st.Ready, st.Active = rj.Replicas, rj.Replicas
		} else {
			st.Succeeded = rj.Replicas
		}
		out = append(out, st)
	}
	js.Status.ReplicatedJobsStatus = out
	if p == phaseSucceeded {
		js.Status.TerminalState = string(jobsetapi.JobSetCompleted)
		apimeta.SetStatusCondition(&js.Status.Conditions, metav1.Condition{
			Type: string(jobsetapi.JobSetCompleted), Status: metav1.ConditionTrue, Reason: "AllJobsCompleted",
			Message: "jobset completed successfully", LastTransitionTime: now,
		})
	}
}

// headlessService: the Service JobSet's controller makes for the JobSet
// (createHeadlessSvcIfNecessary, sigs.k8s.io/jobset v0.12.0): when network.enableDNSHostnames
// is true (JobSet's webhook defaults it to true when not given; the engine runs no webhook of
// JobSet's, so not given counts as true), a headless Service named by network.subdomain (the
// JobSet's name when not given) in its namespace, selecting jobset.sigs.k8s.io/jobset-name: its
// name, the label the controller puts on each of its pods: its pods and no others.
func (jobSetKind) headlessService(o ctrl.Object) (types.NamespacedName, string, bool) {
	js := o.(*jobsetapi.JobSet)
	nw := js.Spec.Network
	if nw != nil && nw.EnableDNSHostnames != nil && !*nw.EnableDNSHostnames {
		return types.NamespacedName{}, "", false
	}
	name := js.Name
	if nw != nil && nw.Subdomain != "" {
		name = nw.Subdomain
	}
	return types.NamespacedName{Namespace: js.Namespace, Name: name}, spreadGroup(js.Namespace, js.Name), true
}

func ptrTrue(b *bool) bool { return b != nil && *b }
