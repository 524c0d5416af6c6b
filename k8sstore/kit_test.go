package k8sstore_test

// The server tests' kit: stores on a real kube-apiserver (k8stest),
// transports that lose a reply or hold a request, a copy of a prefix's
// objects put back by hand, and writes that move etcd's revision.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
)

func TestMain(m *testing.M) { k8stest.Main(m) }

// settleTimeout bounds the retries of a request while the API server
// comes back after a restore.
const settleTimeout = time.Minute

var prefixSeq atomic.Int64

// newPrefix is a prefix no other store of the test binary uses.
func newPrefix() string { return "t" + strconv.FormatInt(prefixSeq.Add(1), 10) }

// open opens a store on rc, closed when t ends.
func open(t testing.TB, rc *rest.Config, cfg k8sstore.Config) *k8sstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := k8sstore.Open(ctx, cfg, rc)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// roundTrip is an http.RoundTripper of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// loser loses, once armed, the reply of the next write (a patch; a
// create too with creates) that commits: the store sees a connection
// error, as when the connection drops after the API server applied the
// write. client-go retries no PATCH or POST after an error.
type loser struct {
	armed   atomic.Bool
	creates bool
}

func (l *loser) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		write := req.Method == http.MethodPatch || (l.creates && req.Method == http.MethodPost)
		if err == nil && write && resp.StatusCode < 300 && l.armed.CompareAndSwap(true, false) {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil, errors.New("connection reset by peer (the test lost the reply of a write that committed)")
		}
		return resp, err
	})
}

// parker holds, once armed, the next patch before it is sent — a process
// frozen between its read and its write, or a request held in a retrying
// client — until let; it is then sent as it was made.
type parker struct {
	armed  atomic.Bool
	parked chan struct{} // closed once the armed patch waits
	let    func()
	go_    chan struct{}
	status chan string // how the held patch ended: the HTTP status, or the error
}

func newParker(t *testing.T) *parker {
	p := &parker{parked: make(chan struct{}), go_: make(chan struct{}), status: make(chan string, 1)}
	var once sync.Once
	p.let = func() { once.Do(func() { close(p.go_) }) }
	t.Cleanup(p.let) // no request is left waiting
	return p
}

func (p *parker) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodPatch || !p.armed.CompareAndSwap(true, false) {
			return rt.RoundTrip(req)
		}
		close(p.parked)
		<-p.go_
		resp, err := rt.RoundTrip(req)
		if err != nil {
			p.status <- err.Error()
		} else {
			p.status <- resp.Status
		}
		return resp, err
	})
}

// copyAside copies the objects of prefix in ns aside (their annotations),
// and returns the function that writes that copy back in place of
// whatever is there then, through the admin's client: objects made since
// are deleted, those changed get their old annotations back (under the
// same UID, at a higher resourceVersion), those gone are made again. It
// plays a restore the server does not show, as leasetest.Harness.Rollback
// asks.
func copyAside(t *testing.T, leases coordv1client.LeaseInterface, prefix string) func() {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: "snowfence.io/prefix=" + prefix}
	ls, err := leases.List(t.Context(), sel)
	if err != nil {
		t.Fatalf("copy aside the objects of prefix %s: %v", prefix, err)
	}
	saved := map[string]coordv1.Lease{}
	for _, l := range ls.Items {
		saved[l.Name] = l
	}
	return func() {
		t.Helper()
		ctx := t.Context()
		now, err := leases.List(ctx, sel)
		if err != nil {
			t.Fatalf("put back the objects of prefix %s: %v", prefix, err)
		}
		here := map[string]bool{}
		for _, l := range now.Items {
			here[l.Name] = true
			old, ok := saved[l.Name]
			if !ok {
				if err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatalf("put back: delete %s: %v", l.Name, err)
				}
				continue
			}
			l.Annotations, l.Spec = old.Annotations, old.Spec
			if _, err := leases.Update(ctx, &l, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("put back: %s: %v", l.Name, err)
			}
		}
		for name, old := range saved {
			if here[name] {
				continue
			}
			l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: old.Labels, Annotations: old.Annotations}, Spec: old.Spec}
			if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
				t.Fatalf("put back: make %s again: %v", name, err)
			}
		}
	}
}

// pumpUntil writes the lease object "pump" (a merge patch of an
// annotation; made if absent) until etcd's revision, which its
// resourceVersion shows, is at least target, and returns that revision.
func pumpUntil(t *testing.T, leases coordv1client.LeaseInterface, target uint64) uint64 {
	t.Helper()
	for i := 0; ; i++ {
		b := fmt.Appendf(nil, `{"metadata":{"annotations":{"pump":"%d"}}}`, time.Now().UnixNano())
		l, err := leases.Patch(t.Context(), "pump", types.MergePatchType, b, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			l, err = leases.Create(t.Context(), &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "pump"}}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("pump write %d: %v", i, err)
		}
		if rv := rvOf(t, l.ResourceVersion); rv >= target {
			return rv
		}
		if i > 10_000 {
			t.Fatalf("pump: %d writes and the revision is not at %d", i, target)
		}
	}
}

// rvOf parses a resourceVersion (kube-apiserver's are etcd revisions: the
// tests may rely on it, the store only compares them).
func rvOf(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}

// settle retries f (bounded by settleTimeout) while it fails with an
// error that is none of the lease package's typed ones: the API server
// and the clients' connections come back after a restore.
func settle(t *testing.T, f func(ctx context.Context) error) error {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := f(ctx)
		cancel()
		typed := errors.Is(err, lease.ErrRestored) || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrNoFreeNumber) ||
			errors.Is(err, lease.ErrInvalid) || errors.Is(err, k8sstore.ErrForbidden)
		if err == nil || typed || time.Now().After(deadline) {
			return err
		}
		t.Logf("retrying after %v", err)
		time.Sleep(200 * time.Millisecond) // poll, bounded: a server coming back
	}
}

// on is holder's claim request on machine n at its clock nowMs, for a
// 10 s lease.
func on(holder string, n int, nowMs int64) lease.ClaimRequest {
	return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: n, Hi: n}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
}

// claim claims through s, retrying while the server settles.
func claim(t *testing.T, s lease.Store, r lease.ClaimRequest) (*lease.Lease, error) {
	t.Helper()
	var l *lease.Lease
	err := settle(t, func(ctx context.Context) error {
		var err error
		l, err = s.Claim(ctx, r)
		return err
	})
	return l, err
}

// extend renews l to markMs through s, retrying while the server settles:
// the renewed lease, or l and the error.
func extend(t *testing.T, s lease.Store, l *lease.Lease, markMs int64) (*lease.Lease, error) {
	t.Helper()
	err := settle(t, func(ctx context.Context) error {
		nl, err := s.Extend(ctx, l, markMs, 10*time.Second)
		if err == nil {
			l = nl
		}
		return err
	})
	return l, err
}

func mustClaim(t *testing.T, s lease.Store, r lease.ClaimRequest) *lease.Lease {
	t.Helper()
	l, err := claim(t, s, r)
	if err != nil {
		t.Fatalf("%s claims %s: %v", r.Holder, r.Range, err)
	}
	return l
}

func mustExtend(t *testing.T, s lease.Store, l *lease.Lease, markMs int64) *lease.Lease {
	t.Helper()
	nl, err := extend(t, s, l, markMs)
	if err != nil {
		t.Fatalf("%s renews machine %d to %d: %v", l.Holder, l.Machine, markMs, err)
	}
	return nl
}
