package k8sstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
)

// TestRenewalAcrossAFrozenAPIServer: a renewal's patch reaches the API
// server while it is frozen (SIGSTOP): the call gives up — its outcome
// unknown, the request is in the server's socket and is processed once the
// server runs again — and the store's re-read, bounded by RequestTimeout,
// fails too. Once the server is thawed, the holder's next renewal succeeds
// whether or not the abandoned one committed (its renewal value is one the
// store sent), and a store that saw nothing of it reads the holder's
// lease.
func TestRenewalAcrossAFrozenAPIServer(t *testing.T) {
	srv := k8stest.Start(t)
	ns := srv.Namespace(t)
	now := time.Now().UnixMilli()
	cfg := k8sstore.Config{Namespace: ns, Clock: fakeclock.New(time.UnixMilli(now)), RequestTimeout: time.Second}
	p := newParker(t)
	rc := srv.Config()
	rc.Wrap(p.wrap)
	a := open(t, rc, cfg)
	la := mustExtend(t, a, mustClaim(t, a, on("a", 1, now)), now+10_000)

	// The renewal reads, and its patch is held until the server is frozen.
	p.armed.Store(true)
	out := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		_, err := a.Extend(ctx, la, now+20_000, 10*time.Second)
		out <- err
	}()
	select {
	case <-p.parked:
	case <-time.After(30 * time.Second):
		t.Fatal("the renewal never reached its patch")
	}
	srv.Freeze(t)
	p.let()
	var err error
	select {
	case err = <-out:
	case <-time.After(time.Minute):
		t.Fatal("the renewal never returned")
	}
	srv.Thaw(t)
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRestored) {
		t.Fatalf("renewal whose patch met a frozen API server: %v, want an error of unknown outcome", err)
	}
	t.Logf("renewal whose patch met a frozen API server: %v", err)
	la = mustExtend(t, a, la, now+30_000)
	rec, err := open(t, srv.Config(), cfg).Get(t.Context(), 1)
	if err != nil || rec.Holder != "a" || rec.MarkMs != now+30_000 || rec.Renewal != la.Renewal {
		t.Fatalf("after the thaw another store reads %+v (%v), want a's lease at mark %d, renewal %s", rec, err, now+30_000, la.Renewal)
	}
	t.Logf("after the thaw the holder renews: mark %d", la.MarkMs)
}
