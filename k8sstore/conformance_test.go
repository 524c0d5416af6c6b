package k8sstore_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// TestConformance runs the suites every lease store passes — the fence
// contract's (leasetest.Run), the operator's actions' (leasetest.RunAdmin)
// and the registry copy's (registrytest.Run) —
// against stores on the shared kube-apiserver, each on a prefix of its
// own in one namespace, through a service account that may only get,
// list, create and patch leases there (k8stest.Restricted): the store
// needs nothing more. Expiry is the claimer's clock against the record's
// mark (ClockExpiry). Rollback puts a prefix's objects back by hand
// (copyAside); LoseReply loses the reply of a patch that committed.
func TestConformance(t *testing.T) {
	srv := k8stest.Shared(t)
	ns := srv.Namespace(t)
	rc := srv.Restricted(t, ns)
	admin := srv.Clientset(t).CoordinationV1().Leases(ns)
	h := leasetest.Harness{
		New: func(t *testing.T) lease.Store {
			return open(t, rc, k8sstore.Config{Namespace: ns, Prefix: newPrefix()})
		},
		Reopen: func(t *testing.T, s lease.Store) lease.Store {
			ks := s.(*k8sstore.Store)
			return open(t, rc, k8sstore.Config{Namespace: ns, Prefix: ks.Prefix(), Region: ks.Region()})
		},
		ClockExpiry: true,
		Rollback: func(t *testing.T, s lease.Store) func() {
			return copyAside(t, admin, s.(*k8sstore.Store).Prefix())
		},
		LoseReply: func(t *testing.T) (lease.Store, func()) {
			l := &loser{}
			lrc := rest.CopyConfig(rc)
			lrc.Wrap(l.wrap)
			return open(t, lrc, k8sstore.Config{Namespace: ns, Prefix: newPrefix()}), func() { l.armed.Store(true) }
		},
	}
	leasetest.Run(t, h)
	leasetest.RunAdmin(t, h)
	registrytest.Run(t, leasetest.RegistryHarness(h))
}

// requests records the method and path of every request a client sends.
type requests struct {
	mu   sync.Mutex
	seen []string
}

func (r *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// TestLeastPrivilege: everything a holder does — open, a first claim (the
// origin's and the number's Create), a renewal, a release, a claim of a
// number that has an object (a patch), a read, a keyspace sibling's claim,
// a restore floor written into the origin — goes through the restricted
// service account (get, list, create, patch on leases in the namespace),
// and sends nothing but GET, POST and PATCH requests to the namespace's
// leases. A store of another namespace's account gets ErrForbidden,
// saying what to grant.
func TestLeastPrivilege(t *testing.T) {
	srv := k8stest.Shared(t)
	ns := srv.Namespace(t)
	rc := rest.CopyConfig(srv.Restricted(t, ns))
	var reqs requests
	rc.Wrap(reqs.wrap)
	cfg := k8sstore.Config{Namespace: ns, Prefix: newPrefix()}
	s := open(t, rc, cfg)
	nowMs := time.Now().UnixMilli()
	l := mustClaim(t, s, on("a", 1, nowMs))
	l = mustExtend(t, s, l, nowMs+11_000)
	if err := s.Release(t.Context(), l, nowMs+500); err != nil {
		t.Fatalf("release: %v", err)
	}
	l = mustClaim(t, s, on("b", 1, nowMs+1))
	if _, err := s.Get(t.Context(), 1); err != nil {
		t.Fatalf("get: %v", err)
	}
	sib, err := s.Keyspace(1)
	if err != nil {
		t.Fatal(err)
	}
	mustClaim(t, sib, on("c", 1, nowMs))
	// A restore the store notices (its record put back), and the claim
	// after it, which writes the restore floor into the origin.
	put := copyAside(t, srv.Clientset(t).CoordinationV1().Leases(ns), cfg.Prefix)
	l = mustExtend(t, s, l, nowMs+12_000)
	put()
	if _, err := s.Extend(t.Context(), l, nowMs+13_000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("renewal after its record was put back: %v, want ErrRestored", err)
	}
	fl := mustClaim(t, s, on("d", 2, nowMs+2))
	if want := nowMs + 2 + k8sstore.MaxRestoreWindow.Milliseconds(); fl.StartMs < want {
		t.Errorf("claim after the restore starts at %d, want ≥ %d (the restore floor)", fl.StartMs, want)
	}

	base := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	var methods []string
	reqs.mu.Lock()
	for _, r := range reqs.seen {
		method, path, _ := strings.Cut(r, " ")
		if path != base && !strings.HasPrefix(path, base+"/") {
			t.Errorf("request %s outside the namespace's leases", r)
		}
		if !slices.Contains(methods, method) {
			methods = append(methods, method)
		}
	}
	n := len(reqs.seen)
	reqs.mu.Unlock()
	slices.Sort(methods)
	t.Logf("%d requests, methods %v", n, methods)
	for _, m := range methods {
		if m != http.MethodGet && m != http.MethodPost && m != http.MethodPatch {
			t.Errorf("the store sent a %s request: it needs get, list (GET), create (POST) and patch (PATCH) only", m)
		}
	}

	other := srv.Namespace(t)
	if _, err := k8sstore.Open(t.Context(), k8sstore.Config{Namespace: other}, rc); !errors.Is(err, k8sstore.ErrForbidden) ||
		!strings.Contains(err.Error(), "get, list, create and patch") {
		t.Errorf("Open in a namespace the account has no rights in: %v, want ErrForbidden saying what to grant", err)
	}
}
