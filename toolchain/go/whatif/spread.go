package main

// kube-scheduler's PodTopologySpread score for pods a Service selects, as the pinned release
// (k8s.io/kubernetes v1.36.3, pkg/scheduler/framework/plugins/podtopologyspread) scores them.
// The plugin is reimplemented, not imported: k8s.io/kubernetes is not in the engine's module
// graph (nodes.go reimplements the other scores for the same reason), and the plugin reads
// Services and pods through a framework handle's informers and snapshot.
//
// The facts it rests on:
//   - plugin.go: with no pluginConfig (the default profile; the sandbox's scheduler sets none)
//     the defaulting type is System, whose constraints are kubernetes.io/hostname maxSkew 3 and
//     topology.kubernetes.io/zone maxSkew 5, both ScheduleAnyway: they score, never filter.
//   - common.go, buildDefaultConstraints: the system constraints apply only to a pod with no
//     topologySpreadConstraints of its own, and only when helper.DefaultSelector is not empty:
//     the merged selectors of the Services in the pod's namespace whose (non-nil) selector
//     matches the pod's labels, and of its controlling ReplicationController, ReplicaSet or
//     StatefulSet: a JobSet's pods (its headless Service; their controller is a Job), a
//     StatefulSet's (its own selector), a Deployment's (its ReplicaSet's), an LWS's (its
//     headless Service's name label with the controlling StatefulSet's: the leaders of every
//     group, or one group's pods, its leader among them). Its pods are counted by that selector
//     in the pod's namespace (countPodsMatchSelector), so one pod can count in two groups.
//   - scoring.go, PreScore: with system defaulting no node is ignored for missing a key
//     (requireAllTopologies is false). A zone's count sums the matching pods of every node
//     whose zone value some feasible node has, skipping nodes the pod's required node affinity
//     (nodeSelector and required terms) does not match (the constraints' NodeAffinityPolicy is
//     Honor, NodeTaintsPolicy Ignore; NodeInclusionPolicyInPodTopologySpread is GA and locked
//     on). A node without the zone label counts under the value "", a domain like any when
//     its size is taken.
//   - each constraint's weight is ln(size+2): size the feasible nodes for the hostname key,
//     the distinct values of the key among the feasible nodes for the zone.
//   - Score: for each constraint whose key the node has, count*weight + (maxSkew-1), the count
//     the node's own matching pods for the hostname key (not its label's value), its zone's
//     for the zone; the sum rounded half away from zero (math.Round).
//   - NormalizeScore over the feasible nodes: 100 each when the highest is 0, else
//     100*(highest+lowest-score)/highest in integers.
//   - pkg/scheduler/apis/config/v1/default_plugins.go: the plugin's weight is 2.

import (
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const weightSpread = 2

// spreadConstraint: one of the system default constraints.
type spreadConstraint struct {
	key     string
	maxSkew int64
}

var systemSpread = []spreadConstraint{
	{corev1.LabelHostname, 3},
	{corev1.LabelTopologyZone, 5},
}

// spreadGroup: the pods one selector picks out, as a key ("" none): a JobSet's Service's
// (jobset.go), a StatefulSet's, a Deployment's ReplicaSet's, an LWS's leaders' or one of its
// groups' (lws.go). The jobs of the mix carry no pod labels another job's selects.
func spreadGroup(ns, name string) string { return ns + "/" + name }

// spreadAlso joins the groups a pod counts in: the first is the one its own spread counts.
const spreadAlso = "\n"

// spreadIn: the spread of a pod scored by group and counted in others too (an LWS leader's).
func spreadIn(group string, others ...string) string {
	return strings.Join(append([]string{group}, others...), spreadAlso)
}

// spreadScores: PodTopologySpread's normalised scores of the feasible nodes for a pod of
// group a.group; nil when the plugin does not score the pod (no Service selects it, or it has
// spread constraints of its own, which the engine does not model).
func (c *cluster) spreadScores(feasible []int, a *ask) []int64 {
	if a.group == "" || a.ownSpread {
		return nil
	}
	weights := make([]float64, len(systemSpread))
	domains := make([]map[string]int64, len(systemSpread))
	for i, con := range systemSpread {
		if con.key == corev1.LabelHostname {
			weights[i] = math.Log(float64(len(feasible) + 2))
			continue
		}
		domains[i] = map[string]int64{}
		for _, j := range feasible {
			domains[i][c.nodes[j].labels[con.key]] = 0
		}
		weights[i] = math.Log(float64(len(domains[i]) + 2))
		for _, n := range c.nodes {
			v := n.labels[con.key]
			if _, ok := domains[i][v]; ok && n.selectedBy(a.selector, a.required) {
				domains[i][v] += n.groups[a.group]
			}
		}
	}
	raw := make([]int64, len(feasible))
	for k, j := range feasible {
		n := c.nodes[j]
		score := 0.0
		for i, con := range systemSpread {
			v, ok := n.labels[con.key]
			if !ok {
				continue
			}
			count := domains[i][v]
			if con.key == corev1.LabelHostname {
				count = n.groups[a.group]
			}
			score += float64(count)*weights[i] + float64(con.maxSkew-1)
		}
		raw[k] = int64(math.Round(score))
	}
	lowest, highest := int64(math.MaxInt64), int64(0)
	for _, v := range raw {
		lowest, highest = min(lowest, v), max(highest, v)
	}
	out := make([]int64, len(raw))
	for k, v := range raw {
		if highest == 0 {
			out[k] = maxNodeScore
		} else {
			out[k] = maxNodeScore * (highest + lowest - v) / highest
		}
	}
	return out
}

// services: the Services the jobs' controllers made, by namespace and name, each with the
// group its selector picks out. A JobSet's headless Service is named by its subdomain; its
// controller creates none when one of that name exists already (createHeadlessSvcIfNecessary),
// and then no Service selects the second JobSet's pods.
type services map[types.NamespacedName]string

// create: the Service `name` selecting `group`, unless one of that name exists; the group a
// Service of that name selects after.
func (sv services) create(name types.NamespacedName, group string) string {
	if have, ok := sv[name]; ok {
		return have
	}
	sv[name] = group
	return group
}
