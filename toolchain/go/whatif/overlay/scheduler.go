// Added to sigs.k8s.io/kueue/pkg/scheduler at build time (toolchain/build.sh whatif_kueue):
// the what-if engine drives Kueue's scheduler one cycle at a time on its own goroutine, as
// Kueue's own scheduler tests do from inside the package. No public API serves: Start runs
// cycles in a loop on a goroutine of its own, one cycle (schedule) and the admission routine's
// wrapper (setAdmissionRoutineWrapper) are unexported, and no option makes admissions finish
// within their cycle, and nothing says which workloads a cycle took as heads. The two orderings
// are for the rewrites in rewrites.tsv.
package scheduler

import (
	"cmp"
	"context"
	"reflect"
	"slices"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/util/routine"
	"sigs.k8s.io/kueue/pkg/workload"
)

// WhatIfCycle runs one scheduling cycle. The caller has made sure the queues have heads, so
// the cycle does not block.
func (s *Scheduler) WhatIfCycle(ctx context.Context) {
	s.schedule(ctx)
}

// WhatIfSynchronousAdmission makes admissions finish before WhatIfCycle returns, and in the
// cycle's own order: the admission routine runs inline, between before() and after(), where a
// cluster's Kueue starts a goroutine for each (whose writes reach the API server in that
// order but for a race). On goroutines, one cycle's admissions were written in an order the
// Go runtime chose, and the engine's watch hands Workloads out in write order.
func (s *Scheduler) WhatIfSynchronousAdmission(before, after func()) {
	s.setAdmissionRoutineWrapper(whatIfInline{before, after})
}

type whatIfInline struct{ before, after func() }

func (w whatIfInline) Run(f func()) {
	w.before()
	defer w.after()
	f()
}

var _ routine.Wrapper = whatIfInline{}

// whatIfByUID: a cycle's heads in the order of their Workloads' UIDs, which the engine gives
// in mix order (rewrites.tsv puts it in schedule()), remembered for WhatIfHeads. A head is a
// workload.Info (a Head that embeds one from v0.19): its Obj, found by name, works for both.
func whatIfByUID[T any](heads []T) []T {
	obj := func(h T) *kueue.Workload {
		return reflect.ValueOf(h).FieldByName("Obj").Interface().(*kueue.Workload)
	}
	slices.SortStableFunc(heads, func(a, b T) int { return cmp.Compare(obj(a).UID, obj(b).UID) })
	whatIfHeads = whatIfHeads[:0]
	for _, h := range heads {
		whatIfHeads = append(whatIfHeads, workload.Key(obj(h)))
	}
	return heads
}

// whatIfHeads: the workloads the last cycle took as heads (the engine runs one scheduler, one
// cycle at a time, on its own goroutine), for its test of rest (flavorsLeft in the engine's
// queues.go).
var whatIfHeads []workload.Reference

// WhatIfHeads: the workloads the last WhatIfCycle took as heads.
func (s *Scheduler) WhatIfHeads() []workload.Reference {
	return whatIfHeads
}

// whatIfEntriesByUID: a fair-sharing tournament's candidates in the order of their
// Workloads' UIDs (rewrites.tsv puts it in runTournament()).
func whatIfEntriesByUID(candidates []*entry) {
	slices.SortStableFunc(candidates, func(a, b *entry) int { return cmp.Compare(a.Obj.UID, b.Obj.UID) })
}
