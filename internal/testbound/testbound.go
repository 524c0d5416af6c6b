// Package testbound lets the project's own tests run a lease table with a
// shorter notice window than the tables' 4 min 40 s, so that a claim in a
// test waits seconds, not minutes, and (on a store that honours it:
// zkstore) a shorter restore window than the tables' 6 min, so that a
// restore drill waits seconds too.
//
// The notice window is the wait before the first grant of every claim on a
// store: it covers the longest self-fence of any holder of the store, which
// may still be issuing on a number that a restored table let another
// process claim. Every process of one table must therefore use the same
// window, and nothing in a table records it, so a library user or an
// operator cannot choose one: a process given a shorter window than its
// peers would start issuing on a number while a cut-off peer may still
// issue on it. A test fleet, whose every process the test starts, can.
//
// Bound is the value the table stores' Config carries. Only code inside
// this module can make a non-zero one (package internal), so a library
// user's Config always has the zero Bound: the tables' own timings. The
// snowfence binary accepts one only when built with the snowfence_testbound
// tag (cmd/snowfence/testbound_on.go), from the environment variables
// EnvMaxSelfFence and EnvMaxReserve, as the project's end-to-end and chaos
// tests build it.
//
// The restore window is the same kind of fleet-wide bound: after a restore
// the store floors every claim at it, and it must cover the longest any
// cut-off holder may go on issuing, max(Reserve, SelfFence) × 1.1 + 1 s
// (lease.RestoreWindow), of every holder of the table. A Bound shortens it
// only when it carries a reserve as well as a self-fence (WithMaxReserve):
// a test fleet whose every holder's Reserve and SelfFence are within it.
package testbound

import (
	"fmt"
	"time"
)

// EnvMaxSelfFence is the environment variable a snowfence binary built with
// the snowfence_testbound tag reads its table stores' Bound from (a Go
// duration; empty: none).
const EnvMaxSelfFence = "SNOWFENCE_TEST_TABLE_MAX_SELF_FENCE"

// EnvMaxReserve is the environment variable a snowfence binary built with
// the snowfence_testbound tag reads its table stores' Bound's reserve from
// (a Go duration; empty: none, the store's own restore window). It needs
// EnvMaxSelfFence too.
const EnvMaxReserve = "SNOWFENCE_TEST_TABLE_MAX_RESERVE"

// Bound is a lease table's longest self-fence of any holder, for a test
// fleet that runs every process of the table with it. The zero Bound means
// the store's own timings.
type Bound struct {
	maxSelfFence time.Duration
	maxReserve   time.Duration
}

// Of returns the Bound of a table whose holders' self-fence is at most d.
func Of(d time.Duration) Bound {
	return Bound{maxSelfFence: d}
}

// MaxSelfFence is the bound's longest self-fence (0: none, the store's
// own timings).
func (b Bound) MaxSelfFence() time.Duration {
	return b.maxSelfFence
}

// WithMaxReserve returns b with the longest Reserve of any holder of the
// table, d: a store that honours it shortens its restore window to
// lease.RestoreWindow(d, MaxSelfFence).
func (b Bound) WithMaxReserve(d time.Duration) Bound {
	b.maxReserve = d
	return b
}

// MaxReserve is the bound's longest reserve (0: none, the store's own
// restore window).
func (b Bound) MaxReserve() time.Duration {
	return b.maxReserve
}

// Check refuses a negative bound, and a reserve without a self-fence: the
// restore window covers the self-fence too, which the store's own notice
// window would then let reach minutes.
func (b Bound) Check() error {
	switch {
	case b.maxSelfFence < 0:
		return fmt.Errorf("test bound: MaxSelfFence %v is negative", b.maxSelfFence)
	case b.maxReserve < 0:
		return fmt.Errorf("test bound: MaxReserve %v is negative", b.maxReserve)
	case b.maxReserve > 0 && b.maxSelfFence == 0:
		return fmt.Errorf("test bound: MaxReserve %v without a MaxSelfFence", b.maxReserve)
	}
	return nil
}

// FromEnv is the Bound a snowfence binary built with the
// snowfence_testbound tag gives its table stores: EnvMaxSelfFence and
// EnvMaxReserve read with getenv (os.Getenv), each a positive Go duration
// or empty (none). An error says which variable is wrong.
func FromEnv(getenv func(string) string) (Bound, error) {
	var b Bound
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{EnvMaxSelfFence, &b.maxSelfFence}, {EnvMaxReserve, &b.maxReserve}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return Bound{}, fmt.Errorf("%s=%q is not a positive Go duration (a test build's table bound)", v.name, s)
		}
		*v.to = d
	}
	if err := b.Check(); err != nil {
		return Bound{}, fmt.Errorf("%v: set %s too", err, EnvMaxSelfFence)
	}
	return b, nil
}
