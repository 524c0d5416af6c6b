package chaos

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/storeproc"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// roleEnv makes the test binary play a child role (see ChildMain), so the
// tests need no separately built harness.
const roleEnv = "SNOWFENCE_CHAOS_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(ChildMain(context.Background(), role, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// testCommand runs a child role in a copy of the test binary.
func testCommand(role string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	return cmd
}

// TestDisabledFenceIsCaught shows the suite can fail, on every store:
// scenario 4 with the library holders' fence switched off must report
// duplicates, in the PRIMARY KEY and in memory alike, and fail its row.
// The same scenario with the fence on passes in the short run scripts/test
// makes.
func TestDisabledFenceIsCaught(t *testing.T) {
	pg := testenv.PostgresURL(t)
	for _, store := range Stores() {
		t.Run(store, func(t *testing.T) {
			switch store {
			case StoreZooKeeper:
				testenv.ZooKeeperLater(t)
			case StoreKubernetes:
				testenv.KubernetesLater(t)
			}
			// The stores side by side, as the suite runs them: most of
			// a table store's scenario 4 is its claims' notice windows.
			t.Parallel()
			var log bytes.Buffer
			rep, err := Run(t.Context(), Options{
				Scenarios: []string{"4"}, NoFence: true, PostgresURL: pg, Store: store,
				Command: testCommand, Dir: t.TempDir(), Log: &log,
			})
			if errors.Is(err, storeproc.ErrMissing) {
				testenv.Missing(t, err.Error())
			}
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, log.String())
			}
			if len(rep.Rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(rep.Rows))
			}
			row := rep.Rows[0]
			t.Logf("%s, fence disabled: %d IDs, %d duplicates (PRIMARY KEY), %d in memory; examples %q", store, row.IDs, row.Duplicates, row.DuplicatesMemory, row.Examples)
			if row.Error != "" {
				t.Fatalf("row error: %s\n%s", row.Error, log.String())
			}
			if row.Duplicates == 0 || row.DuplicatesMemory != row.Duplicates {
				t.Errorf("duplicates: PRIMARY KEY %d, memory %d; want the same number > 0", row.Duplicates, row.DuplicatesMemory)
			}
			if row.Pass || rep.Pass() {
				t.Error("a run with duplicates passed")
			}
			if md := rep.Markdown(); !strings.Contains(md, "**NO**") || !strings.Contains(md, "FENCE DISABLED") {
				t.Errorf("the report does not show the failure:\n%s", md)
			}
		})
	}
}

func TestSelectScenarios(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
		err  bool
	}{
		{nil, "1 2 3 3b 4 5a 5b 5c 5d 5e 5f 5g 5h 6 7 8a 8b 8c 9a 9b 9c 9d 9e 9f 9g 10a 10b 10c 10d 10e 10f 11 12a 12b 12c 12d 13a 13b 13c 13d", false},
		{[]string{"8"}, "8a 8b 8c", false},
		{[]string{"5"}, "5a 5b 5c 5d 5e 5f 5g 5h", false},
		{[]string{"3"}, "3 3b", false},
		{[]string{"10"}, "10a 10b 10c 10d 10e 10f", false},
		{[]string{"1", "5b"}, "1 5b", false},
		{[]string{"9"}, "9a 9b 9c 9d 9e 9f 9g", false},
		{[]string{"5z"}, "", true},
		{[]string{"11"}, "11", false},
		{[]string{"12"}, "12a 12b 12c 12d", false},
		{[]string{"13"}, "13a 13b 13c 13d", false},
		{[]string{"14"}, "", true},
	} {
		got, err := selectScenarios(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("%q: error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		var ids []string
		for _, sc := range got {
			ids = append(ids, sc.id)
		}
		if s := strings.Join(ids, " "); s != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, s, tc.want)
		}
	}
}

// Every scenario runs or says why not: the etcd faults are n/a on the
// tables, the short mode leaves some out on them, and a scenario named
// runs in the short mode too.
func TestScenarioSkips(t *testing.T) {
	for _, tc := range []struct {
		id, store   string
		long, named bool
		want        string
	}{
		{"5a", StoreEtcd, false, false, ""},
		{"5c", StoreEtcd, false, false, "long mode only on etcd"},
		{"5c", StoreEtcd, true, false, ""},
		{"5c", StoreEtcd, false, true, ""},
		{"5a", StorePostgres, true, true, "n/a (etcd only)"},
		{"9a", StoreDynamoDB, true, false, "n/a (postgres only)"},
		{"2", StorePostgres, false, false, "long mode only on postgres"},
		{"2", StorePostgres, true, false, ""},
		{"2", StorePostgres, false, true, ""},
		// The holders' stories spread over the tables' lanes: 1 and 6 on
		// PostgreSQL, 3b and 7 on DynamoDB, each once in the short mode.
		{"1", StorePostgres, false, false, ""},
		{"1", StoreEtcd, false, false, "long mode only on etcd"},
		{"1", StoreEtcd, true, false, ""},
		{"1", StoreDynamoDB, false, false, "long mode only on dynamodb"},
		{"6", StorePostgres, false, false, ""},
		{"6", StoreEtcd, false, false, "long mode only on etcd"},
		{"3b", StoreDynamoDB, false, false, ""},
		{"7", StoreDynamoDB, false, false, ""},
		{"7", StoreEtcd, false, false, "long mode only on etcd"},
		{"7", StoreEtcd, false, true, ""},
		{"9d", StorePostgres, false, false, "long mode only on postgres"},
		{"4", StoreDynamoDB, false, false, ""},
		{"11", StoreEtcd, false, false, ""},
		{"11", StorePostgres, true, true, "n/a (etcd only)"},
		{"4", StoreZooKeeper, false, false, "long mode only on zookeeper"},
		{"8a", StoreZooKeeper, false, false, ""},
		{"12a", StoreZooKeeper, false, false, ""},
		{"12a", StorePostgres, true, true, "n/a (zookeeper only)"},
		{"12c", StoreZooKeeper, false, false, "long mode only on zookeeper"},
		{"12d", StoreZooKeeper, false, false, ""}, // the short mode's test bound shortens its restore window
		{"12d", StoreZooKeeper, true, false, ""},
		// Kubernetes: its own faults, and 4 (library holders alone) when
		// named or long; the scenarios whose story needs services say n/a.
		{"13a", StoreKubernetes, false, false, ""},
		{"13b", StoreKubernetes, false, false, ""},
		{"13c", StoreKubernetes, false, false, "long mode only on kubernetes"},
		{"13d", StoreKubernetes, false, false, ""},
		{"13a", StoreZooKeeper, true, true, "n/a (kubernetes only)"},
		{"4", StoreKubernetes, false, false, "long mode only on kubernetes"},
		{"4", StoreKubernetes, false, true, ""},
		{"8a", StoreKubernetes, false, false, ""}, // library holders alone (cutLongLibraries)
		{"8b", StoreKubernetes, true, true, "n/a on kubernetes (its services: the suite starts no snowfence serve on Kubernetes yet)"},
		{"1", StoreKubernetes, true, false, "n/a on kubernetes (its services: the suite starts no snowfence serve on Kubernetes yet)"},
	} {
		sel, err := selectScenarios([]string{tc.id})
		if err != nil {
			t.Fatal(err)
		}
		if got := sel[0].skip(tc.store, tc.long, tc.named); got != tc.want {
			t.Errorf("%s on %s (long %v, named %v): skip %q, want %q", tc.id, tc.store, tc.long, tc.named, got, tc.want)
		}
	}
}

func TestRunNeedsOptions(t *testing.T) {
	if _, err := Run(t.Context(), Options{}); err == nil {
		t.Error("Run with no options succeeded")
	}
}

func TestReportMarkdown(t *testing.T) {
	rep := &Report{Mode: "short", Seed: 3, Started: time.Unix(0, 0).UTC(), Elapsed: "1s", Rows: []Row{
		{Scenario: "1", Name: "one", IDs: 1234567, Refused: 5, RecoverMs: 266, RecoverWhat: "node 5", Pass: true,
			Checks: []Check{{Name: "refused", OK: true, Detail: "503"}}},
		{Scenario: "2", Name: "two", IDs: 10, Duplicates: 1, DuplicatesMemory: 1, RecoverMs: -1},
	}}
	md := rep.Markdown()
	for _, want := range []string{
		"| 1. one | 1,234,567 | 0 / 0 | 5 | 0 | 266 ms (node 5) | yes |",
		"| 2. two | 10 | 1 / 1 | 0 | 0 | — | **NO** |",
		"| all | 1,234,577 | 1 / 1 | 5 | 0 | — | **NO** |",
		"- ok — refused: 503",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if rep.Pass() {
		t.Error("a report with a failed row passed")
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "report.json"} {
		if _, err := os.Stat(dir + "/" + f); err != nil {
			t.Error(err)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 123456789: "123,456,789", -5: "-5"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// The short cut of 8b stays within the fence by its own bound, with the
// network scenarios' former timings and with every self-fence and renewal
// netBox can draw.
func TestShortCut(t *testing.T) {
	if got, want := shortCut(5*time.Second, time.Second), 1500*time.Millisecond; got != want {
		t.Errorf("shortCut(5s, 1s) = %v, want %v", got, want)
	}
	b := netBox
	for S := b.fenceLo; S <= b.fenceHi; S += 100 * time.Millisecond {
		for _, frac := range []float64{b.renewLo, b.renewHi} {
			R := max(b.renewMin, time.Duration(frac*float64(S)).Round(50*time.Millisecond))
			d := shortCut(S, R)
			if d <= 0 || R+2*d+200*time.Millisecond+R/4+500*time.Millisecond >= S {
				t.Errorf("shortCut(%v, %v) = %v: outside (0, the bound)", S, R, d)
			}
		}
	}
}
