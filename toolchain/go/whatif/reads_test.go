package main

import (
	"context"
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// countingReader: the in-memory client, counting the reads that reach it.
type countingReader struct {
	ctrl.Client
	gets int
}

func (c *countingReader) Get(ctx context.Context, key ctrl.ObjectKey, obj ctrl.Object, opts ...ctrl.GetOption) error {
	c.gets++
	return c.Client.Get(ctx, key, obj, opts...)
}

var podKey = types.NamespacedName{Namespace: "ns", Name: "p"}

func readsOn(off bool) (*reads, *countingReader) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: podKey.Namespace, Name: podKey.Name, Labels: map[string]string{"v": "1"}}}
	c := &countingReader{Client: fake.NewClientBuilder().WithObjects(pod).Build()}
	return &reads{objs: map[types.NamespacedName]map[reflect.Type]ctrl.Object{}, off: off}, c
}

func TestReadsHandOutCopiesUntilTheObjectIsWritten(t *testing.T) {
	r, c := readsOn(false)
	ctx := context.Background()
	first := &corev1.Pod{}
	if err := r.get(ctx, c, podKey, first); err != nil {
		t.Fatal(err)
	}
	first.Labels["v"] = "changed by a reader"
	second := &corev1.Pod{}
	if err := r.get(ctx, c, podKey, second); err != nil {
		t.Fatal(err)
	}
	if second.Labels["v"] != "1" || c.gets != 1 {
		t.Fatalf("second read: label %q after %d reads of the client; want 1 after 1", second.Labels["v"], c.gets)
	}
	err := r.write(second, func() error {
		second.Labels["v"] = "2"
		return c.Update(ctx, second)
	})
	if err != nil {
		t.Fatal(err)
	}
	third := &corev1.Pod{}
	if err := r.get(ctx, c, podKey, third); err != nil {
		t.Fatal(err)
	}
	if third.Labels["v"] != "2" || c.gets != 2 {
		t.Errorf("after a write: label %q after %d reads of the client; want 2 after 2", third.Labels["v"], c.gets)
	}
}

func TestWhatTheReadsDoNotKeep(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		off  bool
		obj  func() ctrl.Object
		opts []ctrl.GetOption
	}{
		{"the plain client (GPUQ_WHATIF_PLAIN_CLIENT)", true, func() ctrl.Object { return &corev1.Pod{} }, nil},
		{"an unstructured read", false, func() ctrl.Object {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("Pod")
			return u
		}, nil},
		{"a metadata-only read", false, func() ctrl.Object {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
			return m
		}, nil},
		{"a read with options", false, func() ctrl.Object { return &corev1.Pod{} }, []ctrl.GetOption{&ctrl.GetOptions{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, c := readsOn(tc.off)
			for range 2 {
				if err := r.get(ctx, c, podKey, tc.obj(), tc.opts...); err != nil {
					t.Fatal(err)
				}
			}
			if c.gets != 2 || len(r.objs) != 0 {
				t.Errorf("%d reads of the client, %d objects kept; want 2, 0", c.gets, len(r.objs))
			}
		})
	}
}

func TestAPatchLeftToTheClientForgetsTheObject(t *testing.T) {
	ctx := context.Background()
	r, c := readsOn(false)
	pod := &corev1.Pod{}
	if err := r.get(ctx, c, podKey, pod); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		fast      error
		slowRuns  bool
		wantError bool
	}{
		{"the patch path takes it", nil, false, false},
		{"the patch path leaves it to the client", errSlowPath, true, false},
		{"the patch path refuses it", errors.New("conflict"), false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.get(ctx, c, podKey, &corev1.Pod{}); err != nil {
				t.Fatal(err)
			}
			slow := false
			err := r.patch(pod, func() error { return tc.fast }, func() error { slow = true; return nil })
			if slow != tc.slowRuns || (err != nil) != tc.wantError {
				t.Errorf("slow path ran %v, error %v; want %v, error %v", slow, err, tc.slowRuns, tc.wantError)
			}
			_, kept := r.objs[podKey]
			if kept != (tc.fast == nil) {
				t.Errorf("the object is kept: %v, want %v", kept, tc.fast == nil)
			}
		})
	}
}

// The reads keep an object until a turn passes without a read or write of it: read after one
// turn, it is still kept (and kept on); after two turns untouched it is dropped, and the next
// read goes to the client, with the same answer.
func TestReadsDropWhatTwoTurnsDidNotTouch(t *testing.T) {
	r, c := readsOn(false)
	ctx := context.Background()
	read := func() *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		if err := r.get(ctx, c, podKey, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := read()
	r.turn()
	read()
	r.turn()
	read() // read in each turn: kept
	if c.gets != 1 || r.kept() != 1 {
		t.Fatalf("read in every turn: %d reads of the client, %d kept; want 1, 1", c.gets, r.kept())
	}
	r.turn()
	r.turn()
	if r.kept() != 0 {
		t.Fatalf("two turns untouched: %d kept, want 0", r.kept())
	}
	if again := read(); c.gets != 2 || !reflect.DeepEqual(again, first) {
		t.Errorf("after the drop: %d reads of the client (want 2), the same object: %v", c.gets, reflect.DeepEqual(again, first))
	}
	r.turn()
	if err := r.write(first, func() error { return nil }); err != nil || r.kept() != 0 {
		t.Errorf("a write forgets the object kept at the turn before: %v, %d kept", err, r.kept())
	}
}
