package netns_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/harness/chaos/netns"
)

func TestAvailableSaysWhy(t *testing.T) {
	err := netns.Available()
	if err != nil && !errors.Is(err, netns.ErrUnavailable) {
		t.Fatalf("Available() = %v; want nil or an error matching ErrUnavailable", err)
	}
	if err != nil {
		t.Logf("mode: host namespace (%v)", err)
	} else {
		t.Logf("mode: network namespaces")
	}
}

func TestNewRejectsBadNames(t *testing.T) {
	tests := []struct {
		name string
		ns   string
	}{
		{"empty", ""},
		{"no prefix", "holder-1"},
		{"prefix only", netns.Prefix},
		{"slash", netns.Prefix + "a/b"},
		{"newline", netns.Prefix + "a\n"},
		{"space", netns.Prefix + "a b"},
		{"too long", netns.Prefix + strings.Repeat("x", 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := netns.New(tt.ns)
			if err == nil {
				n.Close()
				t.Fatalf("New(%q): no error", tt.ns)
			}
			if !errors.Is(err, netns.ErrInvalidName) {
				t.Fatalf("New(%q) = %v; want ErrInvalidName", tt.ns, err)
			}
		})
	}
}

func TestCleanupRejectsForeignPrefixes(t *testing.T) {
	for _, prefix := range []string{"", "s", "cni-", netns.Prefix + "a/"} {
		if err := netns.Cleanup(prefix); !errors.Is(err, netns.ErrInvalidName) {
			t.Errorf("Cleanup(%q) = %v; want ErrInvalidName", prefix, err)
		}
	}
}

func TestAddressesMustBeLiteral(t *testing.T) {
	host := netns.Host()
	listens := []struct{ network, addr string }{
		{"tcp", "localhost:0"},
		{"udp", "127.0.0.1:0"},
		{"unix", "/tmp/x.sock"},
		{"tcp", "127.0.0.1"},
	}
	for _, l := range listens {
		if ln, err := host.Listen(l.network, l.addr); !errors.Is(err, netns.ErrInvalidAddress) {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("Listen(%q, %q) = %v; want ErrInvalidAddress", l.network, l.addr, err)
		}
	}
	dials := []string{"localhost:80", ":80", "example.invalid:80"}
	for _, addr := range dials {
		if c, err := host.DialContext(context.Background(), "tcp", addr); !errors.Is(err, netns.ErrInvalidAddress) {
			if c != nil {
				c.Close()
			}
			t.Errorf("DialContext(tcp, %q) = %v; want ErrInvalidAddress", addr, err)
		}
	}
}

func TestHostNamespace(t *testing.T) {
	host := netns.Host()
	if !host.IsHost() || host.String() != "host network namespace" {
		t.Fatalf("Host(): IsHost %v, String %q", host.IsHost(), host.String())
	}
	ln, err := host.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	c, err := host.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("DialContext: %v", err)
	}
	c.Close()
	if err := host.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
