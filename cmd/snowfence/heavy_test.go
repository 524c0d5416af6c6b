package main

import (
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/slots"
)

// heavySlots bounds how many of the package's heaviest end-to-end tests run
// at once (go test runs -parallel 6 on 2 cores in scripts/test): a
// connection flood, six Prism processes, the generators' builds and three
// etcd regions at once starved one another's etcd of the CPU it needs to
// answer within a holder's dial timeout.
var heavySlots = slots.New(2)

// heavy waits for one of heavySlots and gives it back when t ends. Call it
// after t.Parallel.
func heavy(t *testing.T) { t.Helper(); heavySlots.Take(t) }
