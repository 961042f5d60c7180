package main

import (
	"k8s.io/component-base/featuregate"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// frozenGates answers Kueue's feature gates from a record taken once the engine has set them.
// Kueue asks them on every hot path (a workload's priority boost, for one, on each candidate
// of each preemption attempt) through utilfeature.DefaultFeatureGate, and the versioned gate
// answers each question by walking the feature's versions and recording that it was asked.
// The gates never change during a replay, so every answer is the one recorded. It replaces
// the public DefaultFeatureGate; every other method is the versioned gate's own.
type frozenGates struct {
	featuregate.FeatureGate
	answers map[featuregate.Feature]bool
}

func (g *frozenGates) Enabled(f featuregate.Feature) bool {
	if v, ok := g.answers[f]; ok {
		return v
	}
	return g.FeatureGate.Enabled(f)
}

// freezeGates records every known gate's answer and has DefaultFeatureGate answer from the
// record. The engine calls it once its gates are set and before any of Kueue's code runs;
// nothing sets a gate after it.
func freezeGates() {
	gates := utilfeature.DefaultMutableFeatureGate
	known := gates.GetAll()
	answers := make(map[featuregate.Feature]bool, len(known))
	for f := range known {
		answers[f] = gates.Enabled(f)
	}
	utilfeature.DefaultFeatureGate = &frozenGates{FeatureGate: gates, answers: answers}
}
