package main

import (
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/features"
)

// Admission fair sharing (the Configuration's admissionFairSharing; a ClusterQueue's
// admissionScope orders its LocalQueues' workloads by their usage). Kueue keeps each
// LocalQueue's usage in three places: the scheduler's entry penalties on admission, the
// workload controller's settlement (both run here anyway), and its LocalQueue controller,
// which folds the admitted usage in and decays it every usageSamplingInterval, and folds a
// pending penalty in a batch period after a workload of the queue changes. So with admission
// fair sharing on, the engine runs Kueue's LocalQueue controller too, on the simulated clock:
// its reconciles are a kind of their own (kindLocalQueue), its requeues timers like any
// controller's, and a workload's change asks for one a batch period later, as Kueue's
// workload handler for the LocalQueue controller does (constants.UpdatesBatchPeriod, 1 s).
// Off, nothing of this runs and a replay is as before.

// lqBatch: Kueue's UpdatesBatchPeriod, after which a workload's change reaches its
// LocalQueue's reconcile.
const lqBatch = time.Second

// afsEnabled: whether Kueue runs admission fair sharing with this Configuration.
func afsEnabled(cfg *configapi.Configuration) bool {
	return cfg.AdmissionFairSharing != nil && features.Enabled(features.AdmissionFairSharing)
}

// newLocalQueueController: Kueue's LocalQueue reconciler on the simulated clock, when
// admission fair sharing is on.
func (s *sim) newLocalQueueController(cfg *configapi.Configuration) {
	if !afsEnabled(cfg) {
		return
	}
	s.lqRec = core.NewLocalQueueReconciler(s.cl, s.queues, s.cache,
		core.WithAdmissionFairSharingConfig(cfg.AdmissionFairSharing), core.WithClock(s.clock))
	s.lqDue = map[types.NamespacedName]float64{}
}

// lqWatcher: the workload controller's watcher that Kueue's LocalQueue controller is.
type lqWatcher struct{ s *sim }

func (w lqWatcher) NotifyWorkloadUpdate(oldWl, newWl *kueue.Workload) {
	for _, wl := range []*kueue.Workload{oldWl, newWl} {
		if wl != nil && wl.Name != "" {
			w.s.reconcileQueueLater(types.NamespacedName{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)})
		}
	}
}

// reconcileQueueLater: the LocalQueue's reconcile, a batch period from now.
func (s *sim) reconcileQueueLater(key types.NamespacedName) {
	if s.lqRec != nil {
		s.reconcileQueueAt(key, s.now+lqBatch.Seconds())
	}
}

// reconcileQueueAt: the LocalQueue's reconcile at `at`, as a controller's delaying queue
// holds it: one wait per queue, the earliest asked for (lqTimerDue drops the others).
func (s *sim) reconcileQueueAt(key types.NamespacedName, at float64) {
	if due, ok := s.lqDue[key]; ok && due <= at && due >= s.now {
		return
	}
	s.lqDue[key] = at
	s.push(ev{at: at, kind: evTimer, tgt: target{kind: kindLocalQueue, key: key}})
}

// lqTimerDue: whether a LocalQueue's timer is the wait its queue holds (not one an earlier
// wait replaced); it is over then.
func (s *sim) lqTimerDue(e ev) bool {
	if s.lqDue[e.tgt.key] != e.at {
		return false
	}
	delete(s.lqDue, e.tgt.key)
	return true
}

// startLocalQueues: with admission fair sharing, the ClusterQueues' Active condition as
// Kueue's ClusterQueue controller writes it (the LocalQueue controller reads it, and the
// engine runs no ClusterQueue controller otherwise), and every LocalQueue's first reconcile,
// as its create event has it.
func (s *sim) startLocalQueues() error {
	if s.lqRec == nil {
		return nil
	}
	var cqs kueue.ClusterQueueList
	if err := s.base.List(s.ctx, &cqs); err != nil {
		return err
	}
	for i := range cqs.Items {
		if err := s.markActive(&cqs.Items[i]); err != nil {
			return err
		}
	}
	return s.reconcileLocalQueues(func(*kueue.LocalQueue) bool { return true })
}

// reconcileLocalQueues: the LocalQueues `of` picks, queued for their controller by name.
func (s *sim) reconcileLocalQueues(of func(*kueue.LocalQueue) bool) error {
	keys, err := s.localQueues(of)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(keys) {
		s.lqQ.add(k)
	}
	return nil
}

// localQueues: the LocalQueues `of` picks, by namespace and name.
func (s *sim) localQueues(of func(*kueue.LocalQueue) bool) (map[types.NamespacedName]bool, error) {
	var lqs kueue.LocalQueueList
	if err := s.base.List(s.ctx, &lqs); err != nil {
		return nil, err
	}
	keys := map[types.NamespacedName]bool{}
	for i := range lqs.Items {
		if of(&lqs.Items[i]) {
			keys[types.NamespacedName{Namespace: lqs.Items[i].Namespace, Name: lqs.Items[i].Name}] = true
		}
	}
	return keys, nil
}

// markActive: the ClusterQueue's Active condition as the cache has it (stopped or not); its
// LocalQueues reconciled when it moved, as Kueue's handler for ClusterQueue updates does.
func (s *sim) markActive(cq *kueue.ClusterQueue) error {
	if s.lqRec == nil {
		return nil
	}
	cond := metav1.Condition{Type: kueue.ClusterQueueActive, Status: metav1.ConditionTrue, Reason: "Ready", Message: "Can admit new workloads"}
	if !s.cache.ClusterQueueActive(kueue.ClusterQueueReference(cq.Name)) {
		cond = metav1.Condition{Type: kueue.ClusterQueueActive, Status: metav1.ConditionFalse, Reason: "Stopped", Message: "Can't admit new workloads"}
	}
	if c := apimeta.FindStatusCondition(cq.Status.Conditions, cond.Type); c != nil && c.Status == cond.Status {
		return nil
	}
	apimeta.SetStatusCondition(&cq.Status.Conditions, cond)
	if err := s.cl.Status().Update(s.ctx, cq); err != nil {
		return err
	}
	return s.reconcileLocalQueues(func(lq *kueue.LocalQueue) bool { return string(lq.Spec.ClusterQueue) == cq.Name })
}
