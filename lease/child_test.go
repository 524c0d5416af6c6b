//go:build linux

package lease_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/soaktest"
	"github.com/snowfence/snowfence/internal/testkit/wire"
	"github.com/snowfence/snowfence/lease"
)

// Holders in child processes. The parent test re-executes its own test
// binary with a JSON childConfig in SNOWFENCE_CHILD_CONFIG; TestChildHolder
// then runs keepers and generators against the given etcd and reports what
// they do, one flushed frame (package internal/testkit/wire) each, as
// internal/testkit/soaktest describes (claimed, noclaim, ids, fenced, refused,
// echo, fatal). envChildConfig is in main_test.go, whose TestMain tells a
// child process from a test run by it.

// childConfig is what a child holder process runs.
type childConfig struct {
	Endpoints []string
	Prefix    string
	Range     lease.Range
	// Holders is how many keeper+generator pairs the process runs.
	Holders int
	// Batch IDs are taken every Every, per holder.
	Batch int
	Every time.Duration
	// Lifetime bounds the process's life.
	Lifetime time.Duration
	// Keeper timings.
	LeaseFor, RenewEvery, SelfFence time.Duration
}

// Spec makes childConfig a soaktest.Config.
func (c childConfig) Spec() soaktest.HolderSpec {
	return soaktest.HolderSpec{Range: c.Range, Holders: c.Holders, Batch: c.Batch, Every: c.Every, Lifetime: c.Lifetime,
		LeaseFor: c.LeaseFor, RenewEvery: c.RenewEvery, SelfFence: c.SelfFence}
}

// childHolder is the child process started for a childConfig.
func childHolder(cfg childConfig) soaktest.Child {
	return soaktest.Child{Test: "TestChildHolder", Env: envChildConfig, Config: cfg}
}

// TestChildHolder is not a test: it is the body of a child holder process,
// and skips unless the parent test started it.
func TestChildHolder(t *testing.T) {
	soaktest.ChildMain(t, envChildConfig, "TestPausedHolder or TestSoak", func(ctx context.Context, cfg childConfig, out *soaktest.Out) {
		// On a busy machine (CI runs the race-instrumented packages two
		// at a time, some of them starting dozens of processes) a first
		// connect can take longer than its timeout: try up to five times,
		// as a supervisor restarting the holder would.
		var s *etcdstore.Store
		var err error
		for try := 1; ; try++ {
			s, err = etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: cfg.Endpoints, DialTimeout: 2 * time.Second},
				etcdstore.Config{Prefix: cfg.Prefix, RequestTimeout: time.Second})
			if err == nil || ctx.Err() != nil || try == 5 {
				break
			}
		}
		if err != nil {
			if ctx.Err() == nil { // else told to exit while starting up
				out.Fatal(err)
			}
			return
		}
		defer s.Close()
		soaktest.RunHolders(ctx, cfg.Spec(), s, out)
	})
}

// childProc is a running child holder process, seen from the parent.
type childProc struct {
	*soaktest.Proc
	stderr stderrOf
}

// stderrOf formats as what the child wrote to its stderr so far.
type stderrOf struct{ p *soaktest.Proc }

func (s stderrOf) String() string { return s.p.Stderr() }

// startChild starts a child holder process running cfg; onFrame gets each
// frame it sends, in order, on a goroutine of its own. The child is killed
// when the test ends, if it has not exited by then.
func startChild(t *testing.T, cfg childConfig, onFrame func(wire.Frame)) *childProc {
	t.Helper()
	p := soaktest.Spawn(t, childHolder(cfg), onFrame)
	return &childProc{Proc: p, stderr: stderrOf{p}}
}

func (p *childProc) signal(sig syscall.Signal) error { return p.Signal(sig) }
func (p *childProc) finish(d time.Duration)          { p.Finish(d) }
func (p *childProc) write(line string) error         { return p.Write(line) }
func (p *childProc) stopped() bool                   { return p.Stopped() }
