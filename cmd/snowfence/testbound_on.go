//go:build snowfence_testbound

package main

import (
	"fmt"
	"os"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"
)

// testBound is the table stores' Config.TestBound in a binary built for the
// project's end-to-end and chaos tests (-tags snowfence_testbound): from
// the environment variable testbound.EnvMaxSelfFence, which the test gives
// every process of its table.
var testBound = func() testbound.Bound {
	v := os.Getenv(testbound.EnvMaxSelfFence)
	if v == "" {
		return testbound.Bound{}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		fmt.Fprintf(os.Stderr, "snowfence: %s=%q is not a positive Go duration (a test build's table bound)\n", testbound.EnvMaxSelfFence, v)
		os.Exit(2)
	}
	return testbound.Of(d)
}()
