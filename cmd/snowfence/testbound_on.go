//go:build snowfence_testbound

package main

import (
	"fmt"
	"os"

	"github.com/snowfence/snowfence/internal/testbound"
)

// testBound is the table stores' Config.TestBound in a binary built for the
// project's end-to-end and chaos tests (-tags snowfence_testbound): from
// the environment variables testbound.EnvMaxSelfFence and
// testbound.EnvMaxReserve (testbound.FromEnv), which the test gives every
// process of its table.
var testBound = func() testbound.Bound {
	b, err := testbound.FromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "snowfence: %v\n", err)
		os.Exit(2)
	}
	return b
}()
