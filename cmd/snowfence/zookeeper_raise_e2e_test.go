package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// raise-marks on ZooKeeper refuses a --to under the store's restore window:
// 6 min in the binary operators run (this package's in-process CLI, built
// without snowfence_testbound, ignores the test environment) and in a test
// build whose bound has no reserve; in a test build given a reserve
// (testbound.EnvMaxReserve) the store's window is that test fleet's, and
// raise-marks accepts a --to just past it — as the chaos suite's restore
// drill (12d) runs it in the short mode.
func TestE2EZooKeeperRaiseMarksTestBound(t *testing.T) {
	testenv.ZooKeeperLater(t)
	t.Parallel()
	e := zktest.Start(t, 1)
	flags := zkFlags(e, "/e2e-raise")
	const reserve = 30 * time.Second
	window := lease.RestoreWindow(reserve, e2eTableMaxSelfFence) // 34 s
	raise := func(to time.Duration) []string {
		return append([]string{"leases", "raise-marks", "--to", "now+" + to.String(), "--machines", "0-3", "--layout", "v1", "--json", "--yes"}, flags...)
	}
	tooEarly := "give at least now+" + zkstore.MaxRestoreWindow.String()

	// The binary operators run (this in-process CLI, built without the
	// tag, under TestMain's test environment): no bound.
	if code, _, errOut := runCLI(t, raise(window+5*time.Second)...); code != 2 || !strings.Contains(errOut, tooEarly) {
		t.Errorf("raise-marks --to now+%v (normal build): exit %d, stderr %s; want 2, %q", window+5*time.Second, code, errOut, tooEarly)
	}

	// A test build: without a reserve, the 6-minute window; with one, the
	// fleet's.
	noReserve := []string{testbound.EnvMaxReserve + "="}
	if code, _, errOut := tryCLIEnv(t, noReserve, raise(window+5*time.Second)...); code != 2 || !strings.Contains(errOut, tooEarly) {
		t.Errorf("raise-marks --to now+%v (test build, no reserve): exit %d, stderr %s; want 2, %q", window+5*time.Second, code, errOut, tooEarly)
	}
	withReserve := []string{testbound.EnvMaxReserve + "=" + reserve.String()}
	if code, _, errOut := tryCLIEnv(t, withReserve, raise(window-5*time.Second)...); code != 2 || !strings.Contains(errOut, "give at least now+"+window.String()) {
		t.Errorf("raise-marks --to now+%v (test build, reserve %v): exit %d, stderr %s; want 2, the fleet's window %v", window-5*time.Second, reserve, code, errOut, window)
	}
	code, out, errOut := tryCLIEnv(t, withReserve, raise(window+5*time.Second)...)
	var raised struct{ Raised int }
	if err := json.Unmarshal([]byte(out), &raised); code != 0 || err != nil || raised.Raised != 4 {
		t.Errorf("raise-marks --to now+%v (test build, reserve %v): exit %d, stdout %s, stderr %s; want 4 raised", window+5*time.Second, reserve, code, out, errOut)
	}
}
