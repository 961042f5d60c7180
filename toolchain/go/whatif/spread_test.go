package main

import (
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	testingjob "sigs.k8s.io/kueue/pkg/util/testingjobs/job"
	testingjobset "sigs.k8s.io/kueue/pkg/util/testingjobs/jobset"
)

// spreadNodes: named nodes of the gpu flavor (8 GPUs, 32 CPUs, 128Gi), each with its
// kubernetes.io/hostname label (as the stack's nodes have: gpu_queues/whatif/nodes.py) and the
// zone given, if any.
func spreadNodes(zones map[string]string, names ...string) []corev1.Node {
	var out []corev1.Node
	for _, name := range names {
		labels := map[string]string{"pool": "gpu", corev1.LabelHostname: name}
		if z, ok := zones[name]; ok {
			labels[corev1.LabelTopologyZone] = z
		}
		out = append(out, testNode(name, labels, nil, map[corev1.ResourceName]string{
			corev1.ResourceCPU: "32", corev1.ResourceMemory: "128Gi", gpu: "8"}))
	}
	return out
}

// The seed 601 case, on two equal nodes a and b (32 CPUs, 128Gi each); a runs a pod of 8 CPUs
// and 32Gi. A group's pods ask 4 CPUs, 16Gi and a GPU each.
//
// Pod 1: LeastAllocated a (20*100/32=62, 80*100/128=62) 62, b (28/32, 112/128) 87;
// BalancedAllocation 75 on both (cpu and memory stay in step); the spread raw score is
// 0*ln(4)+(3-1) = 2 on both (no zone label: that constraint is left out), normalised 100 on
// both: b, 162+200 against 137+200.
// Pod 2: a 62+75 = 137, b (24/32, 96/128) 75+75 = 150: without the spread b again. With it:
// raw a 2, b round(1*ln(4)+2) = round(3.386) = 3; normalised 100*(3+2-s)/3: a 100, b 66;
// weighted 2: a 137+200 = 337, b 150+132 = 282: a.
func TestAServiceSelectedGroupSpreadsOverEqualNodes(t *testing.T) {
	spec := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "16Gi", gpu: "1"}, nil)
	load := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "8", corev1.ResourceMemory: "32Gi"}, nil)
	for _, tc := range []struct {
		group string
		want  []string
	}{
		{"team-a/js", []string{"b", "a"}},
		{"", []string{"b", "b"}}, // no Service selects them: resources alone
	} {
		c := newCluster(spreadNodes(nil, "a", "b"))
		c.settle([]corev1.PodSpec{load})
		p, _ := c.place(&spec, 2, tc.group)
		if got := names(c, p); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("group %q: placed on %v, want %v", tc.group, got, tc.want)
		}
		c.release(&spec, p, tc.group)
		if c.nodes[0].groups[tc.group]+c.nodes[1].groups[tc.group] != 0 {
			t.Errorf("group %q: released, the nodes still count %v, %v", tc.group, c.nodes[0].groups, c.nodes[1].groups)
		}
	}
}

// Zones: a and b in z1, c in z2, all empty; pods of 1 CPU and 1Gi. Pod 1: every raw score
// 0+2 (hostname) + 0+4 (zone) = 6, normalised 100: a, first by name. Pod 2: hostname weight
// ln(3+2) = 1.609, zone weight ln(2 zones+2) = 1.386; raw a round(1.609+2+1.386+4) = 9,
// b round(2+1.386+4) = 7, c 6; normalised 100*(9+6-s)/9: a 66, b 88, c 100. Resources:
// LeastAllocated a (30*100/32=93, 126*100/128=98) 95, b and c (31/32, 127/128) 97;
// BalancedAllocation 74 on all three (a: 50+(50+97-98)/2, b, c: 50+(50+98-100)/2). c:
// 97+74+200 = 371 against b 347, a 301 (without zones b and c would tie: b). Pod 3: raw a 9,
// b 7, c round(1.609+2+1*1.386+4) = 9; normalised a 77, b 100, c 77: b (97+74+200).
func TestAGroupSpreadsOverZonesToo(t *testing.T) {
	spec := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "1Gi"}, nil)
	c := newCluster(spreadNodes(map[string]string{"a": "z1", "b": "z1", "c": "z2"}, "a", "b", "c"))
	p, _ := c.place(&spec, 3, "team-a/js")
	if got, want := names(c, p), []string{"a", "c", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("placed on %v, want %v", got, want)
	}
}

// A zone's count honours the pod's required node affinity (NodeAffinityPolicy Honor): a
// group's pod on a node the pod's nodeSelector does not select (another pod set's, say a
// leader on a CPU node) is not counted in that node's zone. a (z1) and b (z2) are GPU nodes, x
// (z2) a CPU node holding the group's leader. For a GPU pod, hostname weight ln(2+2) = 1.386,
// zone weight ln(2 zones+2) = 1.386: raw a = 0+2 + 0+4 = 6, b = 6 as well (x's pod left out),
// normalised 100 and 100; counted, b would be round(2+1.386+4) = 7 and score 100*(7+6-7)/7 =
// 85. Placed, the first goes to a (a tie), the second to b (raw a round(1.386+2+1.386+4) = 9,
// b 6).
func TestAZonesCountHonoursTheNodeSelector(t *testing.T) {
	nodes := spreadNodes(map[string]string{"a": "z1", "b": "z2"}, "a", "b")
	nodes = append(nodes, testNode("x", map[string]string{"pool": "cpu", corev1.LabelHostname: "x", corev1.LabelTopologyZone: "z2"},
		nil, map[corev1.ResourceName]string{corev1.ResourceCPU: "32", corev1.ResourceMemory: "128Gi"}))
	c := newCluster(nodes)
	leader := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "1"}, nil)
	leader.NodeSelector = map[string]string{"pool": "cpu"}
	c.place(&leader, 1, "team-a/js")
	spec := podSpec(map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "1Gi"}, nil)
	spec.NodeSelector = map[string]string{"pool": "gpu"}
	a := c.ask(&spec, "team-a/js")
	feasible := c.matches(&spec)
	if got, want := c.spreadScores(feasible, &a), []int64{100, 100}; !reflect.DeepEqual(got, want) {
		t.Errorf("spread scores of a, b = %v, want %v (x's pod not counted in z2)", got, want)
	}
	p, _ := c.place(&spec, 2, "team-a/js")
	if got, want := names(c, p), []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("placed on %v, want %v", got, want)
	}
}

// spreadJobSet: a JobSet of team-a's LocalQueue, one replicated job of `pods` pods asking 4
// CPUs, 16Gi and a GPU each; dns: its network.enableDNSHostnames (nil: not given).
func spreadJobSet(t *testing.T, index int, name string, pods int32, dns *bool) JobInput {
	t.Helper()
	js := testingjobset.MakeJobSet(name, "team-a").Queue("gpu-queue").SetTypeMeta().ReplicatedJobs(
		testingjobset.ReplicatedJobRequirements{Name: "workers", Replicas: 1, Parallelism: pods, Completions: pods}).
		Request("workers", corev1.ResourceCPU, "4").Request("workers", corev1.ResourceMemory, "16Gi").
		RequestAndLimit("workers", gpu, "1").Obj()
	if dns != nil {
		js.Spec.Network = &jobsetapi.Network{EnableDNSHostnames: dns}
	}
	return JobInput{Kind: "JobSet", Index: index, Manifest: rawJSON(t, js), SubmitAt: 10, Duration: 100}
}

// The seed 601 case end to end: gpu-a runs a Job of 8 CPUs and 32Gi from 0; at 10 a group of
// two pods of 4 CPUs, 16Gi and a GPU each. A JobSet's pods (its headless Service selects them)
// spread: gpu-b, then gpu-a (TestAServiceSelectedGroupSpreadsOverEqualNodes has the numbers);
// with enableDNSHostnames false (no Service) and a Job's pods, both on gpu-b.
func TestAJobSetsPodsSpreadAJobsDoNot(t *testing.T) {
	load := testingjob.MakeJob("load", "team-a").Queue("gpu-queue").Suspend(false).
		Request(corev1.ResourceCPU, "8").Request(corev1.ResourceMemory, "32Gi").Obj()
	load.TypeMeta = metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"}
	job := testingjob.MakeJob("pair", "team-a").Queue("gpu-queue").Suspend(false).Parallelism(2).Completions(2).
		Request(corev1.ResourceCPU, "4").Request(corev1.ResourceMemory, "16Gi").RequestAndLimit(gpu, "1").Obj()
	job.TypeMeta = load.TypeMeta
	off := false
	for _, tc := range []struct {
		name  string
		group JobInput
		want  []string
	}{
		{"JobSet", spreadJobSet(t, 1, "pair", 2, nil), []string{"gpu-a", "gpu-b"}},
		{"JobSet, enableDNSHostnames true", spreadJobSet(t, 1, "pair", 2, ptr(true)), []string{"gpu-a", "gpu-b"}},
		{"JobSet, enableDNSHostnames false", spreadJobSet(t, 1, "pair", 2, &off), []string{"gpu-b", "gpu-b"}},
		{"Job", JobInput{Kind: "Job", Index: 1, Manifest: rawJSON(t, job), SubmitAt: 10, Duration: 100}, []string{"gpu-b", "gpu-b"}},
	} {
		in := &Input{Objects: gpuStack(t, "16", kueue.BestEffortFIFO), CRDs: releaseCRDs(t),
			Configuration: releaseConfiguration(t), Nodes: spreadNodes(nil, "gpu-a", "gpu-b"),
			Jobs: []JobInput{{Kind: "Job", Index: 0, Manifest: rawJSON(t, load), SubmitAt: 0, Duration: -1}, tc.group}}
		results, _ := replayed(t, in)
		if r := ranStep(results[0]); r == nil || !reflect.DeepEqual(r.Nodes, []string{"gpu-a"}) {
			t.Fatalf("%s: the load ran %+v, want on gpu-a", tc.name, r)
		}
		if r := ranStep(results[1]); r == nil || !reflect.DeepEqual(r.Nodes, tc.want) {
			t.Errorf("%s: ran %+v, want on %v", tc.name, r, tc.want)
		}
	}
}

// A JobSet's controller makes its headless Service only when none of that name is there: a
// second JobSet of the same subdomain gets none, and no Service selects its pods.
func TestASubdomainsServiceSelectsTheFirstJobSetsPods(t *testing.T) {
	sv := services{}
	shared := types.NamespacedName{Namespace: "team-a", Name: "shared"}
	if got := sv.create(shared, spreadGroup("team-a", "first")); got != "team-a/first" {
		t.Errorf("the first JobSet's Service selects %q, want team-a/first", got)
	}
	if got := sv.create(shared, spreadGroup("team-a", "second")); got != "team-a/first" {
		t.Errorf("the Service named shared selects %q after the second, want team-a/first", got)
	}
	name, group, made := jobSetKind{}.headlessService(&jobsetapi.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "js", Namespace: "team-a"}})
	if !made || name != (types.NamespacedName{Namespace: "team-a", Name: "js"}) || group != "team-a/js" {
		t.Errorf("a JobSet without network: Service %v selecting %q (made %v), want team-a/js selecting team-a/js", name, group, made)
	}
}
