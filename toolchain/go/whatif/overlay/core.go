// Added to sigs.k8s.io/kueue/pkg/controller/core at build time (toolchain/build.sh
// whatif_kueue): the workload controller's options as Kueue's manager sets them from its
// Configuration, with the engine's simulated clock. No public API serves: SetupControllers
// builds the controller this way, but only onto a manager whose informers and goroutines run
// it (the engine steps it itself); the arguments of WithWaitForPodsReady and
// WithWorkloadRetention are of unexported types made by unexported functions; and no option
// sets the controller's clock.
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
