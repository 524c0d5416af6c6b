package server

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: the
// server starts none per request, so any left over is a leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
