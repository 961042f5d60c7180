package main

import (
	"context"
	"os"
	"reflect"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// reads: what the in-memory client last returned for each object, handed out again (a deep
// copy) until the object is written. The client serializes the whole object to JSON and back
// on every Get (a third of a replay's time); what it returns depends only on what it stores,
// and every write goes through the engine's interceptor, which forgets the object first. So a
// read gives exactly what the client would give, without the round trip.
//
// GPUQ_WHATIF_PLAIN_CLIENT=1 turns this and the engine's patch path (patch.go) off: every
// read and patch goes to the in-memory client as it is. The toolchain tests replay a mix
// both ways and require the same answer.
//
// What is kept is what was read or written lately: objs, since the last turn (the engine
// turns once an instant is settled), and old, the turn before, whose objects move back to
// objs when read again and are dropped at the next turn when not. Without it the cache held
// a third copy of every Job and Workload of the replay to its end, finished ones included
// (the client's store and the informers' last-seen copies are the others), and a read after
// a drop goes to the client: the same answer, one round trip.
type reads struct {
	mu   sync.Mutex
	objs map[types.NamespacedName]map[reflect.Type]ctrl.Object
	old  map[types.NamespacedName]map[reflect.Type]ctrl.Object
	off  bool
}

func newReads() *reads {
	return &reads{objs: map[types.NamespacedName]map[reflect.Type]ctrl.Object{}, off: os.Getenv("GPUQ_WHATIF_PLAIN_CLIENT") != ""}
}

// turn: objects neither read nor written since the turn before last are dropped.
func (r *reads) turn() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.old, r.objs = r.objs, map[types.NamespacedName]map[reflect.Type]ctrl.Object{}
}

// keptLocked: the object kept for key as type t, one kept at the turn before moved back
// (with its other types) to this turn's.
func (r *reads) keptLocked(key types.NamespacedName, t reflect.Type) (ctrl.Object, bool) {
	if byType, ok := r.old[key]; ok {
		delete(r.old, key)
		if r.objs[key] == nil {
			r.objs[key] = byType
		} else {
			for kt, o := range byType {
				if _, ok := r.objs[key][kt]; !ok {
					r.objs[key][kt] = o
				}
			}
		}
	}
	o, ok := r.objs[key][t]
	return o, ok
}

// forgetLocked: nothing kept for key.
func (r *reads) forgetLocked(key types.NamespacedName) {
	delete(r.objs, key)
	delete(r.old, key)
}

// kept: how many objects are kept (tests).
func (r *reads) kept() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.objs) + len(r.old)
}

// cacheable: typed objects only (an unstructured or metadata-only read goes to the client).
func cacheable(obj ctrl.Object) bool {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		return false
	}
	return true
}

func (r *reads) get(ctx context.Context, c ctrl.Reader, key types.NamespacedName, obj ctrl.Object, opts ...ctrl.GetOption) error {
	if r.off || !cacheable(obj) || len(opts) > 0 {
		return c.Get(ctx, key, obj, opts...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.getLocked(ctx, c, key, obj)
}

// getLocked: get, with the lock held.
func (r *reads) getLocked(ctx context.Context, c ctrl.Reader, key types.NamespacedName, obj ctrl.Object) error {
	t := reflect.TypeOf(obj)
	if o, ok := r.keptLocked(key, t); ok {
		copyInto(obj, o)
		return nil
	}
	if err := c.Get(ctx, key, obj); err != nil {
		return err
	}
	if r.objs[key] == nil {
		r.objs[key] = map[reflect.Type]ctrl.Object{}
	}
	r.objs[key][t] = obj.DeepCopyObject().(ctrl.Object)
	return nil
}

// storedLocked: what a read of key as obj's type returns, for the caller to read and never
// change: the kept object itself when there is one (no copy), else a fresh read, kept.
func (r *reads) storedLocked(ctx context.Context, c ctrl.Reader, key types.NamespacedName, obj ctrl.Object) (ctrl.Object, error) {
	if o, ok := r.keptLocked(key, reflect.TypeOf(obj)); ok {
		return o, nil
	}
	fresh := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(ctrl.Object)
	if err := r.getLocked(ctx, c, key, fresh); err != nil {
		return nil, err
	}
	return fresh, nil
}

// keepLocked: obj is what a read of key returns now (the lock held; the caller has written
// it). obj itself is kept: the caller hands it over and does not touch it again.
func (r *reads) keepLocked(key types.NamespacedName, obj ctrl.Object) {
	delete(r.old, key)
	r.objs[key] = map[reflect.Type]ctrl.Object{reflect.TypeOf(obj): obj}
}

// patch: a patch of obj by the engine's own path (fast), or by the client's (slow) where
// that path does not apply; the object's cached reads are replaced or forgotten.
func (r *reads) patch(obj ctrl.Object, fast, slow func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.off {
		return slow()
	}
	err := fast()
	if err == nil {
		return nil
	}
	r.forgetLocked(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	if err == errSlowPath {
		return slow()
	}
	return err
}

// write runs a write of obj with its name forgotten, under the lock: no read sees the object
// between the write and the forgetting.
func (r *reads) write(obj ctrl.Object, do func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	return do()
}

// copyInto: dst becomes a deep copy of src (both of one type). The kinds read most (Kueue
// reads a workload's Namespace for each inadmissible workload it requeues, millions of reads
// on Kueue's harness baseline) are copied in place; any other through a fresh copy.
func copyInto(dst, src ctrl.Object) {
	switch d := dst.(type) {
	case *corev1.Namespace:
		src.(*corev1.Namespace).DeepCopyInto(d)
	case *kueue.Workload:
		src.(*kueue.Workload).DeepCopyInto(d)
	case *batchv1.Job:
		src.(*batchv1.Job).DeepCopyInto(d)
	case *corev1.Pod:
		src.(*corev1.Pod).DeepCopyInto(d)
	case *kueue.ClusterQueue:
		src.(*kueue.ClusterQueue).DeepCopyInto(d)
	default:
		reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
	}
}
