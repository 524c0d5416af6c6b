package client

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: every
// Client must stop its refill and probe goroutines on Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
