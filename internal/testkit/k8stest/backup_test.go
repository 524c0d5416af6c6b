package k8stest_test

import (
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
)

// TestRestoreRepeatsResourceVersions: after a restore of etcd under the
// API server, objects come back at older resourceVersions and the next
// writes are given resourceVersions already issued before the restore —
// to the same object, with other contents. A write planned before the
// restore that tests only the resourceVersion then lands on an object it
// never read; one that also tests the record string is refused.
func TestRestoreRepeatsResourceVersions(t *testing.T) {
	t.Parallel()
	s := k8stest.Start(t)
	cs := s.Clientset(t)
	ns := s.Namespace(t)
	copied := newLease(t, cs, ns, "m1", record("c1", 0))
	c := s.CopyData(t)

	// After the copy: writes of m1, each read by a "stale writer" that
	// plans its next write on it, and a lease made anew.
	type read struct{ rv, rec string }
	planned := map[string]read{} // resourceVersion → what m1 held at it
	last := copied
	for i := 1; i <= 40; i++ {
		l, err := jsonPatch(t, cs, ns, "m1", recordOps(record("c1", i-1), record("c1", i))...)
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		planned[l.ResourceVersion] = read{l.ResourceVersion, record("c1", i)}
		last = l
	}
	made := newLease(t, cs, ns, "m2", record("c2", 0))
	t.Logf("before the restore: m1 at %s..%s, m2 made at %s", copied.ResourceVersion, last.ResourceVersion, made.ResourceVersion)

	s.Restore(t, c)

	back := getLease(t, cs, ns, "m1")
	if back.ResourceVersion != copied.ResourceVersion || back.Annotations[recordKey] != record("c1", 0) {
		t.Fatalf("after the restore m1 is at %s holding %q, want the copy's %s holding %q",
			back.ResourceVersion, back.Annotations[recordKey], copied.ResourceVersion, record("c1", 0))
	}
	if rv(t, back.ResourceVersion) >= rv(t, last.ResourceVersion) {
		t.Errorf("m1's resourceVersion %s after the restore, want it lower than %s", back.ResourceVersion, last.ResourceVersion)
	}
	if _, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), "m2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("m2, made after the copy: %v, want NotFound", err)
	}

	// A new holder (claim c9) writes m1 until one of its writes is given a
	// resourceVersion that a stale writer read before the restore.
	var stale read
	cur := back
	for i := 1; stale.rv == ""; i++ {
		if rv(t, cur.ResourceVersion) > rv(t, last.ResourceVersion) {
			t.Fatalf("m1 at %s after %d writes since the restore, past every resourceVersion read before it: none repeated", cur.ResourceVersion, i-1)
		}
		prev := cur.Annotations[recordKey]
		l, err := jsonPatch(t, cs, ns, "m1", recordOps(prev, record("c9", i))...)
		if err != nil {
			t.Fatalf("write %d after the restore: %v", i, err)
		}
		cur = l
		if r, ok := planned[l.ResourceVersion]; ok {
			stale = r
			t.Logf("after the restore write %d of m1 is given resourceVersion %s, which m1 had before it holding %q; it now holds %q", i, l.ResourceVersion, r.rec, l.Annotations[recordKey])
		}
	}
	if cur.Annotations[recordKey] == stale.rec {
		t.Fatalf("m1 holds the stale writer's record again: cannot tell them apart")
	}

	// The stale writer's write, testing what it read.
	_, err := jsonPatch(t, cs, ns, "m1", append([]op{rvOp(stale.rv)}, recordOps(stale.rec, record("c1", 99))...)...)
	if !apierrors.IsInvalid(err) {
		t.Errorf("stale write testing resourceVersion and record: %v (%s), want 422 Invalid", err, status(err))
	}
	if now := getLease(t, cs, ns, "m1"); !sameLease(now, cur) {
		t.Fatalf("m1 changed by a refused write: %+v", now)
	}
	l, err := jsonPatch(t, cs, ns, "m1", rvOp(stale.rv), replaceOp(recordPath, record("c1", 99)))
	if err != nil {
		t.Fatalf("stale write testing only the resourceVersion: %v (%s), want it to commit (the hole the record test closes)", err, status(err))
	}
	t.Logf("a stale write testing only resourceVersion %s committed on the new holder's lease: now %s holding %q", stale.rv, l.ResourceVersion, l.Annotations[recordKey])
}

// rv parses a resourceVersion (an etcd revision, as kube-apiserver's are;
// clients must not rely on it, the tests here may).
func rv(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}
