// Package testbound lets the project's own tests run a lease table with a
// shorter notice window than the tables' 4 min 40 s, so that a claim in a
// test waits seconds, not minutes.
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
// tag (cmd/snowfence/testbound_on.go), from the environment variable
// EnvMaxSelfFence, as the project's end-to-end and chaos tests build it.
package testbound

import (
	"fmt"
	"time"
)

// EnvMaxSelfFence is the environment variable a snowfence binary built with
// the snowfence_testbound tag reads its table stores' Bound from (a Go
// duration; empty: none).
const EnvMaxSelfFence = "SNOWFENCE_TEST_TABLE_MAX_SELF_FENCE"

// Bound is a lease table's longest self-fence of any holder, for a test
// fleet that runs every process of the table with it. The zero Bound means
// the store's own timings.
type Bound struct {
	maxSelfFence time.Duration
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

// Check refuses a negative bound.
func (b Bound) Check() error {
	if b.maxSelfFence < 0 {
		return fmt.Errorf("test bound: MaxSelfFence %v is negative", b.maxSelfFence)
	}
	return nil
}
