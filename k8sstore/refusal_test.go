package k8sstore

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/internal/testkit/k8stest"
)

// TestRefusalsOnTheServer: how a real kube-apiserver answers the store's
// writes that must not commit, each a definite answer (the write did not
// commit): a patch planned on an older state of the object — a stale
// resourceVersion, or the resourceVersion read with a record the object no
// longer holds — is refused with 422 Invalid (its JSON Patch test failed),
// not 409 Conflict; a second first claim with 409 AlreadyExists; a patch
// of an object that does not exist with 404 NotFound.
func TestRefusalsOnTheServer(t *testing.T) {
	srv := k8stest.Shared(t)
	ns := srv.Namespace(t)
	cfg, err := Config{Namespace: ns, Prefix: "refusals"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(srv.Clientset(t).CoordinationV1().Leases(ns), cfg)
	ctx := t.Context()
	rec := record{Holder: "a", Epoch: 1, MarkMs: 1000, Claim: "c1"}
	got, err := s.create(ctx, 1, rec, 500)
	if err != nil {
		t.Fatal(err)
	}
	o1, _ := s.objectOf(got)
	rec2 := rec
	rec2.MarkMs, rec2.Renewal = 2000, "r1"
	got, err = s.patch(ctx, s.name(1), writeOps(o1, rec2, spec(rec2, 600, 0)))
	if err != nil {
		t.Fatalf("a write planned on the current object: %v", err)
	}
	o2, _ := s.objectOf(got)
	rec3 := rec2
	rec3.MarkMs, rec3.Renewal = 3000, "r2"

	staleRV := o2
	staleRV.rvText = o1.rvText
	staleRecord := o2
	staleRecord.raw = o1.raw
	for _, c := range []struct {
		name   string
		on     object
		refuse bool
	}{
		{"planned on the older object", o1, true},
		{"an older resourceVersion, the current record", staleRV, true},
		{"the current resourceVersion, an older record", staleRecord, !revert.K8sRecord},
	} {
		_, err := s.patch(ctx, s.name(1), writeOps(c.on, rec3, spec(rec3, 700, 0)))
		switch {
		case !c.refuse && err != nil:
			t.Errorf("%s: %v, want it to commit (snowfence_revert_k8srecord: the resourceVersion alone is tested)", c.name, err)
		case c.refuse && !apierrors.IsInvalid(err):
			t.Errorf("%s: %v (status %d), want 422 Invalid", c.name, err, statusOf(err))
		case c.refuse && !definite(err):
			t.Errorf("%s: %v is not taken as definite", c.name, err)
		default:
			t.Logf("%s: %v", c.name, err)
		}
	}
	if _, err := s.create(ctx, 1, rec, 500); !apierrors.IsAlreadyExists(err) || !definite(err) {
		t.Errorf("a second first claim: %v, want AlreadyExists", err)
	}
	if _, err := s.patch(ctx, s.name(2), writeOps(o2, rec3, spec(rec3, 700, 0))); !apierrors.IsNotFound(err) || !definite(err) {
		t.Errorf("a patch of an object that does not exist: %v, want NotFound", err)
	}
}

// statusOf is the HTTP status of an API error (0 for another error).
func statusOf(err error) int32 {
	if st, ok := err.(apierrors.APIStatus); ok {
		return st.Status().Code
	}
	return 0
}
