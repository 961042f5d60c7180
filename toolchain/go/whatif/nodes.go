package main

import (
	"encoding/json"
	"fmt"

	"math"
	"sort"
	"strings"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
)

// node is one node the stack declares, with what its running pods hold.
type node struct {
	name    string
	labels  map[string]string
	taints  []corev1.Taint
	alloc   []int64  // allocatable by resource index (cluster.index), milli-units; 0: none
	maxPods int64    // allocatable pods; -1: not said
	used    []int64  // by resource index, milli-units
	nonZero [2]int64 // cpu and memory as the scheduler's scoring counts them (ask.nonZero)
	pods    int64
	// groups: its pods that a Service selects, by the group (spreadGroup) they belong to.
	groups map[string]int64
}

// amount: a pod's request of one resource, by its index.
type amount struct {
	res int
	v   int64
}

// cluster places pods the way the default kube-scheduler would for these nodes: a node fits
// when its labels match the pod's nodeSelector (and required node affinity), the pod
// tolerates its NoSchedule and NoExecute taints and its free allocatable covers the pod's
// requests; among the nodes that fit, the one the default profile's scores put highest wins
// (best), the first by name among equals.
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
	if !n.selectedBy(spec.NodeSelector, requiredTerms(spec)) {
		return false
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

// requiredTerms: the pod's required node affinity terms (nil: none).
func requiredTerms(spec *corev1.PodSpec) []corev1.NodeSelectorTerm {
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil &&
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	return nil
}

// selectedBy: the node's labels match a pod's nodeSelector and required node affinity terms.
func (n *node) selectedBy(selector map[string]string, required []corev1.NodeSelectorTerm) bool {
	for k, v := range selector {
		if n.labels[k] != v {
			return false
		}
	}
	return len(required) == 0 || anyTermMatches(required, n.labels)
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

// ask: what one pod of a spec asks of a node, for the fit and for the scores.
type ask struct {
	req []amount // requests by resource index (the fit)
	// nonZero: cpu and memory requested as the scheduler scores them, a container without a
	// request counted at its defaults (100m, 200Mi).
	nonZero    [2]int64
	bestEffort bool // nothing requested at all: BalancedAllocation does not score it
	preferNo   []corev1.Toleration
	preferred  []corev1.PreferredSchedulingTerm
	// group: the group whose pods its spread counts ("" none); counted: every group it counts
	// in (spread.go, spreadIn); ownSpread: it has spread constraints of its own (then the
	// scheduler applies no default ones); selector and required: its node selector and
	// required node affinity terms (the spread's domains).
	group     string
	counted   []string
	ownSpread bool
	selector  map[string]string
	required  []corev1.NodeSelectorTerm
}

// The scheduler's defaults for a container without a cpu or memory request, when it scores
// (k8s.io/kubernetes pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest), in the
// engine's milli-units.
const (
	defaultMilliCPU = 100
	defaultMemory   = 200 * 1024 * 1024 * 1000
)

func (c *cluster) ask(spec *corev1.PodSpec, group string) ask {
	a := ask{req: c.request(spec), ownSpread: len(spec.TopologySpreadConstraints) > 0,
		selector: spec.NodeSelector, required: requiredTerms(spec)}
	if group != "" {
		a.counted = strings.Split(group, spreadAlso)
		a.group = a.counted[0]
	}
	a.nonZero = nonZeroRequests(spec)
	a.bestEffort = a.nonZero == [2]int64{}
	for _, t := range spec.Tolerations {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			a.preferNo = append(a.preferNo, t)
		}
	}
	if af := spec.Affinity; af != nil && af.NodeAffinity != nil {
		a.preferred = af.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}
	return a
}

// nonZeroRequests: a pod's cpu and memory as the scheduler's scoring counts them.
func nonZeroRequests(spec *corev1.PodSpec) [2]int64 {
	one := func(cs []corev1.Container) [][2]int64 {
		out := make([][2]int64, 0, len(cs))
		for _, c := range cs {
			var r [2]int64
			for i, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				q, ok := c.Resources.Requests[name]
				if !ok {
					q, ok = c.Resources.Limits[name]
				}
				switch {
				case ok:
					r[i] = q.MilliValue()
				case i == 0:
					r[i] = defaultMilliCPU
				default:
					r[i] = defaultMemory
				}
			}
			out = append(out, r)
		}
		return out
	}
	var sum [2]int64
	for _, r := range one(spec.Containers) {
		sum[0], sum[1] = sum[0]+r[0], sum[1]+r[1]
	}
	for _, r := range one(spec.InitContainers) {
		sum[0], sum[1] = max(sum[0], r[0]), max(sum[1], r[1])
	}
	for i, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := spec.Overhead[name]; ok {
			sum[i] += q.MilliValue()
		}
	}
	return sum
}

// The default profile's scoring plugins that tell these nodes apart, with their weights:
// NodeResourcesFit (LeastAllocated over cpu and memory), NodeResourcesBalancedAllocation,
// TaintToleration, NodeAffinity (preferred terms) and, for pods a Service selects,
// PodTopologySpread (spread.go). ImageLocality and InterPodAffinity give every node the same
// score for these pods (no images, no pod affinity), so they cannot change the choice.
const (
	weightFit      = 1
	weightBalanced = 1
	weightTaints   = 3
	weightAffinity = 2
	maxNodeScore   = 100
)

// leastAllocated: NodeResourcesFit's LeastAllocated score with the pod placed, 0-100.
func (n *node) leastAllocated(a *ask) int64 {
	var total, weights int64
	for res := range 2 { // cpu and memory: indexes 0 and 1 (newCluster)
		capacity := n.alloc[res]
		if capacity == 0 {
			continue
		}
		weights++
		if after := n.nonZero[res] + a.nonZero[res]; after <= capacity {
			total += (capacity - after) * maxNodeScore / capacity
		}
	}
	if weights == 0 {
		return 0
	}
	return total / weights
}

// balance: how evenly cpu and memory are used (BalancedAllocation's score of one state).
func (n *node) balance(used [2]int64) int64 {
	var fractions []float64
	for res := range 2 {
		if n.alloc[res] == 0 {
			continue
		}
		f := float64(used[res]) / float64(n.alloc[res])
		if f > 1 {
			f = 1
		}
		fractions = append(fractions, f)
	}
	std := 0.0
	if len(fractions) == 2 {
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	}
	return int64((1 - std) * float64(maxNodeScore))
}

// balanced: BalancedAllocation's score, the balance's change the pod makes, 50-100.
func (n *node) balanced(a *ask) int64 {
	if a.bestEffort {
		return 0
	}
	with := n.balance([2]int64{n.nonZero[0] + a.nonZero[0], n.nonZero[1] + a.nonZero[1]})
	without := n.balance(n.nonZero)
	return maxNodeScore/2 + (maxNodeScore/2+with-without)/2
}

// untoleratedPreferNo: TaintToleration's raw score, the node's PreferNoSchedule taints the
// pod does not tolerate.
func (n *node) untoleratedPreferNo(a *ask) int64 {
	var count int64
	for i := range n.taints {
		if t := &n.taints[i]; t.Effect == corev1.TaintEffectPreferNoSchedule && !tolerates(a.preferNo, t) {
			count++
		}
	}
	return count
}

// preferredWeight: NodeAffinity's raw score, the weights of the preferred terms the node
// matches.
func (n *node) preferredWeight(a *ask) int64 {
	var sum int64
	for _, term := range a.preferred {
		if term.Weight != 0 && anyTermMatches([]corev1.NodeSelectorTerm{term.Preference}, n.labels) {
			sum += int64(term.Weight)
		}
	}
	return sum
}

// normalized: the scheduler's default normalisation of raw scores over the feasible nodes
// (the highest becomes 100; reversed, the highest 0), 0-100.
func normalized(raw []int64, reverse bool) []int64 {
	var highest int64
	for _, v := range raw {
		highest = max(highest, v)
	}
	out := make([]int64, len(raw))
	for i, v := range raw {
		switch {
		case highest == 0 && reverse:
			out[i] = maxNodeScore
		case highest == 0:
			out[i] = 0
		case reverse:
			out[i] = maxNodeScore - maxNodeScore*v/highest
		default:
			out[i] = maxNodeScore * v / highest
		}
	}
	return out
}

// best: among the candidate nodes that fit the pod, the one the default profile scores
// highest, the first by name among equals (as the sandbox's scheduler breaks ties:
// toolchain/go/kubernetes/scheduler); -1 when none fits.
func (c *cluster) best(cands []int, a *ask) int {
	var feasible []int
	for _, j := range cands {
		if c.nodes[j].fits(a.req) {
			feasible = append(feasible, j)
		}
	}
	if len(feasible) <= 1 { // the scheduler does not score a single node
		if len(feasible) == 0 {
			return -1
		}
		return feasible[0]
	}
	taints, affinity := make([]int64, len(feasible)), make([]int64, len(feasible))
	for k, j := range feasible {
		taints[k], affinity[k] = c.nodes[j].untoleratedPreferNo(a), c.nodes[j].preferredWeight(a)
	}
	taints, affinity = normalized(taints, true), normalized(affinity, false)
	spread := c.spreadScores(feasible, a)
	best, bestScore := -1, int64(-1)
	for k, j := range feasible { // in name order: the first of equals stays
		n := c.nodes[j]
		s := weightFit*n.leastAllocated(a) + weightBalanced*n.balanced(a) +
			weightTaints*taints[k] + weightAffinity*affinity[k]
		if spread != nil {
			s += weightSpread * spread[k]
		}
		if s > bestScore {
			best, bestScore = j, s
		}
	}
	return best
}

func (n *node) take(a *ask, sign int64) {
	for _, r := range a.req {
		n.used[r.res] += sign * r.v
	}
	n.nonZero[0] += sign * a.nonZero[0]
	n.nonZero[1] += sign * a.nonZero[1]
	n.pods += sign
	for _, g := range a.counted {
		if n.groups == nil {
			n.groups = map[string]int64{}
		}
		n.groups[g] += sign
	}
}

// place binds up to count pods of spec, one after another, each to the node the scheduler
// would choose, as kube-scheduler binds a job's pods one by one: the pods that fit keep their
// nodes while the rest wait (no gang scheduling). It returns the nodes taken, and why the
// rest do not fit when they do not all. group: the Service-selected group the pods belong to
// ("" none).
func (c *cluster) place(spec *corev1.PodSpec, count int, group string) (placement, string) {
	a := c.ask(spec, group)
	cands := c.matches(spec)
	var p placement
	for len(p) < count {
		j := c.best(cands, &a)
		if j < 0 {
			return p, c.why(cands, a.req, count-len(p))
		}
		c.nodes[j].take(&a, 1)
		p = append(p, j)
	}
	return p, ""
}

// settle places the pods the cluster runs before any job (one each; a pod no node takes
// stays pending, as it would), and keeps them there for the whole replay; where each went.
func (c *cluster) settle(pods []corev1.PodSpec) []placement {
	out := make([]placement, len(pods))
	for i := range pods {
		out[i], _ = c.place(&pods[i], 1, "")
	}
	return out
}

// nodeNames: the nodes of a placement, one per pod, in name order.
func (c *cluster) nodeNames(p placement) []string {
	out := make([]string, 0, len(p))
	for _, j := range p {
		out = append(out, c.nodes[j].name)
	}
	sort.Strings(out)
	return out
}

func (c *cluster) release(spec *corev1.PodSpec, p placement, group string) {
	a := c.ask(spec, group)
	for _, j := range p {
		c.nodes[j].take(&a, -1)
	}
}

// why says, in the scheduler's manner, why the pods do not fit.
func (c *cluster) why(cands []int, req []amount, count int) string {
	mismatch, short, full := len(c.nodes)-len(cands), map[corev1.ResourceName]int{}, 0
	for _, j := range cands {
		n := c.nodes[j]
		if n.maxPods >= 0 && n.pods+1 > n.maxPods {
			full++
		}
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
	if full > 0 {
		parts = append(parts, fmt.Sprintf("%d Too many pods", full))
	}
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%d Insufficient %s", short[corev1.ResourceName(name)], name))
	}
	msg := fmt.Sprintf("0/%d nodes are available for %d pod(s)", len(c.nodes), count)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, ", ")
	}
	return msg
}
