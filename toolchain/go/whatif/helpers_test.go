package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utiltestingapi "sigs.k8s.io/kueue/pkg/util/testing/v1beta2"
	testingjob "sigs.k8s.io/kueue/pkg/util/testingjobs/job"
)

// What the engine's tests replay: a stack made with Kueue's own test wrappers, on the
// release's own CRDs and manager Configuration, read from the module the engine is built
// against (.toolchain/whatif/<release>/kueue).

// kueueDir: the Kueue module the test binary was built against.
func kueueDir(t *testing.T) string {
	t.Helper()
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("the test binary has no build info")
	}
	for _, m := range info.Deps {
		if m.Path == "sigs.k8s.io/kueue" && m.Replace != nil {
			return m.Replace.Path
		}
	}
	t.Fatal("sigs.k8s.io/kueue is not replaced by the engine's copy: run through toolchain/whatif.sh test")
	return ""
}

// releaseCRDs: the release's CustomResourceDefinitions, as gpu_queues/whatif/engine_input.py sends them.
func releaseCRDs(t *testing.T) []json.RawMessage {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(kueueDir(t), "config/components/crd/bases/*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("the release's CRDs: %v (%d files)", err, len(paths))
	}
	var out []json.RawMessage
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, doc)
	}
	return out
}

// releaseConfiguration: the release's own manager Configuration.
func releaseConfiguration(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(kueueDir(t), "config/components/manager/controller_manager_config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func rawJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// gpuStack: one flavor of nodes with gpus GPUs in all, one team (namespace team-a, LocalQueue
// gpu-queue) whose ClusterQueue has all of them, with the queueing strategy given.
func gpuStack(t *testing.T, gpus string, strategy kueue.QueueingStrategy) []json.RawMessage {
	t.Helper()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}}}
	rf := utiltestingapi.MakeResourceFlavor("gpu").NodeLabel("pool", "gpu").Obj()
	cq := utiltestingapi.MakeClusterQueue("team-a").QueueingStrategy(strategy).ResourceGroup(
		*utiltestingapi.MakeFlavorQuotas("gpu").Resource(corev1.ResourceCPU, "64").Resource(corev1.ResourceMemory, "256Gi").
			Resource("nvidia.com/gpu", gpus).Obj()).Obj()
	lq := utiltestingapi.MakeLocalQueue("gpu-queue", "team-a").ClusterQueue("team-a").Obj()
	out := []json.RawMessage{rawJSON(t, ns)}
	for _, o := range []any{rf, cq, lq} {
		out = append(out, withKind(t, o))
	}
	return out
}

// preemptingStack: gpuStack of gpus GPUs whose ClusterQueue preempts lower priorities within
// it, and the WorkloadPriorityClasses low (10) and high (1000).
func preemptingStack(t *testing.T, gpus string) []json.RawMessage {
	t.Helper()
	objs := gpuStack(t, gpus, kueue.BestEffortFIFO)
	cq := utiltestingapi.MakeClusterQueue("team-a").Preemption(kueue.ClusterQueuePreemption{
		WithinClusterQueue: kueue.PreemptionPolicyLowerPriority}).ResourceGroup(
		*utiltestingapi.MakeFlavorQuotas("gpu").Resource(corev1.ResourceCPU, "64").Resource(corev1.ResourceMemory, "256Gi").
			Resource("nvidia.com/gpu", gpus).Obj()).Obj()
	objs[2] = withKind(t, cq) // gpuStack's ClusterQueue, with preemption
	return append(objs, withKind(t, utiltestingapi.MakeWorkloadPriorityClass("low").PriorityValue(10).Obj()),
		withKind(t, utiltestingapi.MakeWorkloadPriorityClass("high").PriorityValue(1000).Obj()))
}

// withPriority: the job with Kueue's priority-class label naming class.
func withPriority(t *testing.T, j JobInput, class string) JobInput {
	t.Helper()
	j.Manifest = withLabel(t, j.Manifest, "kueue.x-k8s.io/priority-class", class)
	return j
}

// checkLowPreemptedByHigh replays low (8 GPUs in all from 0 s, for 100 s) on preemptingStack
// beside Job high (8 GPUs) at 60 s, which preempts it and runs 120 s: low runs 0-60 s, is
// evicted once, readmitted at 180 s and runs its whole 100 s again, to 280 s; high 60-180 s.
func checkLowPreemptedByHigh(t *testing.T, low JobInput, runtimes []json.RawMessage) {
	t.Helper()
	in := &Input{Objects: preemptingStack(t, "8"), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t), Nodes: gpuNodes(1),
		Jobs: []JobInput{withPriority(t, low, "low"), withPriority(t, gpuJob(t, 1, "high", "8", 60, 120), "high")}, Runtimes: runtimes}
	results, _ := replayed(t, in)
	if got, want := string(mustJSON(t, results[0].Intervals)), `[{"start":0,"end":60},{"start":180,"end":280}]`; got != want {
		t.Errorf("low ran %s, want %s", got, want)
	}
	if len(results[0].Evictions) != 1 {
		t.Errorf("low was evicted %d times, want once", len(results[0].Evictions))
	}
	if got, want := string(mustJSON(t, results[1].Intervals)), `[{"start":60,"end":180}]`; got != want {
		t.Errorf("high ran %s, want %s", got, want)
	}
}

// servingPods: what a Deployment and a StatefulSet of team-a share: their metadata (queued to
// gpu-queue), and the selector and template of their pods (app=name, gpus GPUs each).
func servingPods(name, gpus string) (metav1.ObjectMeta, *metav1.LabelSelector, corev1.PodTemplateSpec) {
	labels := map[string]string{"app": name}
	meta := metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpu-queue"}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "serve", Image: "serve:1", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("1"), "nvidia.com/gpu": mustParse(gpus)},
			Limits:   corev1.ResourceList{"nvidia.com/gpu": mustParse(gpus)}}}}}}
	return meta, &metav1.LabelSelector{MatchLabels: labels}, template
}

// withKind: a Kueue object's JSON with its apiVersion and kind, which the wrappers leave out.
func withKind(t *testing.T, obj any) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rawJSON(t, obj), &m); err != nil {
		t.Fatal(err)
	}
	m["apiVersion"] = kueue.SchemeGroupVersion.String()
	switch obj.(type) {
	case *kueue.ResourceFlavor:
		m["kind"] = "ResourceFlavor"
	case *kueue.ClusterQueue:
		m["kind"] = "ClusterQueue"
	case *kueue.LocalQueue:
		m["kind"] = "LocalQueue"
	case *kueue.WorkloadPriorityClass:
		m["kind"] = "WorkloadPriorityClass"
	default:
		t.Fatalf("no kind for %T", obj)
	}
	return rawJSON(t, m)
}

// gpuNodes: count nodes of the gpu flavor, each with 8 GPUs, 32 CPUs and 128Gi.
func gpuNodes(count int) []corev1.Node {
	var out []corev1.Node
	for i := range count {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-" + string(rune('a'+i)), Labels: map[string]string{"pool": "gpu"}}}
		n.Status.Allocatable = corev1.ResourceList{
			corev1.ResourceCPU: mustParse("32"), corev1.ResourceMemory: mustParse("128Gi"),
			"nvidia.com/gpu": mustParse("8"), corev1.ResourcePods: mustParse("110"),
		}
		out = append(out, n)
	}
	return out
}

// gpuJob: a Job of team-a's LocalQueue asking for gpus GPUs in one pod, submitted at `at`
// seconds, running for `runs` seconds (negative: until the end).
func gpuJob(t *testing.T, index int, name, gpus string, at, runs float64) JobInput {
	t.Helper()
	j := testingjob.MakeJob(name, "team-a").Queue("gpu-queue").Suspend(false).
		RequestAndLimit("nvidia.com/gpu", gpus).Request(corev1.ResourceCPU, "1").Obj()
	j.TypeMeta = metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"}
	return JobInput{Kind: "Job", Index: index, Manifest: rawJSON(t, j), SubmitAt: at, Duration: runs}
}

// replayed: the input replayed, its workload lines and summary.
func replayed(t *testing.T, in *Input) ([]Result, Summary) {
	t.Helper()
	s, err := newSim(in)
	if err != nil {
		t.Fatalf("newSim: %v", err)
	}
	if err := s.replay(); err != nil {
		t.Fatalf("replay: %v", err)
	}
	return s.results(), s.summary()
}

func mustParse(q string) resource.Quantity { return resource.MustParse(q) }

// runWant: what a truth expects of one workload: when it was admitted, the intervals it ran
// (as JSON), and how many pods were placed for its run.
type runWant struct {
	admitted float64
	ran      string
	pods     int
}

// checkRuns holds each workload of results to its want, in order; every one must have
// finished.
func checkRuns(t *testing.T, results []Result, want []runWant) {
	t.Helper()
	for i, w := range want {
		r := results[i]
		if r.Problem != "" {
			t.Fatalf("workload %d: %s", i, r.Problem)
		}
		if r.AdmittedAt == nil || *r.AdmittedAt != w.admitted {
			t.Errorf("workload %d admitted at %v, want %v", i, r.AdmittedAt, w.admitted)
		}
		if got, _ := json.Marshal(r.Intervals); string(got) != w.ran {
			t.Errorf("workload %d ran %s, want %s", i, got, w.ran)
		}
		if ran := ranStep(r); ran == nil || len(ran.Nodes) != w.pods {
			t.Errorf("workload %d: its pods were placed as %v, want %d pods", i, ran, w.pods)
		}
		if r.Workload == nil || !workloadFinished(r.Workload) {
			t.Errorf("workload %d: its Workload is not finished", i)
		}
	}
}
