// Added to sigs.k8s.io/kueue/pkg/scheduler at build time (go build -overlay, see
// toolchain/build.sh): the what-if engine drives Kueue's scheduler one cycle at a time on its
// own goroutine, as Kueue's own scheduler tests do from inside the package.
package scheduler

import (
	"context"

	"sigs.k8s.io/kueue/pkg/util/routine"
)

// WhatIfCycle runs one scheduling cycle. The caller has made sure the queues have heads, so
// the cycle does not block.
func (s *Scheduler) WhatIfCycle(ctx context.Context) {
	s.schedule(ctx)
}

// WhatIfSynchronousAdmission makes admissions finish before WhatIfCycle returns: the
// admission routine still runs on its own goroutine, and after() releases the wait.
func (s *Scheduler) WhatIfSynchronousAdmission(before, after func()) {
	s.setAdmissionRoutineWrapper(routine.NewWrapper(before, after))
}
