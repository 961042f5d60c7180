package main

import (
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	kptr "k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// ChangeInput is a change of the stack at an instant of the replay (Input.Changes): the
// Cohorts, ClusterQueues and LocalQueues whose spec it changes, as the program renders them
// for the changed stack (gpu_queues/whatif/changes.py says what a change may alter).
type ChangeInput struct {
	At      float64           `json:"at"`
	Objects []json.RawMessage `json:"objects"`
}

// addChanges: the stack's changes, each to be made at its instant, after the instant's ends
// and before its submissions (evChange).
func (s *sim) addChanges(changes []ChangeInput) error {
	for i, c := range changes {
		objs, err := decodeObjects(s.scheme, c.Objects)
		if err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
		for _, o := range objs {
			switch o.(type) {
			case *kueue.Cohort, *kueue.ClusterQueue, *kueue.LocalQueue:
			default:
				return fmt.Errorf("change %d: %s %s is not a Cohort, ClusterQueue or LocalQueue", i, o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
			}
			if err := s.defaults.apply(s.scheme, o); err != nil {
				return fmt.Errorf("change %d: defaulting %s: %w", i, o.GetName(), err)
			}
		}
		s.stackChanges = append(s.stackChanges, objs)
		s.push(ev{at: c.At, kind: evChange, idx: i})
	}
	return nil
}

// changeStack: the change's objects take their new spec, as `pulumi up` would write them, and
// Kueue hears of each as its Cohort, ClusterQueue and LocalQueue controllers tell its cache and
// queue manager on an update event; the workloads of a queue whose stopPolicy changed are
// reconciled, as Kueue's workload controller's queue handler has them (that is where
// HoldAndDrain evicts, and where a queue started again requeues what it stopped).
func (s *sim) changeStack(objs []ctrl.Object) error {
	log := logr.Discard()
	for _, o := range objs {
		key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
		switch want := o.(type) {
		case *kueue.Cohort:
			cur := &kueue.Cohort{}
			if err := s.respec(key, cur, func() { cur.Spec = want.Spec }); err != nil {
				return err
			}
			if err := s.cache.AddOrUpdateCohort(cur); err != nil {
				return fmt.Errorf("cohort %s: %w", cur.Name, err)
			}
			s.queues.AddOrUpdateCohort(s.ctx, cur)
		case *kueue.ClusterQueue:
			cur := &kueue.ClusterQueue{}
			var stopped bool
			if err := s.respec(key, cur, func() {
				stopped = !kptr.Equal(cur.Spec.StopPolicy, want.Spec.StopPolicy)
				cur.Spec = want.Spec
			}); err != nil {
				return err
			}
			if err := s.cache.UpdateClusterQueue(log, cur); err != nil {
				return fmt.Errorf("clusterqueue %s: %w", cur.Name, err)
			}
			if err := s.queues.UpdateClusterQueue(s.ctx, cur, true); err != nil {
				return fmt.Errorf("clusterqueue %s: %w", cur.Name, err)
			}
			if err := s.markActive(cur); err != nil {
				return err
			}
			if stopped {
				if err := s.reconcileQueued(func(lq *kueue.LocalQueue) bool { return string(lq.Spec.ClusterQueue) == cur.Name }); err != nil {
					return err
				}
			}
		case *kueue.LocalQueue:
			if err := s.changeLocalQueue(key, want); err != nil {
				return err
			}
		}
	}
	return nil
}

// changeLocalQueue: a LocalQueue's new spec, told to the queue manager and the cache as
// Kueue's LocalQueue controller does on an update event (by how its stopPolicy moved).
func (s *sim) changeLocalQueue(key types.NamespacedName, want *kueue.LocalQueue) error {
	cur := &kueue.LocalQueue{}
	var old *kueue.LocalQueue
	if err := s.respec(key, cur, func() { old = cur.DeepCopy(); cur.Spec = want.Spec }); err != nil {
		return err
	}
	log := logr.Discard()
	was, is := kptr.Deref(old.Spec.StopPolicy, kueue.None), kptr.Deref(cur.Spec.StopPolicy, kueue.None)
	var err error
	switch {
	case was == is:
		if is == kueue.None {
			err = s.queues.UpdateLocalQueue(log, cur)
		}
		if err == nil {
			err = s.cache.UpdateLocalQueue(old, cur)
		}
	case is == kueue.None:
		if old.Spec.ClusterQueue != cur.Spec.ClusterQueue {
			err = s.cache.UpdateLocalQueue(old, cur)
		}
		if err == nil {
			err = s.queues.AddLocalQueue(s.ctx, cur)
		}
	default:
		s.queues.DeleteLocalQueue(log, old)
	}
	if err != nil {
		return fmt.Errorf("localqueue %s: %w", key, err)
	}
	if was != is {
		return s.reconcileQueued(func(lq *kueue.LocalQueue) bool { return lq.Namespace == cur.Namespace && lq.Name == cur.Name })
	}
	return nil
}

// respec: the object read, changed by set, written back (an update the informers see).
func (s *sim) respec(key types.NamespacedName, cur ctrl.Object, set func()) error {
	if err := s.get(key, cur); err != nil {
		return fmt.Errorf("the change's %s: %w", key, err)
	}
	before := cur.DeepCopyObject()
	set()
	if equality.Semantic.DeepEqual(before, cur) {
		return nil
	}
	return s.cl.Update(s.ctx, cur)
}

// reconcileQueued: every workload submitted to a LocalQueue that `of` picks, queued for the
// workload controller once the scheduler has had its cycles at the instant (afterCycles): on a
// cluster the queue manager hears of the queue's change in memory and wakes the scheduler at
// once, while the workload controller's reconciles go through the API server, so a workload
// that waited in a queue started again is admitted before the ones its drain evicted are
// back in it (seen on the sandbox, every run).
func (s *sim) reconcileQueued(of func(*kueue.LocalQueue) bool) error {
	picked, err := s.localQueues(of)
	if err != nil {
		return err
	}
	var wls kueue.WorkloadList
	if err := s.base.List(s.ctx, &wls); err != nil {
		return err
	}
	// The in-memory client lists in map order: by name, so that a replay is the same each run.
	keys := map[types.NamespacedName]bool{}
	for i := range wls.Items {
		wl := &wls.Items[i]
		if picked[types.NamespacedName{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)}] {
			keys[types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}] = true
		}
	}
	for _, k := range sortedKeys(keys) {
		s.afterCycles.add(k)
	}
	return nil
}
