package main

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testNode: a node with labels, taints and allocatable (pods: 110 unless given).
func testNode(name string, labels map[string]string, taints []corev1.Taint, alloc map[corev1.ResourceName]string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Spec.Taints = taints
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: mustParse("110")}
	for r, q := range alloc {
		n.Status.Allocatable[r] = mustParse(q)
	}
	return n
}

// podSpec: one container requesting req (and limiting lim).
func podSpec(req, lim map[corev1.ResourceName]string) corev1.PodSpec {
	c := corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}}
	for r, q := range req {
		c.Resources.Requests[r] = mustParse(q)
	}
	for r, q := range lim {
		c.Resources.Limits[r] = mustParse(q)
	}
	return corev1.PodSpec{Containers: []corev1.Container{c}}
}

// names: the nodes of a placement, by name.
func names(c *cluster, p placement) []string {
	out := []string{}
	for _, i := range p {
		out = append(out, c.nodes[i].name)
	}
	return out
}

var gpu = corev1.ResourceName("nvidia.com/gpu")

func TestPlaceBindsEachPodToTheBestNodeThatFitsTiesByName(t *testing.T) {
	big := map[corev1.ResourceName]string{corev1.ResourceCPU: "8", corev1.ResourceMemory: "32Gi", gpu: "8"}
	cases := []struct {
		name  string
		nodes []corev1.Node
		spec  corev1.PodSpec
		count int
		want  []string // nil: they do not all fit
		why   string
	}{
		{"ties go by name", []corev1.Node{testNode("b", nil, nil, big), testNode("a", nil, nil, big)},
			podSpec(map[corev1.ResourceName]string{gpu: "4"}, nil), 1, []string{"a"}, ""},
		{"the second pod goes to the emptier node", []corev1.Node{testNode("b", nil, nil, big), testNode("a", nil, nil, big)},
			podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "2"}, nil), 2, []string{"a", "b"}, ""},
		{"a node that lacks the resource does not fit", []corev1.Node{
			testNode("a", nil, nil, map[corev1.ResourceName]string{corev1.ResourceCPU: "8"}), testNode("b", nil, nil, big)},
			podSpec(map[corev1.ResourceName]string{gpu: "1"}, nil), 1, []string{"b"}, ""},
		// Two of the three fit: they are bound and keep their node, as kube-scheduler binds
		// a job's pods one by one; the third waits, and the reason is the scheduler's.
		{"the pods that fit are bound, the rest wait", []corev1.Node{testNode("a", nil, nil, big)},
			podSpec(map[corev1.ResourceName]string{gpu: "4"}, nil), 3, []string{"a", "a"},
			"0/1 nodes are available for 1 pod(s): 1 Insufficient nvidia.com/gpu"},
		{"the pods limit counts", []corev1.Node{testNode("a", nil, nil, map[corev1.ResourceName]string{corev1.ResourcePods: "1", corev1.ResourceCPU: "8"})},
			podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "1"}, nil), 2, []string{"a"},
			"0/1 nodes are available for 1 pod(s): 1 Too many pods"},
		{"a limit stands in for a missing request", []corev1.Node{testNode("a", nil, nil, big)},
			podSpec(nil, map[corev1.ResourceName]string{gpu: "9"}), 1, []string{},
			"0/1 nodes are available for 1 pod(s): 1 Insufficient nvidia.com/gpu"},
		{"a node selector must match", []corev1.Node{testNode("a", map[string]string{"pool": "cpu"}, nil, big),
			testNode("b", map[string]string{"pool": "gpu"}, nil, big)},
			func() corev1.PodSpec {
				s := podSpec(nil, nil)
				s.NodeSelector = map[string]string{"pool": "gpu"}
				return s
			}(), 1, []string{"b"}, ""},
		{"nothing matches the node selector", []corev1.Node{testNode("a", map[string]string{"pool": "cpu"}, nil, big)},
			func() corev1.PodSpec {
				s := podSpec(nil, nil)
				s.NodeSelector = map[string]string{"pool": "gpu"}
				return s
			}(), 1, []string{}, "0/1 nodes are available for 1 pod(s): 1 node(s) didn't match the pod's node selector or tolerations"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(tc.nodes)
			spec := tc.spec
			p, why := c.place(&spec, tc.count, "")
			if got := names(c, p); !reflect.DeepEqual(got, tc.want) || why != tc.why {
				t.Fatalf("place = %v, %q; want %v, %q", got, why, tc.want, tc.why)
			}
			// What is bound holds its node; nothing else does.
			c.release(&spec, p, "")
			for _, n := range c.nodes {
				for r, u := range n.used {
					if u != 0 || n.pods != 0 || n.nonZero != [2]int64{} {
						t.Errorf("node %s keeps %d of resource %d and %d pods once released", n.name, u, r, n.pods)
					}
				}
			}
		})
	}
}

func TestReleaseFreesWhatAPlacementTook(t *testing.T) {
	c := newCluster([]corev1.Node{testNode("a", nil, nil, map[corev1.ResourceName]string{gpu: "8"})})
	spec := podSpec(map[corev1.ResourceName]string{gpu: "8"}, nil)
	p, _ := c.place(&spec, 1, "")
	if again, _ := c.place(&spec, 1, ""); again != nil {
		t.Fatalf("a full node took another 8 GPUs")
	}
	c.release(&spec, p, "")
	if again, why := c.place(&spec, 1, ""); again == nil {
		t.Fatalf("the released node does not fit again: %s", why)
	}
}

func TestUnschedulableNodesAreLeftOut(t *testing.T) {
	n := testNode("a", nil, nil, map[corev1.ResourceName]string{gpu: "8"})
	n.Spec.Unschedulable = true
	c := newCluster([]corev1.Node{n, testNode("b", nil, nil, map[corev1.ResourceName]string{gpu: "8"})})
	if len(c.nodes) != 1 || c.nodes[0].name != "b" {
		t.Fatalf("nodes: %v", c.nodes)
	}
}

func TestANodeMatchesSelectorsAffinityAndTaints(t *testing.T) {
	labels := map[string]string{"pool": "gpu", "zone": "z1"}
	noSchedule := corev1.Taint{Key: "gpu", Value: "yes", Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: "gpu", Value: "yes", Effect: corev1.TaintEffectNoExecute}
	prefer := corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}
	tolerateGPU := []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "yes"}}
	affinity := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	term := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	cases := []struct {
		name   string
		taints []corev1.Taint
		spec   corev1.PodSpec
		want   bool
	}{
		{"no constraints", nil, corev1.PodSpec{}, true},
		{"selector matches", nil, corev1.PodSpec{NodeSelector: map[string]string{"pool": "gpu"}}, true},
		{"selector differs", nil, corev1.PodSpec{NodeSelector: map[string]string{"pool": "cpu"}}, false},
		{"selector names a missing label", nil, corev1.PodSpec{NodeSelector: map[string]string{"rack": "1"}}, false},
		{"In", nil, corev1.PodSpec{Affinity: affinity(term("zone", corev1.NodeSelectorOpIn, "z0", "z1"))}, true},
		{"In, not in the values", nil, corev1.PodSpec{Affinity: affinity(term("zone", corev1.NodeSelectorOpIn, "z2"))}, false},
		{"NotIn", nil, corev1.PodSpec{Affinity: affinity(term("zone", corev1.NodeSelectorOpNotIn, "z1"))}, false},
		{"NotIn, a missing label", nil, corev1.PodSpec{Affinity: affinity(term("rack", corev1.NodeSelectorOpNotIn, "1"))}, true},
		{"Exists", nil, corev1.PodSpec{Affinity: affinity(term("zone", corev1.NodeSelectorOpExists))}, true},
		{"DoesNotExist", nil, corev1.PodSpec{Affinity: affinity(term("zone", corev1.NodeSelectorOpDoesNotExist))}, false},
		{"an operator it does not know", nil, corev1.PodSpec{Affinity: affinity(term("zone", corev1.NodeSelectorOpGt, "1"))}, false},
		{"terms are ORed", nil, corev1.PodSpec{Affinity: affinity(term("zone", corev1.NodeSelectorOpIn, "z9"),
			term("pool", corev1.NodeSelectorOpIn, "gpu"))}, true},
		{"a term without expressions matches nothing", nil, corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorTerm{})}, false},
		{"no terms: no constraint", nil, corev1.PodSpec{Affinity: affinity()}, true},
		{"NoSchedule untolerated", []corev1.Taint{noSchedule}, corev1.PodSpec{}, false},
		{"NoSchedule tolerated", []corev1.Taint{noSchedule}, corev1.PodSpec{Tolerations: tolerateGPU}, true},
		{"NoExecute untolerated", []corev1.Taint{noExecute}, corev1.PodSpec{}, false},
		{"PreferNoSchedule does not keep pods off", []corev1.Taint{prefer}, corev1.PodSpec{}, true},
		{"every taint needs its toleration", []corev1.Taint{noSchedule, {Key: "other", Effect: corev1.TaintEffectNoSchedule}},
			corev1.PodSpec{Tolerations: tolerateGPU}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster([]corev1.Node{testNode("a", labels, tc.taints, nil)})
			spec := tc.spec
			if got := c.nodes[0].matches(&spec); got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
			if got := len(c.matches(&spec)) == 1; got != tc.want {
				t.Errorf("cluster.matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodRequests(t *testing.T) {
	spec := corev1.PodSpec{
		Containers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("1")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: mustParse("2"), gpu: mustParse("2")}}},
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("500m")}}},
		},
		InitContainers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustParse("4"), corev1.ResourceMemory: mustParse("1Gi")}}},
		},
		Overhead: corev1.ResourceList{corev1.ResourceCPU: mustParse("100m")},
	}
	// cpu: the init container's 4 over the containers' 1.5, then the overhead; the GPU limit
	// stands in for its missing request; memory from the init container alone.
	want := map[corev1.ResourceName]int64{corev1.ResourceCPU: 4100, gpu: 2000, corev1.ResourceMemory: 1 << 30 * 1000}
	if got := podRequests(&spec); !reflect.DeepEqual(got, want) {
		t.Errorf("podRequests = %v, want %v", got, want)
	}
}

func TestLeastAllocatedCountsCPUAndMemoryAsTheSchedulerScoresThem(t *testing.T) {
	c := newCluster([]corev1.Node{testNode("a", nil, nil, map[corev1.ResourceName]string{corev1.ResourceCPU: "10", corev1.ResourceMemory: "10Gi", gpu: "8"})})
	spec := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "5", gpu: "8"}, nil)
	a := c.ask(&spec, "")
	// cpu half free after the pod (50); the container asks no memory, which the scheduler
	// counts at 200Mi: (10240-200)*100/10240 = 98; GPUs are not scored: (50+98)/2 = 74.
	if got := c.nodes[0].leastAllocated(&a); got != 74 {
		t.Errorf("leastAllocated = %d, want 74", got)
	}
	if a.nonZero != [2]int64{5000, defaultMemory} {
		t.Errorf("nonZero = %v", a.nonZero)
	}
}

func TestBalancedAllocationScoresTheChangeInBalance(t *testing.T) {
	alloc := map[corev1.ResourceName]string{corev1.ResourceCPU: "10", corev1.ResourceMemory: "10Gi"}
	c := newCluster([]corev1.Node{testNode("a", nil, nil, alloc)})
	even := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "5", corev1.ResourceMemory: "5Gi"}, nil)
	lopsided := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "8", corev1.ResourceMemory: "1Gi"}, nil)
	a, b := c.ask(&even, ""), c.ask(&lopsided, "")
	// Empty node: balance 100 before; 100 after the even pod (50+(50+100-100)/2 = 75); the
	// lopsided one leaves fractions 0.8 and 0.1: std 0.35, balance 65: 50+(50+65-100)/2 = 57.
	if got := c.nodes[0].balanced(&a); got != 75 {
		t.Errorf("even pod: %d, want 75", got)
	}
	if got := c.nodes[0].balanced(&b); got != 57 {
		t.Errorf("lopsided pod: %d, want 57", got)
	}
}

func TestNormalizedAsTheSchedulersDefault(t *testing.T) {
	cases := []struct {
		raw     []int64
		reverse bool
		want    []int64
	}{
		{[]int64{0, 0}, false, []int64{0, 0}},
		{[]int64{0, 0}, true, []int64{100, 100}},
		{[]int64{1, 3, 0}, false, []int64{33, 100, 0}},
		{[]int64{1, 3, 0}, true, []int64{67, 0, 100}},
	}
	for _, tc := range cases {
		if got := normalized(tc.raw, tc.reverse); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("normalized(%v, %v) = %v, want %v", tc.raw, tc.reverse, got, tc.want)
		}
	}
}

func TestBestWeighsPreferredTaintsAndAffinityOverRoom(t *testing.T) {
	alloc := map[corev1.ResourceName]string{corev1.ResourceCPU: "10", corev1.ResourceMemory: "10Gi", gpu: "8"}
	spot := corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}
	nodes := []corev1.Node{testNode("a", nil, []corev1.Taint{spot}, alloc), testNode("b", map[string]string{"rack": "r2"}, nil, alloc)}
	spec := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "1", gpu: "1"}, nil)
	c := newCluster(nodes)
	// a is first by name, but an untolerated PreferNoSchedule taint weighs 3 x 100 against it.
	if p, _ := c.place(&spec, 1, ""); !reflect.DeepEqual(names(c, p), []string{"b"}) {
		t.Errorf("the tainted node won: %v", names(c, p))
	}
	tolerated := spec
	tolerated.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
	c = newCluster(nodes)
	if p, _ := c.place(&tolerated, 1, ""); !reflect.DeepEqual(names(c, p), []string{"a"}) {
		t.Errorf("tolerated, the first by name should win: %v", names(c, p))
	}
	preferred := tolerated
	preferred.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r2"}}}}}}}}
	c = newCluster(nodes)
	if p, _ := c.place(&preferred, 1, ""); !reflect.DeepEqual(names(c, p), []string{"b"}) {
		t.Errorf("the preferred node lost: %v", names(c, p))
	}
}

func TestSettledPodsHoldTheirNode(t *testing.T) {
	alloc := map[corev1.ResourceName]string{corev1.ResourceCPU: "64", corev1.ResourceMemory: "512Gi", gpu: "8"}
	c := newCluster([]corev1.Node{testNode("a100-0", nil, nil, alloc), testNode("a100-1", nil, nil, alloc)})
	controller := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "500m", corev1.ResourceMemory: "512Mi"}, nil)
	c.settle([]corev1.PodSpec{controller})
	job := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "16", corev1.ResourceMemory: "128Gi", gpu: "4"}, nil)
	// The controller took a little of a100-0 (the first of two equal nodes), so the job's pod
	// scores higher on a100-1.
	if p, _ := c.place(&job, 1, ""); !reflect.DeepEqual(names(c, p), []string{"a100-1"}) {
		t.Errorf("placed on %v", names(c, p))
	}
}
