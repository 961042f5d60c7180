package main

import (
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// stopSuspended: the pods of the Jobs Kueue suspended (an eviction: a preemption, a drain)
// stop, job by job in the mix's order, once Kueue is done with the instant; until then they
// run and the Workload keeps its quota.
//
// On a cluster a suspended Job's pods are not gone at once, and neither is its quota: the Job
// controller deletes them and their containers have their grace period, and Kueue's stop
// (which restores the Job's pod template) is refused by the API server until the Job
// controller has reset the Job's startTime, so Kueue retries it with backoff and releases the
// quota only then. Its scheduler meanwhile runs every cycle its heads allow and its requeue
// batch (on the sandbox's real Kueue the stop took about a second, a few dozen cycles).
// Cross-check seed 602 turned on it: vision/j046 preempted vision/j048 within its
// ClusterQueue, and before j048's pods were gone nlp's queue came round to nlp/j040, which took
// the quota nlp/j033's end had freed; j046 no longer fitted and j048 was admitted again. The
// engine used to stop the pods at once and admit j046.
func (s *sim) stopSuspended() error {
	for _, i := range slices.Sorted(maps.Keys(s.stopping)) {
		delete(s.stopping, i)
		j := s.jobs[i]
		var bj batchv1.Job
		if err := s.get(j.key, &bj); err != nil {
			if apierrors.IsNotFound(err) {
				s.stop(j)
				continue
			}
			return err
		}
		if j.finished || bj.Spec.Suspend == nil || !*bj.Spec.Suspend {
			continue // unsuspended again before its pods stopped: they run on
		}
		s.stop(j)
		delete(s.waiting, i)
		bj.Status.Active, bj.Status.Ready = 0, ptr(int32(0))
		if err := s.cl.Status().Update(s.ctx, &bj); err != nil {
			return err
		}
	}
	return nil
}
