package node_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A node of region 1 under the default schedule v1, which has no region
// bits, is refused before it claims anything: the etcd store leases
// numbers per region, so it would hold the same numbers as region 0.
func TestStartRefusesRegionUnderV1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := embedded(t.TempDir(), lease.Range{Lo: 5, Hi: 5})
	cfg.Keeper.Region = 1
	_, err := node.Start(ctx, cfg)
	if !errors.Is(err, snowfence.ErrPlacement) || !strings.Contains(err.Error(), "use region 0 until the cutover") {
		t.Fatalf("region 1 under v1: %v, want ErrPlacement", err)
	}
}

// The generator's schedule goes to the keeper, which claims with it; two
// different ones are refused by snowfence.New (ErrInvalidConfig: the one
// check of the generator's schedule against its lease's), after the
// keeper's claim, which Start releases.
func TestStartSharesTheSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sched, err := snowfence.ParseSchedule("v1,v2@2099-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	cfg := embedded(t.TempDir(), lease.Range{Lo: 5, Hi: 5})
	cfg.Keeper.Schedule = snowfence.DefaultSchedule()
	cfg.Generator.Schedule = sched
	if _, err := node.Start(ctx, cfg); !errors.Is(err, snowfence.ErrInvalidConfig) || !strings.Contains(err.Error(), "differs from the lease keeper's schedule") {
		t.Fatalf("keeper on v1, generator on %s: %v, want ErrInvalidConfig from New", sched, err)
	}
	// Only the generator's: the keeper claims with it, and the store
	// (whose fleet schedule is still v1) refuses the claim.
	cfg.Keeper.Schedule = snowfence.Schedule{}
	if _, err := node.Start(ctx, cfg); !errors.Is(err, lease.ErrSchedule) {
		t.Fatalf("generator on %s with the fleet on v1: %v, want ErrSchedule from the keeper's claim", sched, err)
	}
}

// Starting the embedded etcd logs a warning that it is unique only on
// this host.
func TestStartWarnsEmbeddedIsOneHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs syncBuffer
	cfg := embedded(t.TempDir(), lease.Range{Lo: 5, Hi: 5})
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "on this host only") {
		t.Fatalf("no warning about the embedded etcd being one host's; logs:\n%s", out)
	}
}
