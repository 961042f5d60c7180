package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utiltestingapi "sigs.k8s.io/kueue/pkg/util/testing/v1beta2"
	testingjob "sigs.k8s.io/kueue/pkg/util/testingjobs/job"
	testingjobset "sigs.k8s.io/kueue/pkg/util/testingjobs/jobset"
	testingpod "sigs.k8s.io/kueue/pkg/util/testingjobs/pod"
)

// The topology the TAS truths replay on, as docs/topology.md lays a flavor's nodes out: 2
// blocks of 2 racks of 2 nodes of 8 GPUs, gpu-0 to gpu-7; gpu-0 and gpu-1 are rack-0 of
// block-0, gpu-6 and gpu-7 rack-3 of block-1.
const (
	blockLabel = "cloud.example.com/topology-block"
	rackLabel  = "cloud.example.com/topology-rack"
)

// tasInput: team-a's ClusterQueue with the 64 GPUs of a flavor whose topology is block, rack,
// host, and its 8 nodes.
func tasInput(t *testing.T, jobs ...JobInput) *Input {
	t.Helper()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}}}
	topology := utiltestingapi.MakeTopology("gpu-topology").Levels(blockLabel, rackLabel, corev1.LabelHostname).Obj()
	rf := utiltestingapi.MakeResourceFlavor("gpu").NodeLabel("pool", "gpu").TopologyName("gpu-topology").Obj()
	cq := utiltestingapi.MakeClusterQueue("team-a").ResourceGroup(
		*utiltestingapi.MakeFlavorQuotas("gpu").Resource(corev1.ResourceCPU, "256").Resource(corev1.ResourceMemory, "1Ti").
			Resource("nvidia.com/gpu", "64").Obj()).Obj()
	lq := utiltestingapi.MakeLocalQueue("gpu-queue", "team-a").ClusterQueue("team-a").Obj()
	objects := []json.RawMessage{rawJSON(t, ns), withKind(t, rf), withKind(t, cq), withKind(t, lq)}
	var tm map[string]any
	if err := json.Unmarshal(rawJSON(t, topology), &tm); err != nil {
		t.Fatal(err)
	}
	tm["apiVersion"], tm["kind"] = kueue.SchemeGroupVersion.String(), "Topology"
	objects = append(objects, rawJSON(t, tm))
	var nodes []corev1.Node
	for k, n := range gpuNodes(8) {
		n.Name = fmt.Sprintf("gpu-%d", k)
		n.Labels = map[string]string{"pool": "gpu", corev1.LabelHostname: n.Name,
			blockLabel: fmt.Sprintf("block-%d", k/4), rackLabel: fmt.Sprintf("rack-%d", k/2)}
		nodes = append(nodes, n)
	}
	return &Input{Objects: objects, CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t), Nodes: nodes, Jobs: jobs}
}

// tasJob: a Job of `pods` pods of 8 GPUs each (a whole node), its pod template annotated
// (when key is not "") and its pods held to one node by name (when on is not "").
func tasJob(t *testing.T, index int, name string, pods int32, key, value, on string, at, runs float64) JobInput {
	t.Helper()
	w := testingjob.MakeJob(name, "team-a").Queue("gpu-queue").Suspend(false).Parallelism(pods).Completions(pods).
		RequestAndLimit("nvidia.com/gpu", "8").Request(corev1.ResourceCPU, "1")
	if key != "" {
		w = w.PodAnnotation(key, value)
	}
	if on != "" {
		w = w.NodeSelector(corev1.LabelHostname, on)
	}
	j := w.Obj()
	j.TypeMeta = metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"}
	return JobInput{Kind: "Job", Index: index, Manifest: rawJSON(t, j), SubmitAt: at, Duration: runs}
}

// fillers: one whole-node Job on the first node of each rack and on gpu-5 (jobs 0-4), all
// until 100 but rack-3's, which ends at 50. Until then 24 GPUs are free (gpu-1, gpu-3, gpu-7)
// and no rack is; block-0 has two free nodes, block-1 one.
func fillers(t *testing.T) []JobInput {
	t.Helper()
	var out []JobInput
	for k, on := range []string{"gpu-0", "gpu-2", "gpu-4", "gpu-6", "gpu-5"} {
		runs := 100.0
		if on == "gpu-6" {
			runs = 50
		}
		out = append(out, tasJob(t, k, "filler-"+on, 1, "", "", on, 0, runs))
	}
	return out
}

// nodesRan: the nodes the workload's first run was placed on.
func nodesRan(t *testing.T, r Result) []string {
	t.Helper()
	ran := ranStep(r)
	if ran == nil {
		t.Fatalf("workload %d never ran", r.Index)
	}
	return ran.Nodes
}

// A Job that requires one rack for its 2 pods waits, with 24 GPUs free across three racks and
// the quota to spare, until a rack is whole: at 50, when rack-3's filler ends, it is admitted
// and its pods land on rack-3's nodes.
func TestAJobRequiringARackWaitsForAWholeRack(t *testing.T) {
	jobs := append(fillers(t), tasJob(t, 5, "rack", 2, kueue.PodSetRequiredTopologyAnnotation, rackLabel, "", 10, 30))
	results, _ := replayed(t, tasInput(t, jobs...))
	checkRuns(t, results[5:], []runWant{{50, `[{"start":50,"end":80}]`, 2}})
	if got := nodesRan(t, results[5]); !slices.Equal(got, []string{"gpu-6", "gpu-7"}) {
		t.Errorf("its pods ran on %v, want rack-3's gpu-6 and gpu-7", got)
	}
	for k, on := range []string{"gpu-0", "gpu-2", "gpu-4", "gpu-6", "gpu-5"} {
		if got := nodesRan(t, results[k]); !slices.Equal(got, []string{on}) {
			t.Errorf("filler %d ran on %v, want %s", k, got, on)
		}
	}
}

// The same Job preferring a rack does not wait: no rack is free, so Kueue takes the block
// closest to it, block-0, whose free nodes gpu-1 (rack-0) and gpu-3 (rack-1) hold both pods;
// block-1 has only gpu-7.
func TestAJobPreferringARackDoesNotWait(t *testing.T) {
	jobs := append(fillers(t), tasJob(t, 5, "rack", 2, kueue.PodSetPreferredTopologyAnnotation, rackLabel, "", 10, 30))
	results, _ := replayed(t, tasInput(t, jobs...))
	checkRuns(t, results[5:], []runWant{{10, `[{"start":10,"end":40}]`, 2}})
	if got := nodesRan(t, results[5]); !slices.Equal(got, []string{"gpu-1", "gpu-3"}) {
		t.Errorf("its pods ran on %v, want block-0's gpu-1 and gpu-3", got)
	}
}

// tasJobSet: a JobSet of 2 replicated worker Jobs of 2 pods of 8 GPUs (32 GPUs: a block),
// its workers' pod template requiring a block.
func tasJobSet(t *testing.T, index int, at, runs float64) JobInput {
	t.Helper()
	js := testingjobset.MakeJobSet("block", "team-a").Queue("gpu-queue").SetTypeMeta().ReplicatedJobs(
		testingjobset.ReplicatedJobRequirements{Name: "workers", Replicas: 2, Parallelism: 2, Completions: 2}).Obj()
	tmpl := &js.Spec.ReplicatedJobs[0].Template.Spec.Template
	tmpl.Annotations = map[string]string{kueue.PodSetRequiredTopologyAnnotation: blockLabel}
	tmpl.Spec.Containers = []corev1.Container{{Name: "main", Image: "x", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("1"), "nvidia.com/gpu": mustParse("8")},
		Limits:   corev1.ResourceList{"nvidia.com/gpu": mustParse("8")}}}}
	return JobInput{Kind: "JobSet", Index: index, Manifest: rawJSON(t, js), SubmitAt: at, Duration: runs}
}

// A JobSet whose 4 workers require a block waits while each block has a node taken (48 GPUs
// free, and the quota), and is admitted the instant one block is whole: at 60, when the
// filler of block-1 (gpu-4) ends, its pods land on gpu-4 to gpu-7.
func TestAJobSetRequiringABlockWaitsForAWholeBlock(t *testing.T) {
	jobs := []JobInput{
		tasJob(t, 0, "filler-0", 1, "", "", "gpu-0", 0, 100),
		tasJob(t, 1, "filler-4", 1, "", "", "gpu-4", 0, 60),
		tasJobSet(t, 2, 10, 30),
	}
	results, _ := replayed(t, tasInput(t, jobs...))
	checkRuns(t, results[2:], []runWant{{60, `[{"start":60,"end":90}]`, 4}})
	if got := nodesRan(t, results[2]); !slices.Equal(got, []string{"gpu-4", "gpu-5", "gpu-6", "gpu-7"}) {
		t.Errorf("its pods ran on %v, want block-1's gpu-4 to gpu-7", got)
	}
	psa := results[2].Workload.Status.Admission
	if psa == nil || psa.PodSetAssignments[0].TopologyAssignment == nil {
		t.Fatalf("its Workload has no TopologyAssignment: %+v", psa)
	}
}

// A pod the cluster runs before any job (Input.Pods: Kueue's controller's, on a cluster) is no
// TAS pod, and Kueue's TAS cache counts it where it runs, as its non-TAS usage controller tells
// it: one GPU of gpu-0 taken, rack-0 no longer holds a Job of 2 whole-node pods requiring a
// rack, and Kueue puts it on rack-1, the first of the three whole racks by their domains'
// label values (the last of its sort's keys, all else being equal).
func TestAPodThatIsNoTASPodTakesRoomKueueCounts(t *testing.T) {
	in := tasInput(t, tasJob(t, 0, "rack", 2, kueue.PodSetRequiredTopologyAnnotation, rackLabel, "", 0, 30))
	in.Pods = []corev1.PodSpec{{NodeSelector: map[string]string{corev1.LabelHostname: "gpu-0"},
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": mustParse("1")}, Limits: corev1.ResourceList{"nvidia.com/gpu": mustParse("1")}}}}}}
	results, _ := replayed(t, in)
	checkRuns(t, results, []runWant{{0, `[{"start":0,"end":30}]`, 2}})
	if got := nodesRan(t, results[0]); !slices.Equal(got, []string{"gpu-2", "gpu-3"}) {
		t.Errorf("its pods ran on %v, want rack-1's gpu-2 and gpu-3", got)
	}
}

// A plain Pod (Kueue's pod integration) requiring a rack: Kueue's pod webhook gives every Pod
// the topology gate, and only the topology ungater removes it from a Pod admitted by TAS; the
// engine plays it (without, the Pod never ran). Among the fillers' racks each with one whole
// node, Kueue takes rack-0 (first by its label values): gpu-1, at once.
func TestAPlainPodAdmittedByTASIsUngatedOntoItsDomain(t *testing.T) {
	p := testingpod.MakePod("solo", "team-a").Queue("gpu-queue").RequestAndLimit("nvidia.com/gpu", "8").
		Annotation(kueue.PodSetRequiredTopologyAnnotation, rackLabel).Obj()
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	in := tasInput(t, append(fillers(t), JobInput{Kind: "Pod", Index: 5, Manifest: rawJSON(t, p), SubmitAt: 10, Duration: 30})...)
	in.Configuration = strings.Replace(in.Configuration, "  - \"batch/job\"\n", "  - \"batch/job\"\n  - \"pod\"\n", 1)
	results, _ := replayed(t, in)
	if r := results[5]; r.AdmittedAt == nil || *r.AdmittedAt != 10 {
		t.Fatalf("the Pod was admitted at %v, want 10 (%s)", r.AdmittedAt, r.Problem)
	}
	if got, _ := json.Marshal(results[5].Intervals); string(got) != `[{"start":10,"end":40}]` {
		t.Errorf("the Pod ran %s, want from 10 to 40", got)
	}
	if got := nodesRan(t, results[5]); !slices.Equal(got, []string{"gpu-1"}) {
		t.Errorf("the Pod ran on %v, want rack-0's gpu-1", got)
	}
}

// withSharedFlavor: the TAS stack with a second team, team-b, in one cohort with team-a, whose
// flavor `shared` has 8 GPUs of quota, no topology and no node labels: its pods may land on
// the TAS flavor's nodes, as pods that are not TAS pods.
func withSharedFlavor(t *testing.T, in *Input) *Input {
	t.Helper()
	var cq kueue.ClusterQueue
	for k, raw := range in.Objects {
		if json.Unmarshal(raw, &cq) == nil && cq.Kind == "ClusterQueue" {
			cq.Spec.CohortName = "all"
			in.Objects[k] = rawJSON(t, &cq)
		}
	}
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"kubernetes.io/metadata.name": "team-b"}}}
	rf := utiltestingapi.MakeResourceFlavor("shared").Obj()
	cqB := utiltestingapi.MakeClusterQueue("team-b").Cohort("all").ResourceGroup(
		*utiltestingapi.MakeFlavorQuotas("shared").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").
			Resource("nvidia.com/gpu", "8").Obj()).Obj()
	lq := utiltestingapi.MakeLocalQueue("gpu-queue", "team-b").ClusterQueue("team-b").Obj()
	in.Objects = append(in.Objects, rawJSON(t, ns), withKind(t, rf), withKind(t, cqB), withKind(t, lq))
	return in
}

// A pod of another flavor on a TAS flavor's node is no TAS pod, and Kueue's TAS cache counts it
// while it runs, as the non-TAS usage controller adds and deletes it: team-b's `other` (8 GPUs,
// to 50) lands on gpu-0, the first of equal nodes, so `first`, requiring a block for 4 whole-
// node pods, goes to block-1 at 0; `second`, the same at 10, waits for block-0 until `other`
// ends at 50 (its Workload's end requeues the cohort's waiting workloads).
func TestAnotherFlavorsPodOnATASNodeHoldsItsDomainWhileItRuns(t *testing.T) {
	other := tasJob(t, 0, "other", 1, "", "", "", 0, 50)
	var j batchv1.Job
	if err := json.Unmarshal(other.Manifest, &j); err != nil {
		t.Fatal(err)
	}
	j.Namespace = "team-b"
	other.Manifest = rawJSON(t, &j)
	in := withSharedFlavor(t, tasInput(t, other,
		tasJob(t, 1, "first", 4, kueue.PodSetRequiredTopologyAnnotation, blockLabel, "", 0, 100),
		tasJob(t, 2, "second", 4, kueue.PodSetRequiredTopologyAnnotation, blockLabel, "", 10, 30)))
	results, _ := replayed(t, in)
	checkRuns(t, results, []runWant{
		{0, `[{"start":0,"end":50}]`, 1},
		{0, `[{"start":0,"end":100}]`, 4},
		{50, `[{"start":50,"end":80}]`, 4},
	})
	for k, want := range [][]string{{"gpu-0"}, {"gpu-4", "gpu-5", "gpu-6", "gpu-7"}, {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}} {
		if got := nodesRan(t, results[k]); !slices.Equal(got, want) {
			t.Errorf("workload %d ran on %v, want %v", k, got, want)
		}
	}
}
