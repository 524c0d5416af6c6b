package service_test

// The service's lifecycle around the keeper's first claim, which runs in
// the keeper's loop: Shutdown before, during and while a spare waits.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/service"
)

// hangingStore holds every claim until its context ends: a store that
// does not answer, or a claim in flight when the service shuts down.
type hangingStore struct {
	refusingStore
	entered chan struct{}
}

func (s hangingStore) Claim(ctx context.Context, _ lease.ClaimRequest) (*lease.Lease, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// serveOn starts a service on st, serves it, and returns it with its URL;
// the caller shuts it down.
func serveOn(t *testing.T, st lease.Store) (*service.Service, string, chan error) {
	t.Helper()
	svc, err := service.New(t.Context(), service.Config{Node: node.Config{Store: st, Keeper: lease.KeeperConfig{Range: &lease.Range{Lo: 1, Hi: 1}}}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ln, nil) }()
	return svc, "http://" + ln.Addr().String(), served
}

// checkStopped checks what Shutdown leaves of a service that never held a
// number: Serve returned, the keeper's loop stopped, Ready and Done never
// closed.
func checkStopped(t *testing.T, svc *service.Service, served chan error) {
	t.Helper()
	if err := <-served; err != http.ErrServerClosed {
		t.Errorf("Serve = %v; want http.ErrServerClosed", err)
	}
	select {
	case <-svc.Node().Keeper.Closed():
	default:
		t.Error("the keeper's loop still runs after Shutdown returned")
	}
	select {
	case <-svc.Ready():
		t.Error("Ready closed, though no number was ever held")
	case <-svc.Done():
		t.Errorf("Done closed by Shutdown: %v", svc.Err())
	default:
	}
}

// Hypothesis (holds): Shutdown while the keeper's first claim is in flight
// (the store does not answer) returns, stops every goroutine the service
// started, and closes neither Ready nor Done; /readyz said 503 starting
// until then.
func TestShutdownDuringFirstClaim(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	st := hangingStore{refusingStore: refusingStore{}, entered: make(chan struct{}, 1)}
	svc, url, served := serveOn(t, st)
	<-st.entered
	if status, code, _ := readyz(t, url); status != http.StatusServiceUnavailable || code != "starting" {
		t.Errorf("/readyz during the first claim: %d %s; want 503 starting", status, code)
	}
	if err := svc.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	checkStopped(t, svc, served)
	http.DefaultClient.CloseIdleConnections()
}

// Hypothesis (holds): a spare (every number held) shut down while it waits
// stops cleanly: Waiting closed, Done never, no goroutine left.
func TestShutdownSpare(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	svc, _, served := serveOn(t, refusingStore{err: fmt.Errorf("%w: 1-1 held by another", lease.ErrNoFreeNumber)})
	select {
	case <-svc.Waiting():
	case <-t.Context().Done():
		t.Fatal("Waiting never closed")
	}
	if err := svc.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	checkStopped(t, svc, served)
}

// Hypothesis (holds): the errors of the start keep their types through
// service.New and node.Start: a range no layout holds (ErrInvalid and
// snowfence.ErrPlacement), a second generator on a keeper
// (snowfence.ErrLeaseBound), a start whose context ends during the first
// claim (the context's error).
func TestStartErrorsKeepTheirTypes(t *testing.T) {
	_, err := service.New(t.Context(), service.Config{Node: node.Config{Store: refusingStore{}, Keeper: lease.KeeperConfig{Range: &lease.Range{Lo: 0, Hi: 5000}}}})
	if !errors.Is(err, lease.ErrInvalid) || !errors.Is(err, snowfence.ErrPlacement) {
		t.Errorf("New with range 0-5000: %v; want ErrInvalid and ErrPlacement", err)
	}
	n, err := node.Launch(t.Context(), node.Config{Store: refusingStore{err: fmt.Errorf("%w: held", lease.ErrNoFreeNumber)},
		Keeper: lease.KeeperConfig{Range: &lease.Range{Lo: 1, Hi: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	if _, err := snowfence.New(snowfence.Config{Lease: n.Keeper}); !errors.Is(err, snowfence.ErrLeaseBound) {
		t.Errorf("a second generator on the node's keeper: %v; want ErrLeaseBound", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	st := hangingStore{entered: make(chan struct{}, 1)}
	go func() { <-st.entered; cancel() }()
	if _, err := node.Start(ctx, node.Config{Store: st, Keeper: lease.KeeperConfig{Range: &lease.Range{Lo: 1, Hi: 1}}}); !errors.Is(err, context.Canceled) {
		t.Errorf("node.Start canceled during the first claim: %v; want context.Canceled", err)
	}
}
