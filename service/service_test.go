package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/service"
)

// refusingStore refuses every claim with err; it keeps no registry.
type refusingStore struct {
	lease.Store
	err error
}

func (s refusingStore) Claim(context.Context, lease.ClaimRequest) (*lease.Lease, error) {
	return nil, s.err
}
func (refusingStore) MaxRestoreWindow() time.Duration      { return etcdstore.MaxRestoreWindow }
func (refusingStore) MaxNoticeWindow() time.Duration       { return etcdstore.MaxNoticeWindow }
func (refusingStore) RegistryReader() lease.RegistryReader { return nil }
func (refusingStore) Region() int                          { return 0 }
func (refusingStore) Close() error                         { return nil }

// startOn starts a service on st and serves it on a loopback listener.
func startOn(t *testing.T, st lease.Store) (*service.Service, string) {
	t.Helper()
	svc, err := service.New(t.Context(), service.Config{Node: node.Config{Store: st, Keeper: lease.KeeperConfig{Range: &lease.Range{Lo: 1, Hi: 1}}}})
	if err != nil {
		t.Fatalf("New: %v; want a service whose keeper claims in the background", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go svc.Serve(ln, nil)
	t.Cleanup(func() { svc.Shutdown(context.Background()) })
	return svc, "http://" + ln.Addr().String()
}

// readyz returns /readyz's status and error code and reason.
func readyz(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b struct{ Error struct{ Code, Reason string } }
	json.NewDecoder(resp.Body).Decode(&b)
	return resp.StatusCode, b.Error.Code, b.Error.Reason
}

// A spare: every number held; the service serves, answers 503 starting
// no-free-number, Waiting closes and Done does not.
func TestServiceSpareWaits(t *testing.T) {
	svc, url := startOn(t, refusingStore{err: fmt.Errorf("%w: 1-1 held by another", lease.ErrNoFreeNumber)})
	select {
	case <-svc.Waiting():
	case <-t.Context().Done():
		t.Fatal("Waiting never closed")
	}
	if status, code, reason := readyz(t, url); status != http.StatusServiceUnavailable || code != "starting" || reason != "no-free-number" {
		t.Errorf("/readyz of a spare: %d %s %s; want 503 starting no-free-number", status, code, reason)
	}
	select {
	case <-svc.Done():
		t.Errorf("Done closed for a spare: %v", svc.Err())
	case <-svc.Ready():
		t.Error("Ready closed with no number held")
	default:
	}
}

// A first claim refused for good (the fleet's schedule differs) closes
// Done with the keeper's error; the service does not wait for ever.
func TestServiceFirstClaimRefused(t *testing.T) {
	svc, url := startOn(t, refusingStore{err: fmt.Errorf("%w: the fleet runs another", lease.ErrSchedule)})
	select {
	case <-svc.Done():
	case <-t.Context().Done():
		t.Fatal("Done never closed on a refused first claim")
	}
	if err := svc.Err(); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("Err = %v; want ErrSchedule", err)
	}
	if status, code, _ := readyz(t, url); status != http.StatusServiceUnavailable || code != "starting" {
		t.Errorf("/readyz after the refusal: %d %s; want 503 starting", status, code)
	}
}

// A request header over the service's bound is refused with 431 before the
// handler runs, on a server that would otherwise buffer up to net/http's
// 1 MiB default for every connection.
func TestServiceBoundsHeaderBytes(t *testing.T) {
	_, url := startOn(t, refusingStore{err: lease.ErrNoFreeNumber})
	req, err := http.NewRequest("GET", url+"/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Padding", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 64 KiB header: %d, want 431", resp.StatusCode)
	}
	if code, _, _ := readyz(t, url); code == http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("an ordinary request: 431")
	}
}
