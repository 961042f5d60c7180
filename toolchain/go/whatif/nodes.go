package main

import (
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// node is one node the stack declares, with what its running pods hold.
type node struct {
	name    string
	labels  map[string]string
	taints  []corev1.Taint
	alloc   []int64 // allocatable by resource index (cluster.index), milli-units; 0: none
	maxPods int64   // allocatable pods; -1: not said
	used    []int64 // by resource index, milli-units
	pods    int64
}

// amount: a pod's request of one resource, by its index.
type amount struct {
	res int
	v   int64
}

// cluster places pods the way the default kube-scheduler would for these nodes: a node fits
// when its labels match the pod's nodeSelector (and required node affinity), the pod
// tolerates its NoSchedule and NoExecute taints and its free allocatable covers the pod's
// requests; among the nodes that fit, the least allocated (cpu and memory, as
// NodeResourcesFit's default LeastAllocated) wins, ties by name.
type cluster struct {
	nodes []*node
	// matching: the nodes (indexes, in name order) whose labels and taints admit a pod spec's
	// node selector, required node affinity and tolerations, by those constraints (nodes'
	// labels and taints never change in a replay; a job's constraints do, when Kueue injects
	// its flavor's on admission).
	matching map[string][]int
	index    map[corev1.ResourceName]int // resource name -> index into nodes' alloc and used
	names    []corev1.ResourceName
}

// resource: the index of a resource name, a new one for a name no node has (nothing of it
// is allocatable anywhere).
func (c *cluster) resource(name corev1.ResourceName) int {
	if i, ok := c.index[name]; ok {
		return i
	}
	c.index[name] = len(c.names)
	c.names = append(c.names, name)
	for _, n := range c.nodes {
		n.alloc, n.used = append(n.alloc, 0), append(n.used, 0)
	}
	return len(c.names) - 1
}

// request: a pod spec's requests (podRequests) by resource index, in name order.
func (c *cluster) request(spec *corev1.PodSpec) []amount {
	req := podRequests(spec)
	names := make([]string, 0, len(req))
	for name := range req {
		names = append(names, string(name))
	}
	sort.Strings(names)
	out := make([]amount, 0, len(req))
	for _, name := range names {
		out = append(out, amount{c.resource(corev1.ResourceName(name)), req[corev1.ResourceName(name)]})
	}
	return out
}

func newCluster(nodes []corev1.Node) *cluster {
	c := &cluster{matching: map[string][]int{}, index: map[corev1.ResourceName]int{}}
	var allocatable []corev1.ResourceList
	for i := range nodes {
		n := &nodes[i]
		if n.Spec.Unschedulable {
			continue
		}
		nd := &node{name: n.Name, labels: n.Labels, taints: n.Spec.Taints, maxPods: -1}
		if pods, ok := n.Status.Allocatable[corev1.ResourcePods]; ok {
			nd.maxPods = pods.Value()
		}
		c.nodes = append(c.nodes, nd)
		allocatable = append(allocatable, n.Status.Allocatable)
	}
	c.resource(corev1.ResourceCPU) // 0 and 1: score() counts on it
	c.resource(corev1.ResourceMemory)
	for i, n := range c.nodes {
		for name, q := range allocatable[i] {
			n.alloc[c.resource(name)] = q.MilliValue()
		}
	}
	sort.Slice(c.nodes, func(i, j int) bool { return c.nodes[i].name < c.nodes[j].name })
	return c
}

// placement is where a job's pods run: node index per pod.
type placement []int

func podRequests(spec *corev1.PodSpec) map[corev1.ResourceName]int64 {
	req := map[corev1.ResourceName]int64{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			req[name] += q.MilliValue()
		}
		for name, q := range c.Resources.Limits {
			if _, set := c.Resources.Requests[name]; !set {
				req[name] += q.MilliValue() // limits stand in for missing requests
			}
		}
	}
	for _, c := range spec.InitContainers {
		init := map[corev1.ResourceName]int64{}
		for name, q := range c.Resources.Requests {
			init[name] = q.MilliValue()
		}
		for name, v := range init {
			if v > req[name] {
				req[name] = v
			}
		}
	}
	for name, q := range spec.Overhead {
		req[name] += q.MilliValue()
	}
	return req
}

func tolerates(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), taint, false) {
			return true
		}
	}
	return false
}

// matches: the nodes that admit spec's constraints (matching, computed once for each).
func (c *cluster) matches(spec *corev1.PodSpec) []int {
	var required *corev1.NodeSelector
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	keyJSON, err := json.Marshal(struct {
		S map[string]string
		A *corev1.NodeSelector
		T []corev1.Toleration
	}{spec.NodeSelector, required, spec.Tolerations})
	key := string(keyJSON)
	if err != nil { // not expected of these types; then nothing is kept
		key = ""
	}
	if found, ok := c.matching[key]; ok && key != "" {
		return found
	}
	found := []int{}
	for j, n := range c.nodes {
		if n.matches(spec) {
			found = append(found, j)
		}
	}
	if key != "" {
		c.matching[key] = found
	}
	return found
}

func (n *node) matches(spec *corev1.PodSpec) bool {
	for k, v := range spec.NodeSelector {
		if n.labels[k] != v {
			return false
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil &&
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) > 0 && !anyTermMatches(terms, n.labels) {
			return false
		}
	}
	for i := range n.taints {
		t := &n.taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !tolerates(spec.Tolerations, t) {
			return false
		}
	}
	return true
}

func anyTermMatches(terms []corev1.NodeSelectorTerm, labels map[string]string) bool {
	for _, term := range terms {
		ok := true
		for _, e := range term.MatchExpressions {
			v, has := labels[e.Key]
			switch e.Operator {
			case corev1.NodeSelectorOpIn:
				ok = ok && has && contains(e.Values, v)
			case corev1.NodeSelectorOpNotIn:
				ok = ok && !(has && contains(e.Values, v))
			case corev1.NodeSelectorOpExists:
				ok = ok && has
			case corev1.NodeSelectorOpDoesNotExist:
				ok = ok && !has
			default:
				ok = false
			}
		}
		if ok && len(term.MatchExpressions) > 0 {
			return true
		}
	}
	return false
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

func (n *node) free(res int) int64 { return n.alloc[res] - n.used[res] }

func (n *node) fits(req []amount) bool {
	if n.maxPods >= 0 && n.pods+1 > n.maxPods {
		return false
	}
	for _, a := range req {
		if a.v != 0 && n.free(a.res) < a.v {
			return false
		}
	}
	return true
}

// score: LeastAllocated over cpu and memory after placing the pod, 0-100.
func (n *node) score(req []amount) int64 {
	var total int64
	for res := range 2 { // cpu and memory: indexes 0 and 1 (newCluster)
		capacity := n.alloc[res]
		if capacity == 0 {
			continue
		}
		after := n.used[res]
		for _, a := range req {
			if a.res == res {
				after += a.v
			}
		}
		if after > capacity {
			continue
		}
		total += (capacity - after) * 100 / capacity
	}
	return total / 2
}

func (n *node) take(req []amount, sign int64) {
	for _, a := range req {
		n.used[a.res] += sign * a.v
	}
	n.pods += sign
}

// place finds a node for each of count pods of spec, all or none; nil and the reason when
// they do not all fit.
func (c *cluster) place(spec *corev1.PodSpec, count int) (placement, string) {
	req := c.request(spec)
	cands := c.matches(spec)
	var p placement
	for i := 0; i < count; i++ {
		best, bestScore := -1, int64(-1)
		for _, j := range cands {
			n := c.nodes[j]
			if !n.fits(req) {
				continue
			}
			if s := n.score(req); s > bestScore {
				best, bestScore = j, s
			}
		}
		if best < 0 {
			c.release(spec, p)
			return nil, c.why(cands, req, count)
		}
		c.nodes[best].take(req, 1)
		p = append(p, best)
	}
	return p, ""
}

func (c *cluster) release(spec *corev1.PodSpec, p placement) {
	req := c.request(spec)
	for _, j := range p {
		c.nodes[j].take(req, -1)
	}
}

// why says, in the scheduler's manner, why the pods do not fit.
func (c *cluster) why(cands []int, req []amount, count int) string {
	mismatch, short := len(c.nodes)-len(cands), map[corev1.ResourceName]int{}
	for _, j := range cands {
		n := c.nodes[j]
		for _, a := range req {
			if a.v > 0 && n.free(a.res) < a.v {
				short[c.names[a.res]]++
			}
		}
	}
	var parts []string
	if mismatch > 0 {
		parts = append(parts, fmt.Sprintf("%d node(s) didn't match the pod's node selector or tolerations", mismatch))
	}
	names := make([]string, 0, len(short))
	for name := range short {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%d Insufficient %s", short[corev1.ResourceName(name)], name))
	}
	msg := fmt.Sprintf("0/%d nodes are available for %d pod(s)", len(c.nodes), count)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, ", ")
	}
	return msg
}
