package node_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: a
// closed Node must have stopped its keeper, generator and store.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
