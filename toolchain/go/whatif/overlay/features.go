// Added to sigs.k8s.io/kueue/pkg/features at build time (go build -overlay, see
// toolchain/build.sh): Kueue asks its feature gates on every hot path (a workload's priority
// boost, for one, on each candidate of each preemption attempt), and the versioned gate
// answers each question by walking the feature's versions and recording that it was asked.
// The engine sets the gates once, from the manager Configuration, before it starts; it then
// freezes their answers here, and Enabled (rewrites.tsv) reads the frozen answer.
package features

import (
	"k8s.io/component-base/featuregate"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

var whatIfFrozen map[featuregate.Feature]bool

// WhatIfFreezeGates records every known gate's answer. The engine calls it once its gates are
// set and before any of Kueue's code runs; nothing sets a gate after it.
func WhatIfFreezeGates() {
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	frozen := make(map[featuregate.Feature]bool, len(known))
	for f := range known {
		frozen[f] = utilfeature.DefaultFeatureGate.Enabled(f)
	}
	whatIfFrozen = frozen
}

func whatIfEnabled(f featuregate.Feature) bool {
	if v, ok := whatIfFrozen[f]; ok {
		return v
	}
	return utilfeature.DefaultFeatureGate.Enabled(f)
}
