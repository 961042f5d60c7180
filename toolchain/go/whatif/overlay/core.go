// Added to sigs.k8s.io/kueue/pkg/controller/core at build time (go build -overlay, see
// toolchain/build.sh): the workload controller's clock and waitForPodsReady settings are
// unexported; the what-if engine sets them the way Kueue's manager does from its
// Configuration, with the engine's simulated clock.
package core

import (
	"k8s.io/utils/clock"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
)

// WhatIfWorkloadOptions: the options SetupControllers gives the workload controller for
// cfg, plus the simulated clock.
func WhatIfWorkloadOptions(cfg *configapi.Configuration, c clock.Clock) []Option {
	return []Option{
		WithWaitForPodsReady(waitForPodsReady(cfg.WaitForPodsReady)),
		WithWorkloadRetention(workloadRetention(cfg.ObjectRetentionPolicies)),
		WithAdmissionFairSharing(cfg.AdmissionFairSharing),
		func(r *WorkloadReconciler) { r.clock = c },
	}
}
