package main

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// A patch as the in-memory client applies it (controller-runtime's fake client over
// client-go's object tracker), in one JSON round trip instead of about six: the client
// applies the patch twice (a dry run, then for real), converts the object to and from a map
// to keep its status (or everything but its status), reads the goroutine's stack to tell a
// status patch from another, and serializes the result once more for the caller. The steps
// and their order are the client's: the patch applied to the stored object's JSON, the
// deletionTimestamp kept, the status taken from the stored object for a patch of the object
// (and only the status from the patch for a patch of its status), the resourceVersion
// compared and then raised by one, an object being deleted that has lost its last finalizer
// removed. The truths and the engine's cross-check against the plain client (toolchain
// tests) hold it to that.

// errSlowPath: a patch this path does not take (a dry run, a subresource body, an apply or
// an unstructured object); the client applies it.
var errSlowPath = errors.New("the in-memory client applies this patch")

func (s *sim) fastPatch(ctx context.Context, obj ctrl.Object, patch ctrl.Patch, status, plain bool) error {
	if !cacheable(obj) || !plain {
		return errSlowPath
	}
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return errSlowPath
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	// The stored object, only read here (every change below is made to a copy).
	old, err := s.reads.storedLocked(ctx, s.base, key, obj)
	if err != nil {
		return err
	}
	var updated ctrl.Object
	if rv, only := versionOnly(patch.Type(), data); only {
		// {"metadata":{"resourceVersion":"N"}}: the stored object with that resourceVersion,
		// as the patch would make it, without the round trip.
		updated = old.DeepCopyObject().(ctrl.Object)
		updated.SetResourceVersion(rv)
		return s.store(obj, old, updated, gvk, gvr, key, status)
	}
	if status && patch.Type() == types.MergePatchType && s.statusTypes[gvk] {
		if updated, ok, err := statusMerged(old, data); ok {
			if err != nil {
				return err
			}
			s.simulatedTimes(updated)
			return s.commit(obj, old, updated, gvr, key)
		} // else the patch touches more than the status and the version: the whole object below
	}
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return err
	}
	updated = reflect.New(reflect.TypeOf(obj).Elem()).Interface().(ctrl.Object)
	modified, err := applyPatch(patch.Type(), oldJSON, data, updated)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(modified, updated); err != nil {
		return err
	}
	s.simulatedTimes(updated) // the patch was made before the interceptor saw it
	return s.store(obj, old, updated, gvk, gvr, key, status)
}

// fastStatusUpdate: an update of the status subresource (the engine's own kubelet and Job
// controller write one per pod run and per Job start and end) as the in-memory client makes
// it, without its four whole-object JSON round trips: the stored object with the caller's
// status, that status through JSON as the client's would go, the version compared and raised
// (commit). Only a plain update of a kind with a status subresource that names its version
// takes this path; the client keeps the rest (an empty version may be an unconditional
// update, a kind without the subresource is not found).
func (s *sim) fastStatusUpdate(ctx context.Context, obj ctrl.Object, plain bool) error {
	gvk, gvr, key, old, err := s.updating(ctx, obj, plain)
	if err != nil {
		return err
	}
	if !s.statusTypes[gvk] {
		return errSlowPath
	}
	given := reflect.ValueOf(obj).Elem().FieldByName("Status")
	data, err := json.Marshal(given.Interface())
	if err != nil {
		return err
	}
	fresh := reflect.New(given.Type())
	if err := json.Unmarshal(data, fresh.Interface()); err != nil {
		return err
	}
	updated := old.DeepCopyObject().(ctrl.Object)
	reflect.ValueOf(updated).Elem().FieldByName("Status").Set(fresh.Elem())
	updated.SetResourceVersion(obj.GetResourceVersion())
	return s.commit(obj, old, updated, gvr, key)
}

// updating: what both fast updates start from, the object's kind, resource and key and the
// object as stored; errSlowPath when the client takes the update instead (not a plain update
// of a cached kind naming its version, or nothing stored: the client may create it).
func (s *sim) updating(ctx context.Context, obj ctrl.Object, plain bool) (schema.GroupVersionKind, schema.GroupVersionResource, types.NamespacedName, ctrl.Object, error) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if !cacheable(obj) || !plain || obj.GetResourceVersion() == "" {
		return schema.GroupVersionKind{}, schema.GroupVersionResource{}, key, nil, errSlowPath
	}
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return gvk, schema.GroupVersionResource{}, key, nil, errSlowPath
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	old, err := s.reads.storedLocked(ctx, s.base, key, obj)
	if apierrors.IsNotFound(err) {
		return gvk, gvr, key, nil, errSlowPath // the client may create it (allowsCreateOnUpdate)
	}
	return gvk, gvr, key, old, err
}

// fastUpdate: an update of the whole object (Kueue's Job reconciler unsuspends and suspends
// Jobs so) as the in-memory client makes it, in one JSON round trip of the caller's object
// where the client makes four: the status kept from the stored object, the version compared
// and raised (store). An update without a version (an unconditional one for some kinds), or
// one that moves the deletionTimestamp (the client's own error), is left to the client.
func (s *sim) fastUpdate(ctx context.Context, obj ctrl.Object, plain bool) error {
	gvk, gvr, key, old, err := s.updating(ctx, obj, plain)
	if err != nil {
		return err
	}
	if !sameDeletionTimestamp(obj, old) {
		return errSlowPath
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	updated := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(ctrl.Object)
	if err := json.Unmarshal(data, updated); err != nil {
		return err
	}
	updated.SetManagedFields(old.GetManagedFields()) // the client keeps the stored ones
	return s.store(obj, old, updated, gvk, gvr, key, false)
}

// applyPatch: a patch of type t applied to an object's JSON, by the libraries the client
// uses (typed: the object type, for a strategic merge's patch keys); errSlowPath for a type
// this path does not take.
func applyPatch(t types.PatchType, doc, data []byte, typed ctrl.Object) ([]byte, error) {
	switch t {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(data)
		if err != nil {
			return nil, err
		}
		return p.Apply(doc)
	case types.MergePatchType:
		return jsonpatch.MergePatch(doc, data)
	case types.StrategicMergePatchType:
		return strategicpatch.StrategicMergePatch(doc, data, typed)
	}
	return nil, errSlowPath
}

// store: the rest of the client's patch, once the patched object is known.
func (s *sim) store(obj, old, updated ctrl.Object, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource,
	key types.NamespacedName, status bool) error {
	if !sameDeletionTimestamp(updated, old) {
		return fmt.Errorf("rejected patch, metadata.deletionTimestamp immutable")
	}
	if s.statusTypes[gvk] {
		if status { // the stored object, with the patch's status
			passedRV := updated.GetResourceVersion()
			result := old.DeepCopyObject().(ctrl.Object)
			setStatus(result, updated)
			result.SetResourceVersion(passedRV)
			updated = result
		} else {
			setStatus(updated, old)
		}
	} else if status {
		return apierrors.NewNotFound(gvr.GroupResource(), key.Name)
	}
	return s.commit(obj, old, updated, gvr, key)
}

// commit: the version compared and raised, the object stored (or removed, when it is being
// deleted and has lost its last finalizer) and handed back as the client hands it.
func (s *sim) commit(obj, old, updated ctrl.Object, gvr schema.GroupVersionResource, key types.NamespacedName) error {
	if updated.GetResourceVersion() != old.GetResourceVersion() {
		return apierrors.NewConflict(gvr.GroupResource(), key.Name, errors.New("object was modified"))
	}
	rv, err := strconv.ParseUint(old.GetResourceVersion(), 10, 64)
	if err != nil {
		return fmt.Errorf("can not convert resourceVersion %q to int: %w", old.GetResourceVersion(), err)
	}
	updated.SetResourceVersion(strconv.FormatUint(rv+1, 10))
	deleted := !updated.GetDeletionTimestamp().IsZero() && len(updated.GetFinalizers()) == 0
	if deleted {
		if err := s.tracker.Delete(gvr, key.Namespace, key.Name); err != nil {
			return err
		}
	} else if err := s.tracker.Patch(gvr, updated, key.Namespace); err != nil {
		return err
	}
	updated.SetManagedFields(nil)
	updated.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // typed: no TypeMeta, as the client returns it
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(updated.DeepCopyObject()).Elem())
	if deleted {
		s.reads.forgetLocked(key) // a read now finds nothing, as the client's would
	} else {
		s.reads.keepLocked(key, updated) // the tracker and obj have copies of their own
	}
	return nil
}

// versionOnly: whether a merge patch sets nothing but the resourceVersion (a Kueue write
// whose change was already there: its strict patches always carry the version), and to what.
func versionOnly(t types.PatchType, data []byte) (string, bool) {
	const head, tail = `{"metadata":{"resourceVersion":"`, `"}}`
	if t != types.MergePatchType && t != types.StrategicMergePatchType {
		return "", false
	}
	d := string(data)
	if len(d) <= len(head)+len(tail) || d[:len(head)] != head || d[len(d)-len(tail):] != tail {
		return "", false
	}
	rv := d[len(head) : len(d)-len(tail)]
	for _, c := range rv {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return rv, true
}

// sameDeletionTimestamp: the client's own test (a patch truncates the time to the second).
func sameDeletionTimestamp(a, b ctrl.Object) bool {
	ta, tb := a.GetDeletionTimestamp(), b.GetDeletionTimestamp()
	if ta == nil || tb == nil {
		return ta == tb
	}
	return ta.Sub(tb.Time).Abs() < 1e9
}

// setStatus: dst's status becomes a copy of src's (both of one type with a Status field).
func setStatus(dst, src ctrl.Object) {
	from := reflect.ValueOf(src.DeepCopyObject()).Elem().FieldByName("Status")
	reflect.ValueOf(dst).Elem().FieldByName("Status").Set(from)
}

// statusMerged: a merge patch of the status subresource applied to the status alone. Of the
// patched object the client keeps the status and the resourceVersion (and it checks that the
// deletionTimestamp did not move); a merge patch works key by key (RFC 7386), so the patched
// object's status is the patch's status merged into the stored one's JSON, and the rest of
// the object (most of a Workload: the Job's pod templates) need not go through JSON at all.
// ok is false, and the whole object is patched as before, when the patch holds anything but
// the status and metadata.resourceVersion, or a null.
func statusMerged(old ctrl.Object, data []byte) (ctrl.Object, bool, error) {
	var top map[string]stdjson.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return nil, false, nil
	}
	rv := old.GetResourceVersion()
	for k, v := range top {
		if string(v) == "null" {
			return nil, false, nil
		}
		switch k {
		case "status":
		case "metadata":
			var md map[string]stdjson.RawMessage
			if err := json.Unmarshal(v, &md); err != nil {
				return nil, false, nil
			}
			for mk, mv := range md {
				if mk != "resourceVersion" || json.Unmarshal(mv, &rv) != nil {
					return nil, false, nil
				}
			}
		default:
			return nil, false, nil
		}
	}
	stored := reflect.ValueOf(old).Elem().FieldByName("Status")
	merged, err := json.Marshal(stored.Interface())
	if err != nil {
		return nil, true, err
	}
	if patch, ok := top["status"]; ok {
		if merged, err = mergeObjects(merged, patch); err != nil {
			return nil, true, err
		}
	}
	// Without a status in the patch the stored one still goes through JSON, as it would
	// in the whole object's round trip.
	fresh := reflect.New(stored.Type())
	if err := json.Unmarshal(merged, fresh.Interface()); err != nil {
		return nil, true, err
	}
	updated := old.DeepCopyObject().(ctrl.Object)
	reflect.ValueOf(updated).Elem().FieldByName("Status").Set(fresh.Elem())
	updated.SetResourceVersion(rv)
	return updated, true, nil
}

// mergeObjects: RFC 7386 for a patch that is an object, onto a document that is one, for a
// result that is decoded into a fresh typed value next. Key by key: a null removes the key,
// an object merges into an object, anything else replaces. Where the library the client uses
// (json-patch v4) also prunes nulls out of values it copies in, this keeps them: decoded
// into a fresh value, a null and a missing key give the same zero. Numbers keep their text.
// It is here because the library re-validates each nested level's bytes as it writes them,
// a sixth of a replay's time spent on status patches.
func mergeObjects(doc, patch []byte) ([]byte, error) {
	var d, p map[string]any
	if err := decodeNumbers(doc, &d); err != nil {
		return nil, fmt.Errorf("a status that is not an object (%v): %s", err, doc)
	}
	if err := decodeNumbers(patch, &p); err != nil || p == nil {
		return nil, fmt.Errorf("a status patch that is not an object: %s", patch)
	}
	if d == nil {
		d = map[string]any{}
	}
	mergeInto(d, p)
	return stdjson.Marshal(d)
}

func mergeInto(doc, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(doc, k)
			continue
		}
		if pv, ok := v.(map[string]any); ok {
			if cv, ok := doc[k].(map[string]any); ok {
				mergeInto(cv, pv)
				continue
			}
		}
		doc[k] = v
	}
}

func decodeNumbers(data []byte, into *map[string]any) error {
	dec := stdjson.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(into)
}
