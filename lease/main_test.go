package lease_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// envChildConfig holds the configuration of a child holder process: the
// soak tests re-execute this test binary with it set to run TestChildHolder
// (child_test.go).
const envChildConfig = "SNOWFENCE_CHILD_CONFIG"

// TestMain fails the package's tests if a goroutine outlives them: every
// keeper a test starts must have stopped its renewal loop and watchdog by
// the end, and every store and etcd cluster it opened must be closed.
//
// A child holder process (TestChildHolder, re-executed by the soak tests)
// is not checked: it is not a test run, its parent does not read its exit
// status, and the check's retries would only delay the exit its parent
// waits for. When its lifetime runs out, its goroutine echoing the parent's
// stdin is still reading, by design; the process's exit ends it.
func TestMain(m *testing.M) {
	if os.Getenv(envChildConfig) != "" {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
