package etcdtest

import "github.com/snowfence/snowfence/internal/testkit/freeport"

// attempts is how many times Start and StartBinary try fresh ports before
// giving up.
const attempts = 5

// freePorts and isAddrInUse: see package freeport.
var (
	freePorts   = freeport.Loopback
	isAddrInUse = freeport.InUse
)
