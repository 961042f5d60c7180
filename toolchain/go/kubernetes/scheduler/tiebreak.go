package main

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// The two tie-breakers' names, as the scheduler configuration enables them.
const (
	HighName = "TieBreakByNameHigh"
	LowName  = "TieBreakByNameLow"
)

// base: one digit of a node's rank. A score is at most fwk.MaxNodeScore (100), so one plugin
// can tell 101 ranks apart; two, as the high and the low digit of the rank in base 101, tell
// 10,201 apart. With weights 101 (high) and 1 (low) their sum is at most 10,200, less than one
// point of the default plugins' total once each default weight is multiplied by 10,201.
const base = fwk.MaxNodeScore + 1

// MaxRanked: how many feasible nodes the tie-breakers can order; beyond it, ties among the
// nodes past it are left to the scheduler.
const MaxRanked = base * base

type digit func(rank int64) int64

func high(rank int64) int64 { return rank / base }
func low(rank int64) int64  { return rank % base }

// tieBreak scores every feasible node 0, then, normalising, by its place in name order: the
// first name the most.
type tieBreak struct {
	name  string
	digit digit
}

var (
	_ fwk.ScorePlugin     = &tieBreak{}
	_ fwk.ScoreExtensions = &tieBreak{}
)

func newTieBreak(d digit) frameworkruntime.PluginFactory {
	return func(_ context.Context, _ runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
		name := LowName
		if isHigh(d) {
			name = HighName
		}
		return &tieBreak{name: name, digit: d}, nil
	}
}

// isHigh: whether d is the high digit (it is 1 at the rank `base`, where the low one is 0).
func isHigh(d digit) bool { return d(base) == 1 }

func (t *tieBreak) Name() string { return t.name }

func (t *tieBreak) Score(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, nil
}

func (t *tieBreak) ScoreExtensions() fwk.ScoreExtensions { return t }

// NormalizeScore gives each node MaxNodeScore minus its rank's digit, the rank being its
// place among the scored nodes in name order (0 first).
func (t *tieBreak) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	for i, rank := range ranks(scores) {
		scores[i].Score = fwk.MaxNodeScore - t.digit(min(rank, MaxRanked-1))
	}
	return nil
}

// ranks: each score's node's place in name order.
func ranks(scores fwk.NodeScoreList) []int64 {
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return scores[order[a]].Name < scores[order[b]].Name })
	out := make([]int64, len(scores))
	for rank, i := range order {
		out[i] = int64(rank)
	}
	return out
}
