package k8stest_test

import (
	"reflect"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
)

// TestJSONPatchTestOps: a JSON Patch whose first op tests the record
// annotation, or the resourceVersion, commits when the stored object holds
// exactly that value and is refused with 422 Invalid, leaving the object
// as it was, when it does not. The Kubernetes lease store's fence rests on
// it.
func TestJSONPatchTestOps(t *testing.T) {
	t.Parallel()
	s := k8stest.Shared(t)
	cs := s.Clientset(t)
	ns := s.Namespace(t)
	first := newLease(t, cs, ns, "m1", record("c1", 0))

	got, err := jsonPatch(t, cs, ns, "m1", append(recordOps(record("c1", 0), record("c1", 1)), holderOp("b"))...)
	if err != nil {
		t.Fatalf("patch testing the stored record: %v (%s), want it to commit", err, status(err))
	}
	if r := got.Annotations["snowfence.io/record"]; r != record("c1", 1) || *got.Spec.HolderIdentity != "b" {
		t.Fatalf("after the patch: record %q holder %q, want %q b", r, *got.Spec.HolderIdentity, record("c1", 1))
	}
	if got.ResourceVersion == first.ResourceVersion {
		t.Fatalf("resourceVersion %s unchanged by a committed patch", got.ResourceVersion)
	}

	got, err = jsonPatch(t, cs, ns, "m1", rvOp(got.ResourceVersion), holderOp("c"))
	if err != nil {
		t.Fatalf("patch testing the stored resourceVersion: %v (%s), want it to commit", err, status(err))
	}
	before := got

	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"stale record", append(recordOps(record("c1", 0), record("c1", 2)), holderOp("x"))},
		{"record of another claim", append(recordOps(record("c2", 1), record("c2", 2)), holderOp("x"))},
		{"record as a prefix", append(recordOps(record("c1", 1)[:10], record("c1", 2)), holderOp("x"))},
		{"stale resourceVersion", []op{rvOp(first.ResourceVersion), holderOp("x")}},
		{"current resourceVersion, stale record", append([]op{rvOp(before.ResourceVersion)}, append(recordOps(record("c1", 0), record("c1", 2)), holderOp("x"))...)},
		{"stale resourceVersion, current record", append([]op{rvOp(first.ResourceVersion)}, append(recordOps(record("c1", 1), record("c1", 2)), holderOp("x"))...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jsonPatch(t, cs, ns, "m1", tc.ops...)
			t.Logf("refused: %s: %v", status(err), err)
			if !apierrors.IsInvalid(err) {
				t.Errorf("patch: %v (%s), want 422 Invalid", err, status(err))
			}
			if after := getLease(t, cs, ns, "m1"); !sameLease(after, before) {
				t.Errorf("after a refused patch the lease is\n%+v\nwant it unchanged:\n%+v", after, before)
			}
		})
	}
}

// sameLease reports whether a and b are the same stored object: the same
// resourceVersion, annotations and spec.
func sameLease(a, b *coordinationv1.Lease) bool {
	return a.ResourceVersion == b.ResourceVersion && a.UID == b.UID &&
		reflect.DeepEqual(a.Annotations, b.Annotations) && reflect.DeepEqual(a.Spec, b.Spec)
}

// TestConcurrentPatchesOneCommits: 8 patches that test the same record
// string race; exactly one commits, the others are refused.
func TestConcurrentPatchesOneCommits(t *testing.T) {
	t.Parallel()
	s := k8stest.Shared(t)
	cs := s.Clientset(t)
	ns := s.Namespace(t)
	for round := range 3 {
		newLease(t, cs, ns, "race"+string(rune('a'+round)), record("c", 0))
	}
	for round := range 3 {
		name := "race" + string(rune('a'+round))
		const n = 8
		errs := make([]error, n)
		bodies := make([][]byte, n)
		for i := range n {
			bodies[i] = patchBody(t, append(recordOps(record("c", 0), record("c", 100+i)), holderOp(string(rune('A'+i))))...)
		}
		c := ctx(t)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = cs.CoordinationV1().Leases(ns).Patch(c, name, types.JSONPatchType, bodies[i], metav1.PatchOptions{})
			})
		}
		close(start)
		wg.Wait()
		won, reasons := -1, map[string]int{}
		for i, err := range errs {
			if err == nil {
				if won >= 0 {
					t.Errorf("%s: patches %d and %d both committed", name, won, i)
				}
				won = i
				continue
			}
			reasons[status(err)]++
			if !apierrors.IsInvalid(err) && !apierrors.IsConflict(err) {
				t.Errorf("%s: patch %d: %v, want 422 Invalid (or 409 Conflict)", name, i, err)
			}
		}
		t.Logf("%s: winner %d; the others: %v", name, won, reasons)
		if won < 0 {
			t.Fatalf("%s: no patch committed: %v", name, reasons)
		}
		if got := getLease(t, cs, ns, name).Annotations["snowfence.io/record"]; got != record("c", 100+won) {
			t.Errorf("%s: stored record %q, want the winner's %q", name, got, record("c", 100+won))
		}
	}
}

// TestUpdateAndCreateConflicts: an Update with a stale resourceVersion is
// refused with 409 Conflict, a Create of an existing name with 409
// AlreadyExists.
func TestUpdateAndCreateConflicts(t *testing.T) {
	t.Parallel()
	s := k8stest.Shared(t)
	cs := s.Clientset(t)
	ns := s.Namespace(t)
	l := newLease(t, cs, ns, "m1", record("c1", 0))
	l.Annotations[recordKey] = record("c1", 1)
	if _, err := cs.CoordinationV1().Leases(ns).Update(ctx(t), l, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update at the current resourceVersion: %v", err)
	}
	l.Annotations[recordKey] = record("c1", 2) // l still carries the first resourceVersion
	_, err := cs.CoordinationV1().Leases(ns).Update(ctx(t), l, metav1.UpdateOptions{})
	t.Logf("stale update: %s: %v", status(err), err)
	if !apierrors.IsConflict(err) {
		t.Errorf("update at a stale resourceVersion: %v (%s), want 409 Conflict", err, status(err))
	}
	_, err = cs.CoordinationV1().Leases(ns).Create(ctx(t), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}, metav1.CreateOptions{})
	t.Logf("create again: %s: %v", status(err), err)
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("create of an existing name: %v (%s), want 409 AlreadyExists", err, status(err))
	}
}
