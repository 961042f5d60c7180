package main

// Topology-aware scheduling (docs/topology.md): what Kueue's TAS controllers
// (pkg/controller/tas) tell its scheduler cache, and the topology ungater's part for a job's
// pods. The scheduler's TAS code (pkg/cache/scheduler tas_*, the flavor assigner) is Kueue's
// own and runs as it is; it reads three things only the controllers feed it: the Topologies
// (the Topology controller's Create), the nodes (the node controller's Create predicate,
// SyncNode) and the pods that are not TAS workloads' (the non-TAS usage controller, Update and
// DeletePodByKey). The usage of TAS workloads it keeps itself, from their admissions.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/features"
	utilpod "sigs.k8s.io/kueue/pkg/util/pod"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
	"sigs.k8s.io/kueue/pkg/workload"
)

// nonTASNamespace: the namespace of the pods the engine shows Kueue's TAS cache for the pods it
// places that are not TAS workloads' (it has no Pod objects for a Job's pods); the cache only
// keys them by it.
const nonTASNamespace = "gpuq-whatif-non-tas"

// tasFeed: what the TAS controllers told Kueue's cache of the pods that are not TAS workloads':
// each one's key, by who placed it on which node.
type tasFeed struct {
	pods map[podsOn][]types.NamespacedName
	seq  int
}

// podsOn: a job's pods of one pod set on one node (job nil: the pods the cluster runs before
// any job, Input.Pods, set the pod's place among them).
type podsOn struct {
	job       *jobState
	set, node int
}

// loadTAS: when the stack has a Topology (s.load added it to Kueue's cache, as its Topology
// controller's Create event does) and the release runs TAS, the nodes its node controller
// syncs (tasNodes) and the feed of pods that are not TAS pods. Without a Topology the engine
// feeds nothing: no flavor has a TAS cache to read it.
func (s *sim) loadTAS(objs []ctrl.Object, nodes []corev1.Node) {
	if !slices.ContainsFunc(objs, func(o ctrl.Object) bool { _, ok := o.(*kueue.Topology); return ok }) ||
		!features.Enabled(features.TopologyAwareScheduling) {
		return
	}
	for _, n := range tasNodes(nodes) {
		s.cache.TASCache().SyncNode(n)
	}
	s.tas = &tasFeed{pods: map[podsOn][]types.NamespacedName{}}
}

// tasNodes: the nodes as the node controller sees them. The nodes the stack declares carry no
// conditions; the sandbox's kwok nodes are Ready, so a node without a Ready condition is given
// one (Kueue's nodes cache drops a node that is not Ready, and an unschedulable one, itself).
func tasNodes(nodes []corev1.Node) []*corev1.Node {
	out := make([]*corev1.Node, 0, len(nodes))
	for i := range nodes {
		n := nodes[i].DeepCopy()
		if utiltas.GetNodeCondition(n, corev1.NodeReady) == nil {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})
		}
		out = append(out, n)
	}
	return out
}

// placedNonTAS: pods of a job's pod set (job nil: Input.Pods) bound to the nodes of p, which are
// not TAS pods: the non-TAS usage controller adds each to the TAS cache once it has a node.
func (s *sim) placedNonTAS(job *jobState, set int, spec *corev1.PodSpec, p placement) {
	if s.tas == nil {
		return
	}
	for _, n := range p {
		s.tas.seq++
		key := types.NamespacedName{Namespace: nonTASNamespace, Name: fmt.Sprintf("pod-%d", s.tas.seq)}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Spec: *spec.DeepCopy()}
		pod.Spec.NodeName = s.nodes.nodes[n].name
		s.cache.TASCache().Update(pod, logr.Discard())
		at := podsOn{job, set, n}
		s.tas.pods[at] = append(s.tas.pods[at], key)
	}
}

// goneNonTAS: those pods gone from the nodes of p (the controller's Delete event).
func (s *sim) goneNonTAS(job *jobState, set int, p placement) {
	if s.tas == nil {
		return
	}
	for _, n := range p {
		at := podsOn{job, set, n}
		keys := s.tas.pods[at]
		if len(keys) == 0 {
			continue
		}
		s.cache.TASCache().DeletePodByKey(keys[len(keys)-1], logr.Discard())
		s.tas.pods[at] = keys[:len(keys)-1]
	}
}

// settleNodes: the pods the cluster runs before any job, placed (cluster.settle) and, on a
// TAS stack, fed to the TAS cache as the pods they are.
func (s *sim) settleNodes(pods []corev1.PodSpec) {
	for i, p := range s.nodes.settle(pods) {
		s.placedNonTAS(nil, i, &pods[i], p)
	}
}

// domainPart: the pods of a pod set the topology ungater sends to one domain of its
// TopologyAssignment: their spec with the domain's nodeSelector, and how many.
type domainPart struct {
	spec  corev1.PodSpec
	count int
}

// tasSets: for each of a job's pod sets (in its Workload's order), whether its pods are TAS pods
// (Kueue's IsTAS of a pod: its template's topology annotations, or the unconstrained one Kueue
// adds to a pod set it admitted by TAS) and, when Kueue admitted it by TAS, the parts the
// ungater splits its pods into; nil, nil when the job has no admitted Workload.
func (s *sim) tasSets(j *jobState, specs []corev1.PodSpec) ([]bool, [][]domainPart) {
	if s.tas == nil || j.workload == nil {
		return nil, nil
	}
	wl := &kueue.Workload{}
	if err := s.get(*j.workload, wl); err != nil || wl.Status.Admission == nil {
		return nil, nil
	}
	tas, parts := make([]bool, len(specs)), make([][]domainPart, len(specs))
	for k := range specs {
		if k >= len(wl.Spec.PodSets) || k >= len(wl.Status.Admission.PodSetAssignments) {
			break
		}
		psa := &wl.Status.Admission.PodSetAssignments[k]
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: wl.Spec.PodSets[k].Template.Annotations}}
		tas[k] = psa.TopologyAssignment != nil || utiltas.IsTAS(pod)
		parts[k] = ungated(&specs[k], psa)
	}
	return tas, parts
}

// ungated: the pod set's pods as the topology ungater lets them go (its greedy assignment:
// the TopologyAssignment's domains in order, each taking its count of the gated pods, which
// get the domain's level labels added to their nodeSelector and lose the topology gate); nil
// when the pod set was not admitted by TAS. Which pod goes where does not matter to the
// scheduler: a pod set's pods are alike.
func ungated(spec *corev1.PodSpec, psa *kueue.PodSetAssignment) []domainPart {
	if psa.TopologyAssignment == nil {
		return nil
	}
	var parts []domainPart
	for d := range utiltas.InternalSeqFrom(psa.TopologyAssignment) {
		pod := &corev1.Pod{Spec: *spec.DeepCopy()}
		utilpod.Ungate(pod, kueue.TopologySchedulingGate)
		p := domainPart{spec: pod.Spec, count: int(d.Count)}
		if p.spec.NodeSelector == nil {
			p.spec.NodeSelector = map[string]string{}
		}
		maps.Copy(p.spec.NodeSelector, utiltas.NodeLabelsFromKeysAndValues(psa.TopologyAssignment.Levels, d.Values))
		parts = append(parts, p)
	}
	return parts
}

// ungatePod: the topology ungater, for a plain Pod whose only gate left is the topology one
// and whose Workload Kueue admitted by TAS: the gate removed and its domain's level labels
// added to its nodeSelector, written as the ungater patches it.
func (s *sim) ungatePod(j *jobState, p *corev1.Pod) error {
	if s.tas == nil || j.workload == nil || len(p.Spec.SchedulingGates) != 1 ||
		p.Spec.SchedulingGates[0].Name != kueue.TopologySchedulingGate {
		return nil
	}
	wl := &kueue.Workload{}
	if err := s.get(*j.workload, wl); err != nil || !workload.IsAdmittedByTAS(wl) {
		return nil
	}
	parts := ungated(&p.Spec, &wl.Status.Admission.PodSetAssignments[0])
	if len(parts) == 0 {
		return nil
	}
	p.Spec.SchedulingGates, p.Spec.NodeSelector = nil, parts[0].spec.NodeSelector
	return s.cl.Update(s.ctx, p)
}
