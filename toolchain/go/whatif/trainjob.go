package main

// TrainJobs (Kubeflow Trainer v2, trainer.kubeflow.org/v1alpha1; Kueue's trainjob integration),
// as kinds.go plays them. A TrainJob names a runtime (spec.runtimeRef: a ClusterTrainingRuntime,
// or a TrainingRuntime in its namespace) whose spec.template is a JobSet template; Kueue reads
// the runtime through the client and builds the JobSet the Trainer would (the runtime's template
// with the TrainJob's trainer overrides, numNodes and resourcesPerNode, and every runtime
// patch), and counts its pod sets as a JobSet's. So the engine asks Kueue's own PodSets, on the
// client that holds the mix's runtimes (Input.Runtimes), for the pod sets and their templates
// (with the node selectors Kueue put in its runtime patch when it unsuspended the TrainJob).
// Its status is what the Trainer copies from its JobSet: a jobsStatus entry per replicated job
// (running, each one's Jobs ready and active, which Kueue's PodsReady sums), none when
// suspended, and when done each one's Jobs succeeded and the JobSet's Completed condition as
// Complete, which Kueue's Finished reads. The JobSet, its Jobs and pods are not objects here.

import (
	"context"
	"encoding/json"
	"fmt"

	kftrainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconst "github.com/kubeflow/trainer/v2/pkg/constants"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/jobs/trainjob"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
)

// kueueRuntimePatch: the manager of the runtime patch Kueue's webhook adds to every TrainJob it
// defaults, and in which its RunWithPodSetsInfo writes the node selectors (it refuses to run a
// TrainJob without one).
const kueueRuntimePatch = "kueue.x-k8s.io/manager"

// oneJobSteps: the steps (a runtime's replicated jobs by their LabelTrainJobAncestor) the
// Trainer's JobSet builder makes one Job of, whatever the runtime's replicas (its
// Builder.Trainer and Builder.Initializer; multiple replicas are a TODO of the Trainer's): the
// trainer and the two initializers.
var oneJobSteps = map[string]bool{
	trainerconst.AncestorTrainer: true, trainerconst.DatasetInitializer: true, trainerconst.ModelInitializer: true,
}

// trainJobKind reads through the client (the TrainJob's runtime), which it is lent once the
// client is made (clientReader).
type trainJobKind struct{ c *lentClient }

// lentClient: the replay's client and context, for the kinds that read through it; and the
// runtimes the API refused (runtimeObjects), by kind, namespace and name.
type lentClient struct {
	ctx     context.Context
	cl      ctrl.Client
	refused map[runtimeKey]error
}

type runtimeKey struct{ kind, namespace, name string }

func (trainJobKind) kind() string                        { return "TrainJob" }
func (trainJobKind) gvk() schema.GroupVersionKind        { return kftrainer.GroupVersion.WithKind("TrainJob") }
func (trainJobKind) addToScheme(s *runtime.Scheme) error { return kftrainer.AddToScheme(s) }
func (trainJobKind) empty() ctrl.Object                  { return &kftrainer.TrainJob{} }
func (trainJobKind) suspended(o ctrl.Object) bool {
	return ptrTrue(o.(*kftrainer.TrainJob).Spec.Suspend)
}
func (trainJobKind) suspend(o ctrl.Object) { o.(*kftrainer.TrainJob).Spec.Suspend = ptr(true) }
func (trainJobKind) setupIndexes(ctx context.Context, ix ctrl.FieldIndexer) error {
	return trainjob.SetupIndexes(ctx, ix)
}

// newReconciler: Kueue's, which first sets up the Trainer's runtime registry (its
// ClusterTrainingRuntime and TrainingRuntime runtimes, the ones getChildJobSet looks up). The
// registry indexes TrainJobs by runtime, for the Trainer's own controller, which no path of
// Kueue's lists by: on an indexer of the Trainer's scheme, as the one given (a throwaway, as
// for every kind) knows none of its types.
func (trainJobKind) newReconciler(ctx context.Context, cl ctrl.Client, _ ctrl.FieldIndexer, opts ...jobframework.Option) (reconcile.Reconciler, error) {
	ix := utiltesting.AsIndexer(utiltesting.NewClientBuilder(kftrainer.AddToScheme))
	return trainjob.NewReconciler(ctx, cl, ix, nopRecorder{}, opts...)
}

func (k trainJobKind) useClient(ctx context.Context, cl ctrl.Client) { k.c.ctx, k.c.cl = ctx, cl }

// decode: the TrainJob as the API server stores it: its CRD's defaults for what Kueue reads
// (runtimeRef's apiGroup trainer.kubeflow.org and kind ClusterTrainingRuntime, suspend false,
// managedBy the Trainer's controller) and the runtime patch Kueue's webhook adds. Its runtime
// must be in the mix: Kueue cannot count the pod sets of a TrainJob without it.
func (k trainJobKind) decode(manifest []byte) (ctrl.Object, error) {
	var tj kftrainer.TrainJob
	if err := decodeAs(manifest, &tj); err != nil {
		return nil, err
	}
	ref := &tj.Spec.RuntimeRef
	if ref.APIGroup == nil {
		ref.APIGroup = ptr(kftrainer.GroupVersion.Group)
	}
	if ref.Kind == nil {
		ref.Kind = ptr(kftrainer.ClusterTrainingRuntimeKind)
	}
	if tj.Spec.Suspend == nil {
		tj.Spec.Suspend = ptr(false)
	}
	if tj.Spec.ManagedBy == nil {
		tj.Spec.ManagedBy = ptr(trainjob.TrainJobControllerName)
	}
	tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, kftrainer.RuntimePatch{
		Manager: kueueRuntimePatch,
		TrainingRuntimeSpec: &kftrainer.TrainingRuntimeSpecPatch{
			Template: &kftrainer.JobSetTemplatePatch{Spec: &kftrainer.JobSetSpecPatch{}},
		},
	})
	if k.c.cl != nil {
		if _, err := k.runtime(&tj); err != nil {
			return nil, err
		}
		if _, err := k.tryPodSets(&tj); err != nil {
			return nil, err
		}
	}
	return &tj, nil
}

// tryPodSets: Kueue's PodSets for the TrainJob, or why it could not make them: its error, or
// a panic of the Trainer's code on a runtime it did not expect (one its CRD's defaults would
// have filled: decodeRuntime fills those Kueue's path reads).
func (k trainJobKind) tryPodSets(tj *kftrainer.TrainJob) (sets []kueue.PodSet, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("spec.runtimeRef: Kueue could not make the pod sets from its runtime: %v", r)
		}
	}()
	sets, err = (*trainjob.TrainJob)(tj.DeepCopy()).PodSets(k.c.ctx, k.c.cl)
	if err != nil {
		err = fmt.Errorf("spec.runtimeRef: Kueue could not make the pod sets from its runtime: %w", err)
	}
	return sets, err
}

// runtime: the template of the TrainJob's runtime, as Kueue's getRuntimeSpec reads it.
func (k trainJobKind) runtime(tj *kftrainer.TrainJob) (*kftrainer.JobSetTemplateSpec, error) {
	ref := tj.Spec.RuntimeRef
	if trainjobutil.RuntimeRefIsClusterTrainingRuntime(ref) {
		var ctr kftrainer.ClusterTrainingRuntime
		if err := k.c.cl.Get(k.c.ctx, ctrl.ObjectKey{Name: ref.Name}, &ctr); err != nil {
			return nil, k.c.lost(runtimeKey{kftrainer.ClusterTrainingRuntimeKind, "", ref.Name}, err)
		}
		return &ctr.Spec.Template, nil
	}
	var tr kftrainer.TrainingRuntime
	if err := k.c.cl.Get(k.c.ctx, ctrl.ObjectKey{Namespace: tj.Namespace, Name: ref.Name}, &tr); err != nil {
		return nil, k.c.lost(runtimeKey{kftrainer.TrainingRuntimeKind, tj.Namespace, ref.Name}, err)
	}
	return &tr.Spec.Template, nil
}

// lost: why a TrainJob's runtime cannot be read, naming spec.runtimeRef: the API refused it
// (its field of another type, which makes the TrainJob a row saying so), or it is not there.
func (c *lentClient) lost(key runtimeKey, err error) error {
	where := key.name
	if key.namespace != "" {
		where = key.namespace + "/" + key.name
	}
	if refused, ok := c.refused[key]; ok {
		return fmt.Errorf("spec.runtimeRef: the API refused its %s %s: %w", key.kind, where, refused)
	}
	return fmt.Errorf("spec.runtimeRef: %s %q: %w", key.kind, where, err)
}

// kueuePodSets: the pod sets as Kueue's integration makes them (its PodSets, on the replay's
// client: the runtime's template with the TrainJob's overrides and runtime patches).
func (k trainJobKind) kueuePodSets(o ctrl.Object) []kueue.PodSet {
	sets, err := k.tryPodSets(o.(*kftrainer.TrainJob))
	if err != nil {
		// decode made them once, from a runtime no replay changes or deletes.
		panic(fmt.Sprintf("TrainJob %s: %v", o.GetName(), err))
	}
	return sets
}

func (k trainJobKind) podSets(o ctrl.Object) []podSet {
	var out []podSet
	for _, ps := range k.kueuePodSets(o) {
		out = append(out, podSet{count: int(ps.Count)})
	}
	return out
}

func (k trainJobKind) specs(o ctrl.Object) []corev1.PodSpec {
	var out []corev1.PodSpec
	for _, ps := range k.kueuePodSets(o) {
		out = append(out, ps.Template.Spec)
	}
	return out
}

func (trainJobKind) phase(o ctrl.Object) jobPhase {
	tj := o.(*kftrainer.TrainJob)
	if apimeta.IsStatusConditionTrue(tj.Status.Conditions, kftrainer.TrainJobComplete) {
		return phaseSucceeded
	}
	for _, js := range tj.Status.JobsStatus {
		if ptrValue(js.Active) > 0 {
			return phaseRunning
		}
	}
	return phaseStopped
}

// setPhase: what the Trainer copies from its JobSet (jobset.go's setPhase): each replicated
// job's Jobs ready and active, or succeeded, or no entries; done, the JobSet's Completed
// condition as Complete.
func (k trainJobKind) setPhase(o ctrl.Object, p jobPhase, now metav1.Time) {
	tj := o.(*kftrainer.TrainJob)
	if p == phaseStopped {
		tj.Status.JobsStatus = nil
		return
	}
	tmpl, err := k.runtime(tj)
	if err != nil {
		panic(fmt.Sprintf("TrainJob %s: %v", tj.Name, err))
	}
	var out []kftrainer.JobStatus
	for _, rj := range tmpl.Spec.ReplicatedJobs {
		replicas := rj.Replicas
		if oneJobSteps[rj.Template.Labels[trainerconst.LabelTrainJobAncestor]] {
			replicas = 1
		}
		st := kftrainer.JobStatus{Name: rj.Name, Ready: ptr(int32(0)), Active: ptr(int32(0)), Succeeded: ptr(int32(0)),
			Failed: ptr(int32(0)), Suspended: ptr(int32(0))}
		if p == phaseRunning {
			st.Ready, st.Active = ptr(replicas), ptr(replicas)
		} else {
			st.Succeeded = ptr(replicas)
		}
		out = append(out, st)
	}
	tj.Status.JobsStatus = out
	if p == phaseSucceeded {
		apimeta.SetStatusCondition(&tj.Status.Conditions, metav1.Condition{
			Type: kftrainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "AllJobsCompleted",
			Message: "jobset completed successfully", LastTransitionTime: now,
		})
	}
}

// runtimeObjects: the mix's ClusterTrainingRuntimes and TrainingRuntimes as the API server
// stores them (decodeRuntime). One with a field of another type than the Trainer's API gives
// it is refused, as the API server would refuse it, and kept out: the TrainJobs on it are rows
// saying so (lost), and the replay goes on.
func (s *sim) runtimeObjects(raws []json.RawMessage) ([]ctrl.Object, error) {
	refused := map[runtimeKey]error{}
	var objs []ctrl.Object
	for k, raw := range raws {
		obj, key, err := decodeRuntime(raw)
		switch {
		case err != nil && fieldOfAnotherType(err):
			refused[key] = err
		case err != nil:
			return nil, fmt.Errorf("runtime %d: %w", k, err)
		default:
			objs = append(objs, obj)
		}
	}
	if f := s.familyOf(trainJobKind{}.kind()); f != nil {
		f.jobKind.(trainJobKind).c.refused = refused
	}
	return objs, nil
}

// decodeRuntime: one runtime with a replicated job's replicas 1 when it gives none (the
// Trainer's CRDs' default, JobSet's), which Kueue multiplies its pods by; a TrainingRuntime in
// namespace default when it names none.
func decodeRuntime(raw json.RawMessage) (ctrl.Object, runtimeKey, error) {
	var head struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, runtimeKey{}, err
	}
	key := runtimeKey{head.Kind, "", head.Name}
	var obj ctrl.Object
	var spec *kftrainer.TrainingRuntimeSpec
	switch head.Kind {
	case kftrainer.ClusterTrainingRuntimeKind:
		rt := &kftrainer.ClusterTrainingRuntime{}
		obj, spec = rt, &rt.Spec
	case kftrainer.TrainingRuntimeKind:
		rt := &kftrainer.TrainingRuntime{}
		obj, spec = rt, &rt.Spec
		if key.namespace = head.Namespace; key.namespace == "" {
			key.namespace = "default"
		}
	default:
		return nil, key, fmt.Errorf("a %s is no training runtime", head.Kind)
	}
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, key, err
	}
	obj.SetNamespace(key.namespace)
	var given struct {
		Spec struct {
			Template struct {
				Spec struct {
					ReplicatedJobs []struct {
						Replicas *int32 `json:"replicas"`
					} `json:"replicatedJobs"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &given); err != nil {
		return nil, key, err
	}
	for i, rj := range given.Spec.Template.Spec.ReplicatedJobs {
		if rj.Replicas == nil && i < len(spec.Template.Spec.ReplicatedJobs) {
			spec.Template.Spec.ReplicatedJobs[i].Replicas = 1
		}
	}
	defaultPolicies(spec)
	return obj, key, nil
}

// defaultPolicies: the Trainer's CRD defaults of a runtime's ML and pod group policies, which
// its plugins read without a nil check when Kueue builds the JobSet (the MPI plugin's
// numProcPerNode: a runtime written without it, as users write them, would crash the code the
// API server never lets it reach).
func defaultPolicies(spec *kftrainer.TrainingRuntimeSpec) {
	if p := spec.MLPolicy; p != nil && p.MPI != nil {
		mpi := p.MPI
		mpi.NumProcPerNode = orDefault(mpi.NumProcPerNode, 1)
		if mpi.MPIImplementation == nil {
			mpi.MPIImplementation = ptr(kftrainer.MPIImplementationOpenMPI)
		}
		if mpi.SSHAuthMountPath == nil {
			mpi.SSHAuthMountPath = ptr("/root/.ssh")
		}
		if mpi.RunLauncherAsNode == nil {
			mpi.RunLauncherAsNode = ptr(false)
		}
	}
	if p := spec.MLPolicy; p != nil && p.Flux != nil {
		p.Flux.NumProcPerNode = orDefault(p.Flux.NumProcPerNode, 1)
	}
	if g := spec.PodGroupPolicy; g != nil && g.Coscheduling != nil {
		g.Coscheduling.ScheduleTimeoutSeconds = orDefault(g.Coscheduling.ScheduleTimeoutSeconds, 60)
	}
}

func orDefault(p *int32, v int32) *int32 {
	if p == nil {
		return ptr(v)
	}
	return p
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
