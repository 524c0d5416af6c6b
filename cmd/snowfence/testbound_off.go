//go:build !snowfence_testbound

package main

import "github.com/snowfence/snowfence/internal/testbound"

// testBound is the table stores' Config.TestBound: none in the binary
// operators run (internal/testbound says why nothing may shorten the
// tables' notice or restore window there).
var testBound testbound.Bound
