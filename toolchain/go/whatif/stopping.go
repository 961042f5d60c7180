package main

import (
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// stopWhatRan: once Kueue is done with the instant, the pods it stopped in it stop: the
// suspended Jobs' (stopSuspended), then the deleted pods (stopDeleted).
func (s *sim) stopWhatRan() error {
	if err := s.stopSuspended(); err != nil {
		return err
	}
	return s.stopDeleted()
}

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

// kubeletHold: the engine's finalizer on every pod it makes, standing for the pod's kubelet.
// A pod on a node that is deleted (Kueue's stop of an evicted Pod, pod group, Deployment
// replica or LWS group; a serving owner deleted at its duration) is not gone when the delete
// returns: the API server only marks it, its kubelet stops its containers and confirms, and
// the pod is removed then. Until then it runs, holds its node, and Kueue's pod integration
// counts it active (IsActive: a Running pod, deletionTimestamp or not, without
// FastQuotaReleaseInPodIntegration), so its evicted Workload keeps its quota.
//
// Cross-check seed 707 turned on it: nlp/j028 preempted a replica of vision/j009 (a
// Deployment) at 4h34m. On the sandbox the replica's Workload held its quota for about a
// tenth of a second; the ReplicaSet's new replica was tried meanwhile, needed a preemption
// with no candidates and was parked as inadmissible, and j028 took the quota when it was
// freed. The engine used to free it before any cycle, so the new replica (its ClusterQueue
// now the lower share) came first, j028 preempted it again, and the replay never came to
// rest.
const kubeletHold = "gpuq.whatif/kubelet"

// terminating: whether a pod being deleted still runs on its node, its kubelet not yet done; if so it
// stops once Kueue is done with the instant (stopDeleted). One that never reached a node goes
// at once, as the API server removes an unscheduled pod without waiting for a kubelet.
func (s *sim) terminating(p *corev1.Pod, placed bool) (bool, error) {
	if !controllerutil.ContainsFinalizer(p, kubeletHold) {
		return false, nil
	}
	if placed {
		s.dying[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = true
		return true, nil
	}
	return false, s.letGo(p)
}

// letGo: the kubelet confirms the pod's end; the API server removes it once Kueue's finalizer
// is gone too.
func (s *sim) letGo(p *corev1.Pod) error {
	if !controllerutil.RemoveFinalizer(p, kubeletHold) {
		return nil
	}
	return s.cl.Update(s.ctx, p)
}

// stopDeleted: the deleted pods that ran on stop, pod by pod in name order, once Kueue is done
// with the instant (kubeletHold says why).
func (s *sim) stopDeleted() error {
	for _, k := range slices.SortedFunc(maps.Keys(s.dying), byKey) {
		delete(s.dying, k)
		var p corev1.Pod
		if err := s.get(k, &p); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if err := s.letGo(&p); err != nil {
			return err
		}
	}
	return nil
}
