package etcdstore_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// TestOwnership: a Store from New leaves its client open on Close; one from
// Connect closes its own. Both refuse calls after Close.
func TestOwnership(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	s, err := etcdstore.New(cli, etcdstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctxFor(t), 0); !errors.Is(err, etcdstore.ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
	if _, err := cli.Get(ctxFor(t), "k"); err != nil {
		t.Errorf("caller's client after Store.Close: %v, want it open", err)
	}

	owned, err := etcdstore.Connect(ctxFor(t), etcdstore.ClientConfig{Endpoints: c.Endpoints()}, etcdstore.Config{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if _, err := owned.Get(ctxFor(t), 0); err != nil {
		t.Fatalf("Get: %v", err)
	}
	if err := owned.Close(); err != nil {
		t.Errorf("Close of a Store owning its client: %v", err)
	}
}

// TestOpenUnreachable: Open fails within its dial timeout, saying what to
// check, when nothing serves the endpoint.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	begin := time.Now()
	cli, err := etcdstore.Open(context.Background(), etcdstore.ClientConfig{Endpoints: []string{ep}, DialTimeout: 300 * time.Millisecond})
	if err == nil {
		cli.Close()
		t.Fatal("Open of an endpoint nobody serves succeeded")
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Open took %v to fail, want about its 300 ms dial timeout", d)
	}
	t.Logf("Open: %v", err)
}

// TestTLSConfigErrors: a certificate without its key, and a CA file with no
// certificate, are refused with a message.
func TestTLSConfigErrors(t *testing.T) {
	t.Parallel()
	if _, err := etcdstore.TLSConfig("client.pem", "", ""); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("certificate without key: %v, want ErrInvalid", err)
	}
	junk := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := etcdstore.TLSConfig("", "", junk); err == nil {
		t.Error("CA file without a certificate: nil error")
	}
	if _, err := etcdstore.TLSConfig("", "", filepath.Join(t.TempDir(), "missing.pem")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing CA file: %v, want ErrNotExist", err)
	}
	cfg, err := etcdstore.TLSConfig("", "", "")
	if err != nil || cfg.MinVersion == 0 {
		t.Errorf("TLSConfig with no files = %v, %v; want a config with a minimum version", cfg, err)
	}
}
