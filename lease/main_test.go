package lease_test

import (
	"fmt"
	"os"
	"testing"
	"time"

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
//
// The check is goleak.Find, asked again until leakWait has passed (each
// Find itself waits about two seconds): the peer connections between the
// members of a three-member embedded etcd end asynchronously after the
// cluster's Close (etcd's HTTP transport finishing a stream), several
// seconds later after TestKeepersRideOutLeaderStop stopped its leader —
// longer than one Find waits, which a CI run hit. A goroutine of ours
// that never ends still fails the run, leakWait later.
func TestMain(m *testing.M) {
	if os.Getenv(envChildConfig) != "" {
		os.Exit(m.Run())
	}
	code := m.Run()
	if code == 0 {
		err := goleak.Find()
		for end := time.Now().Add(leakWait); err != nil && time.Now().Before(end); {
			err = goleak.Find()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakWait bounds how long TestMain asks goleak.Find again before it
// fails the run (a bound on waiting for etcd's teardown, not a figure the
// tests measure).
const leakWait = 30 * time.Second
