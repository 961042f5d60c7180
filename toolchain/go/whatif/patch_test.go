package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utiltestingapi "sigs.k8s.io/kueue/pkg/util/testing/v1beta2"
)

// withoutNulls: a decoded JSON value with its null members dropped, at every depth (arrays
// kept as they are).
func withoutNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e != nil {
				out[k] = withoutNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutNulls(e)
		}
		return out
	}
	return v
}

func decoded(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return v
}

// The status merge is RFC 7386's merge patch (Appendix A: its examples whose document and
// patch are both objects, and section 3's). Its result is decoded into a fresh typed status
// next, where a null member and a missing one give the same zero, so results are compared
// without their nulls (the RFC prunes the nulls of a patch's new members; this leaves them).
func TestMergeObjectsIsRFC7386(t *testing.T) {
	cases := []struct{ doc, patch, merged string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{`null`, `{"a":1}`, `{"a":1}`},
		{`{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}`,
			`{"title":"Hello!","phoneNumber":"+01-555-0100","author":{"familyName":null},"tags":["example"]}`,
			`{"title":"Hello!","author":{"givenName":"John"},"tags":["example"],"content":"This will be unchanged","phoneNumber":"+01-555-0100"}`},
	}
	for _, tc := range cases {
		got, err := mergeObjects([]byte(tc.doc), []byte(tc.patch))
		if err != nil {
			t.Errorf("merge %s into %s: %v", tc.patch, tc.doc, err)
			continue
		}
		if !reflect.DeepEqual(withoutNulls(decoded(t, string(got))), withoutNulls(decoded(t, tc.merged))) {
			t.Errorf("merge %s into %s = %s, want %s", tc.patch, tc.doc, got, tc.merged)
		}
	}
}

func TestMergeObjectsKeepsNumbersAsWrittenAndRefusesWhatIsNotAnObject(t *testing.T) {
	if got, err := mergeObjects([]byte(`{"a":"b","c":{"d":1}}`), []byte(`{"a":null,"c":{"d":null}}`)); err != nil || string(got) != `{"c":{}}` {
		t.Errorf("a null in the patch: %s, %v; want the key removed", got, err)
	}
	got, err := mergeObjects([]byte(`{"n": 1.50, "keep": {"x": 1}}`), []byte(`{"big": 12345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"big":12345678901234567890,"keep":{"x":1},"n":1.50}`; string(got) != want {
		t.Errorf("merged %s, want %s", got, want)
	}
	cases := []struct{ doc, patch, message string }{
		{`{"a":1}`, `["c"]`, "a status patch that is not an object"},
		{`{"a":1}`, `null`, "a status patch that is not an object"},
		{`["a"]`, `{"a":1}`, "a status that is not an object"},
	}
	for _, tc := range cases {
		if _, err := mergeObjects([]byte(tc.doc), []byte(tc.patch)); err == nil || !strings.HasPrefix(err.Error(), tc.message) {
			t.Errorf("merge %s into %s: %v, want %q", tc.patch, tc.doc, err, tc.message)
		}
	}
}

func TestVersionOnly(t *testing.T) {
	cases := []struct {
		t    types.PatchType
		data string
		rv   string
		ok   bool
	}{
		{types.MergePatchType, `{"metadata":{"resourceVersion":"42"}}`, "42", true},
		{types.StrategicMergePatchType, `{"metadata":{"resourceVersion":"7"}}`, "7", true},
		{types.JSONPatchType, `{"metadata":{"resourceVersion":"7"}}`, "", false},
		{types.MergePatchType, `{"metadata":{"resourceVersion":""}}`, "", false},
		{types.MergePatchType, `{"metadata":{"resourceVersion":"4x"}}`, "", false},
		{types.MergePatchType, `{"metadata":{"resourceVersion":"4"},"status":{}}`, "", false},
		{types.MergePatchType, `{"metadata":{"labels":{"a":"b"}}}`, "", false},
	}
	for _, tc := range cases {
		if rv, ok := versionOnly(tc.t, []byte(tc.data)); rv != tc.rv || ok != tc.ok {
			t.Errorf("versionOnly(%s, %s) = %q, %v; want %q, %v", tc.t, tc.data, rv, ok, tc.rv, tc.ok)
		}
	}
}

func TestStatusMergedTakesOnlyStatusAndVersionPatches(t *testing.T) {
	stored := utiltestingapi.MakeClusterQueue("cq").Obj()
	stored.ResourceVersion = "3"
	stored.Status.PendingWorkloads = 2
	stored.Status.Conditions = []metav1.Condition{{Type: "Active", Status: metav1.ConditionTrue, Reason: "Ready"}}
	cases := []struct {
		patch   string
		ok      bool
		rv      string
		pending int32
		conds   int
	}{
		{`{"status":{"pendingWorkloads":5}}`, true, "3", 5, 1},
		{`{"metadata":{"resourceVersion":"3"},"status":{"conditions":[]}}`, true, "3", 2, 0},
		{`{"metadata":{"resourceVersion":"9"}}`, true, "9", 2, 1},
		{`{"status":{"pendingWorkloads":null}}`, true, "3", 0, 1},
		{`{"status":null}`, false, "", 0, 0},
		{`{"spec":{"cohortName":"x"},"status":{}}`, false, "", 0, 0},
		{`{"metadata":{"labels":{"a":"b"}}}`, false, "", 0, 0},
		{`[{"op":"add"}]`, false, "", 0, 0},
		{`null`, false, "", 0, 0},
	}
	for _, tc := range cases {
		updated, ok, err := statusMerged(stored, []byte(tc.patch))
		if err != nil || ok != tc.ok {
			t.Errorf("statusMerged(%s): ok %v, err %v; want ok %v", tc.patch, ok, err, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		cq := updated.(*kueue.ClusterQueue)
		if cq.ResourceVersion != tc.rv || cq.Status.PendingWorkloads != tc.pending || len(cq.Status.Conditions) != tc.conds {
			t.Errorf("statusMerged(%s): rv %s, pending %d, %d conditions; want %s, %d, %d", tc.patch,
				cq.ResourceVersion, cq.Status.PendingWorkloads, len(cq.Status.Conditions), tc.rv, tc.pending, tc.conds)
		}
		if !reflect.DeepEqual(cq.Spec, stored.Spec) {
			t.Errorf("statusMerged(%s) changed the spec", tc.patch)
		}
	}
	if stored.Status.PendingWorkloads != 2 || stored.ResourceVersion != "3" {
		t.Errorf("statusMerged changed the stored object")
	}
}

func TestSameDeletionTimestampTruncatesToTheSecond(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cases := []struct {
		a, b *metav1.Time
		want bool
	}{
		{nil, nil, true},
		{&at, nil, false},
		{&at, &at, true},
		{&at, &metav1.Time{Time: at.Add(999 * time.Millisecond)}, true},
		{&at, &metav1.Time{Time: at.Add(time.Second)}, false},
	}
	for _, tc := range cases {
		a, b := &corev1.Pod{}, &corev1.Pod{}
		a.DeletionTimestamp, b.DeletionTimestamp = tc.a, tc.b
		if got := sameDeletionTimestamp(a, b); got != tc.want {
			t.Errorf("sameDeletionTimestamp(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// The engine's patch path (fastPatch) stores what the in-memory client would, and refuses
// what it would: each patch is applied to two engines' clients, one with the path and one
// without (GPUQ_WHATIF_PLAIN_CLIENT), and the stored objects and errors compared.
func TestThePatchPathStoresWhatTheClientWould(t *testing.T) {
	raw := func(pt types.PatchType, data string) ctrl.Patch { return ctrl.RawPatch(pt, []byte(data)) }
	cases := []struct {
		name   string
		status bool
		patch  func(rv string) ctrl.Patch
	}{
		{"a merge patch of the status", true, func(string) ctrl.Patch {
			return raw(types.MergePatchType, `{"status":{"pendingWorkloads":4,"conditions":[{"type":"Active","status":"True","reason":"Ready","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
		}},
		{"a status patch with a null", true, func(string) ctrl.Patch {
			return raw(types.MergePatchType, `{"status":{"conditions":null}}`)
		}},
		{"a status patch that carries a spec", true, func(string) ctrl.Patch {
			return raw(types.MergePatchType, `{"spec":{"cohortName":"other"},"status":{"pendingWorkloads":1}}`)
		}},
		{"an object patch that carries a status", false, func(string) ctrl.Patch {
			return raw(types.MergePatchType, `{"metadata":{"labels":{"a":"b"}},"status":{"pendingWorkloads":9}}`)
		}},
		{"the version alone", false, func(rv string) ctrl.Patch {
			return raw(types.MergePatchType, `{"metadata":{"resourceVersion":"`+rv+`"}}`)
		}},
		{"a stale version", true, func(string) ctrl.Patch {
			return raw(types.MergePatchType, `{"metadata":{"resourceVersion":"1"},"status":{"pendingWorkloads":3}}`)
		}},
		{"a JSON patch", false, func(string) ctrl.Patch {
			return raw(types.JSONPatchType, `[{"op":"add","path":"/metadata/labels","value":{"k":"v"}}]`)
		}},
		{"a strategic merge patch", false, func(string) ctrl.Patch {
			return raw(types.StrategicMergePatchType, `{"metadata":{"annotations":{"k":"v"}}}`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stored []string
			var errs []string
			for _, plain := range []string{"", "1"} {
				t.Setenv("GPUQ_WHATIF_PLAIN_CLIENT", plain)
				s, err := newSim(gpuInput(t, kueue.BestEffortFIFO))
				if err != nil {
					t.Fatal(err)
				}
				cq := &kueue.ClusterQueue{}
				if err := s.cl.Get(context.Background(), types.NamespacedName{Name: "team-a"}, cq); err != nil {
					t.Fatal(err)
				}
				p := tc.patch(cq.ResourceVersion)
				if tc.status {
					err = s.cl.Status().Patch(context.Background(), cq, p)
				} else {
					err = s.cl.Patch(context.Background(), cq, p)
				}
				errs = append(errs, errorKind(err))
				if _, kept := s.reads.objs[types.NamespacedName{Name: "team-a"}]; plain == "" && err == nil && !kept {
					t.Errorf("the patch path left the patch to the client")
				}
				fresh := &kueue.ClusterQueue{}
				if err := s.base.Get(context.Background(), types.NamespacedName{Name: "team-a"}, fresh); err != nil {
					t.Fatal(err)
				}
				stored = append(stored, string(rawJSON(t, fresh)))
			}
			if errs[0] != errs[1] {
				t.Errorf("errors: %s with the patch path, %s without", errs[0], errs[1])
			}
			if stored[0] != stored[1] {
				t.Errorf("stored with the patch path:\n%s\nwithout:\n%s", stored[0], stored[1])
			}
		})
	}
}

func errorKind(err error) string {
	switch {
	case err == nil:
		return "none"
	case apierrors.IsConflict(err):
		return "conflict"
	case apierrors.IsNotFound(err):
		return "not found"
	}
	return err.Error()
}

// The engine's updates (fastStatusUpdate of the status subresource, fastUpdate of the whole
// object) store and hand back what the in-memory client would, and refuse what it would: each
// update is made on two engines' clients, one with the path and one without
// (GPUQ_WHATIF_PLAIN_CLIENT), and the stored objects, the caller's objects and the errors
// compared.
func TestTheUpdatePathsStoreWhatTheClientWould(t *testing.T) {
	cases := []struct {
		name   string
		status bool
		change func(cq *kueue.ClusterQueue)
	}{
		{"a new status", true, func(cq *kueue.ClusterQueue) {
			cq.Status.PendingWorkloads = 4
			cq.Status.Conditions = []metav1.Condition{{Type: "Active", Status: "True", Reason: "Ready", Message: "m",
				LastTransitionTime: metav1.NewTime(epoch.Add(1500 * time.Millisecond))}} // JSON keeps the second
		}},
		{"a status with a spec changed (the subresource keeps the stored spec)", true, func(cq *kueue.ClusterQueue) {
			cq.Spec.CohortName = "other"
			cq.Status.PendingWorkloads = 1
		}},
		{"a status of a stale version", true, func(cq *kueue.ClusterQueue) {
			cq.ResourceVersion = "1"
			cq.Status.PendingWorkloads = 3
		}},
		{"a status without a version", true, func(cq *kueue.ClusterQueue) {
			cq.ResourceVersion = ""
			cq.Status.PendingWorkloads = 2
		}},
		{"a spec with a status changed (the object keeps the stored status)", false, func(cq *kueue.ClusterQueue) {
			cq.Spec.CohortName = "other"
			cq.Labels = map[string]string{"a": "b"}
			cq.Status.PendingWorkloads = 7
		}},
		{"a spec of a stale version", false, func(cq *kueue.ClusterQueue) {
			cq.ResourceVersion = "1"
			cq.Spec.CohortName = "other"
		}},
		{"a spec without a version", false, func(cq *kueue.ClusterQueue) {
			cq.ResourceVersion = ""
			cq.Spec.CohortName = "other"
		}},
		{"a deletionTimestamp set", false, func(cq *kueue.ClusterQueue) {
			cq.DeletionTimestamp = &metav1.Time{Time: epoch}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stored, returned, errs []string
			for _, plain := range []string{"", "1"} {
				t.Setenv("GPUQ_WHATIF_PLAIN_CLIENT", plain)
				s, err := newSim(gpuInput(t, kueue.BestEffortFIFO))
				if err != nil {
					t.Fatal(err)
				}
				cq := &kueue.ClusterQueue{}
				if err := s.cl.Get(context.Background(), types.NamespacedName{Name: "team-a"}, cq); err != nil {
					t.Fatal(err)
				}
				tc.change(cq)
				if tc.status {
					err = s.cl.Status().Update(context.Background(), cq)
				} else {
					err = s.cl.Update(context.Background(), cq)
				}
				errs = append(errs, errorKind(err))
				if _, kept := s.reads.objs[types.NamespacedName{Name: "team-a"}]; plain == "" && err == nil && !kept {
					t.Errorf("the update path left the update to the client")
				}
				returned = append(returned, string(rawJSON(t, cq)))
				fresh := &kueue.ClusterQueue{}
				if err := s.base.Get(context.Background(), types.NamespacedName{Name: "team-a"}, fresh); err != nil {
					t.Fatal(err)
				}
				stored = append(stored, string(rawJSON(t, fresh)))
			}
			if errs[0] != errs[1] {
				t.Errorf("errors: %s with the path, %s without", errs[0], errs[1])
			}
			if stored[0] != stored[1] {
				t.Errorf("stored with the path:\n%s\nwithout:\n%s", stored[0], stored[1])
			}
			if errs[0] == "none" && returned[0] != returned[1] {
				t.Errorf("handed back with the path:\n%s\nwithout:\n%s", returned[0], returned[1])
			}
		})
	}
}

// An update that takes the last finalizer off an object being deleted removes it: a read
// after it finds nothing, with the engine's paths (whose read cache held the object) as
// without them.
func TestAnUpdateThatRemovesTheLastFinalizerLeavesNothingToRead(t *testing.T) {
	key := types.NamespacedName{Name: "team-a"}
	for _, plain := range []string{"", "1"} {
		t.Setenv("GPUQ_WHATIF_PLAIN_CLIENT", plain)
		s, err := newSim(gpuInput(t, kueue.BestEffortFIFO))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		cq := &kueue.ClusterQueue{}
		if err := s.cl.Get(ctx, key, cq); err != nil {
			t.Fatal(err)
		}
		cq.Finalizers = []string{"example.com/hold"}
		if err := s.cl.Update(ctx, cq); err != nil {
			t.Fatal(err)
		}
		if err := s.cl.Delete(ctx, cq); err != nil {
			t.Fatal(err)
		}
		if err := s.cl.Get(ctx, key, cq); err != nil || cq.DeletionTimestamp == nil {
			t.Fatalf("plain=%q: the ClusterQueue being deleted: %v, deletionTimestamp %v", plain, err, cq.DeletionTimestamp)
		}
		cq.Finalizers = nil
		if err := s.cl.Update(ctx, cq); err != nil {
			t.Fatal(err)
		}
		if err := s.cl.Get(ctx, key, &kueue.ClusterQueue{}); !apierrors.IsNotFound(err) {
			t.Errorf("plain=%q: a read after the last finalizer went: %v, want not found", plain, err)
		}
	}
}

// A delete that leaves an object waiting on its finalizers gives it the simulated now as
// its deletionTimestamp, not the wall clock's (the in-memory client's metav1.Now()), and a
// later delete of it keeps the first one's, as an API server does: with the engine's paths
// and without.
func TestADeletionWaitingOnAFinalizerHasTheSimulatedTime(t *testing.T) {
	key := types.NamespacedName{Name: "team-a"}
	for _, plain := range []string{"", "1"} {
		t.Setenv("GPUQ_WHATIF_PLAIN_CLIENT", plain)
		s, err := newSim(gpuInput(t, kueue.BestEffortFIFO))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		cq := &kueue.ClusterQueue{}
		if err := s.cl.Get(ctx, key, cq); err != nil {
			t.Fatal(err)
		}
		cq.Finalizers = []string{"example.com/hold"}
		if err := s.cl.Update(ctx, cq); err != nil {
			t.Fatal(err)
		}
		deleted := s.clock.Now().Add(90 * time.Minute)
		s.clock.SetTime(deleted)
		for range 2 {
			if err := s.cl.Delete(ctx, cq); err != nil {
				t.Fatal(err)
			}
			s.clock.SetTime(s.clock.Now().Add(time.Hour))
		}
		if err := s.cl.Get(ctx, key, cq); err != nil || cq.DeletionTimestamp == nil {
			t.Fatalf("plain=%q: the ClusterQueue being deleted: %v, deletionTimestamp %v", plain, err, cq.DeletionTimestamp)
		}
		if got := cq.DeletionTimestamp.Time; got.Unix() != deleted.Unix() {
			t.Errorf("plain=%q: deletionTimestamp %v, want the simulated time of the first delete %v (wall clock: %v)",
				plain, got.UTC(), deleted.UTC(), time.Now().UTC())
		}
	}
}
