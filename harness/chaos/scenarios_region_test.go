package chaos

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// snowfenceEnv names the snowfence binary the opt-in tests of scenarios
// with services run.
const snowfenceEnv = "SNOWFENCE_CHAOS_SNOWFENCE"

// TestSharedRegionNumberIsCaught shows scenario 11 can fail: with both
// regions' holders on region number 0 (no registry, --region 0: two stores
// handing out the same machine numbers of one region), the oracle must
// find IDs issued by both regions, in the PRIMARY KEY and in memory alike,
// and the check on the region bits of the IDs handed out while region A
// was down must fail. It runs the scenario's short mode (about 20 s) and
// when SNOWFENCE_CHAOS_SNOWFENCE names a snowfence binary (go build -o
// /tmp/snowfence ./cmd/snowfence), or under CI=true, where it builds one;
// elsewhere it skips, so that go test ./... stays as fast as it was.
func TestSharedRegionNumberIsCaught(t *testing.T) {
	bin := os.Getenv(snowfenceEnv)
	if bin == "" && !testenv.CI() {
		t.Skip(snowfenceEnv + " is not set: give it a snowfence binary to run scenario 11 with both regions on region number 0 (CI builds one)")
	}
	if bin == "" {
		// Under CI=true the proof runs whatever the environment says.
		bin = filepath.Join(t.TempDir(), "snowfence")
		if out, err := exec.Command("go", "build", "-tags", "snowfence_testbound", "-o", bin, "github.com/snowfence/snowfence/cmd/snowfence").CombinedOutput(); err != nil {
			t.Fatalf("build snowfence for scenario 11: %v\n%s", err, out)
		}
	}
	pg := testenv.PostgresURL(t)
	var log bytes.Buffer
	opts := Options{Seed: 1, PostgresURL: pg, Store: StoreEtcd, Snowfence: bin, Command: testCommand, Dir: t.TempDir(), Log: &lockedWriter{w: &log}}
	row := runScenario(t.Context(), opts, nil, scenario{id: "11", name: "a lost region, both regions on region number 0",
		run: func(e *Env) error { return lostRegion(e, regionsShared) }})
	t.Logf("both regions on number 0: %d IDs, %d duplicates (PRIMARY KEY), %d in memory; examples %q", row.IDs, row.Duplicates, row.DuplicatesMemory, row.Examples)
	for _, c := range row.Checks {
		t.Logf("check %v %s: %s", c.OK, c.Name, c.Detail)
	}
	if row.Error != "" {
		t.Fatalf("row error: %s\n%s", row.Error, log.String())
	}
	if row.Duplicates == 0 || row.DuplicatesMemory != row.Duplicates {
		t.Errorf("duplicates: PRIMARY KEY %d, memory %d; want the same number > 0", row.Duplicates, row.DuplicatesMemory)
	}
	if !slices.ContainsFunc(row.Checks, func(c Check) bool {
		return c.Name == "the IDs handed out while region A was down carry region B's number" && !c.OK
	}) {
		t.Error("the region-bits check did not fail")
	}
	if row.Pass {
		t.Error("a row with duplicates passed")
	}
}
