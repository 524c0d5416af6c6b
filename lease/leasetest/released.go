package leasetest

import (
	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// Released is the mark a test closes a keeper with that fed g: g's
// LastIssued, once g is closed (so that nothing is issued after it), or
// lease.UnknownIssued when no generator was made (g nil), which releases
// each number with its whole reservation. For cleanups that close a keeper
// whose generator may not exist yet:
//
//	var g *snowfence.Generator
//	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
//	g, err = snowfence.New(snowfence.Config{Lease: k})
func Released(g *snowfence.Generator) int64 {
	if g == nil {
		return lease.UnknownIssued
	}
	g.Close()
	return g.LastIssued()
}
