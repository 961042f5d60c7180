package main

import (
	"fmt"

	"github.com/go-logr/logr"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// node is one node the stack declares, with what its running pods hold.
type node struct {
	name        string
	labels      map[string]string
	taints      []corev1.Taint
	allocatable corev1.ResourceList
	used        map[corev1.ResourceName]int64 // milli-units
	pods        int64
}

// cluster places pods the way the default kube-scheduler would for these nodes: a node fits
// when its labels match the pod's nodeSelector (and required node affinity), the pod
// tolerates its NoSchedule and NoExecute taints and its free allocatable covers the pod's
// requests; among the nodes that fit, the least allocated (cpu and memory, as
// NodeResourcesFit's default LeastAllocated) wins, ties by name.
type cluster struct {
	nodes []*node
}

func newCluster(nodes []corev1.Node) *cluster {
	c := &cluster{}
	for i := range nodes {
		n := &nodes[i]
		if n.Spec.Unschedulable {
			continue
		}
		c.nodes = append(c.nodes, &node{
			name:        n.Name,
			labels:      n.Labels,
			taints:      n.Spec.Taints,
			allocatable: n.Status.Allocatable,
			used:        map[corev1.ResourceName]int64{},
		})
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

func (n *node) free(name corev1.ResourceName) int64 {
	q, ok := n.allocatable[name]
	if !ok {
		return 0
	}
	return q.MilliValue() - n.used[name]
}

func (n *node) fits(req map[corev1.ResourceName]int64) bool {
	if pods, ok := n.allocatable[corev1.ResourcePods]; ok && n.pods+1 > pods.Value() {
		return false
	}
	for name, v := range req {
		if v == 0 {
			continue
		}
		if n.free(name) < v {
			return false
		}
	}
	return true
}

// score: LeastAllocated over cpu and memory after placing the pod, 0-100.
func (n *node) score(req map[corev1.ResourceName]int64) int64 {
	var total int64
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		capq, ok := n.allocatable[name]
		capacity := capq.MilliValue()
		if !ok || capacity == 0 {
			continue
		}
		after := n.used[name] + req[name]
		if after > capacity {
			continue
		}
		total += (capacity - after) * 100 / capacity
	}
	return total / 2
}

func (n *node) take(req map[corev1.ResourceName]int64, sign int64) {
	for name, v := range req {
		n.used[name] += sign * v
	}
	n.pods += sign
}

// place finds a node for each of count pods of spec, all or none; nil and the reason when
// they do not all fit.
func (c *cluster) place(spec *corev1.PodSpec, count int) (placement, string) {
	req := podRequests(spec)
	var p placement
	for i := 0; i < count; i++ {
		best, bestScore := -1, int64(-1)
		for j, n := range c.nodes {
			if !n.matches(spec) || !n.fits(req) {
				continue
			}
			if s := n.score(req); s > bestScore {
				best, bestScore = j, s
			}
		}
		if best < 0 {
			c.release(spec, p)
			return nil, c.why(spec, req, count)
		}
		c.nodes[best].take(req, 1)
		p = append(p, best)
	}
	return p, ""
}

func (c *cluster) release(spec *corev1.PodSpec, p placement) {
	req := podRequests(spec)
	for _, j := range p {
		c.nodes[j].take(req, -1)
	}
}

// why says, in the scheduler's manner, why the pods do not fit.
func (c *cluster) why(spec *corev1.PodSpec, req map[corev1.ResourceName]int64, count int) string {
	mismatch, short := 0, map[corev1.ResourceName]int{}
	for _, n := range c.nodes {
		if !n.matches(spec) {
			mismatch++
			continue
		}
		for name, v := range req {
			if v > 0 && n.free(name) < v {
				short[name]++
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
