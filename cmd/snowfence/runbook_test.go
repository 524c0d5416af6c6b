package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
)

// The runbook's examples are real: TestRunbook runs every command of
// docs/runbook.md that follows a `<!-- runbook: NAME -->` marker, in a
// scenario of its own (runbook_scenario_test.go), and holds the output the
// document shows to the output the command gives now. What changes from run
// to run (numbers, instants, the host name, ports) is masked before the
// comparison; everything else — words, fields, their order, the number of
// lines — must match. After changing a command's output, regenerate the
// examples with
//
//	go test ./cmd/snowfence -run TestRunbook -update-runbook
//
// and read the diff of docs/runbook.md.
var updateRunbook = flag.Bool("update-runbook", false, "rewrite the examples of docs/runbook.md with the output the commands give now")

// runbookPath is the runbook, from this package's directory.
const runbookPath = "../../docs/runbook.md"

// A runbookStep is one example: the command line as the runbook shows it,
// and what it printed.
type runbookStep struct {
	name, command, output string
}

var runbookMarker = regexp.MustCompile(`^<!-- runbook: ([a-z0-9-]+) -->$`)

// runbookBlock is one example in the document: the lines of its console
// block (between the fences) and where they are.
type runbookBlock struct {
	name       string
	start, end int // the block's lines are lines[start:end]
}

// runbookBlocks finds the examples of doc.
func runbookBlocks(t *testing.T, lines []string) []runbookBlock {
	t.Helper()
	var out []runbookBlock
	for i := 0; i < len(lines); i++ {
		m := runbookMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		j := i + 1
		if j >= len(lines) || strings.TrimSpace(lines[j]) != "```console" {
			t.Fatalf("runbook line %d: marker %q must be followed by a ```console block", i+1, m[1])
		}
		k := j + 1
		for k < len(lines) && strings.TrimSpace(lines[k]) != "```" {
			k++
		}
		if k == len(lines) {
			t.Fatalf("runbook line %d: the block of %q never ends", j+1, m[1])
		}
		out = append(out, runbookBlock{name: m[1], start: j + 1, end: k})
		i = k
	}
	return out
}

var (
	maskInstant = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	maskNumber  = regexp.MustCompile(`\d+(\.\d+)?`)
	maskHex     = regexp.MustCompile(`\b[0-9a-f]{8,}\b`)
	maskSpace   = regexp.MustCompile(`\s+`)
	maskPath    = regexp.MustCompile(`(^|\s)/[^\s:]*/`)
	maskHolder  = regexp.MustCompile(`[^\s"/]+/pid-\d+/\d+(/k\d+)?`)
	maskHost    = regexp.MustCompile(`(host\s+)\S+`)
)

// mask replaces what differs between runs and machines: holder names
// (host/pid-N/start), the host line of who, instants, numbers, paths, runs
// of spaces (column widths follow the values).
func mask(s string) string {
	s = maskHolder.ReplaceAllString(s, "HOLDER")
	s = maskHost.ReplaceAllString(s, "${1}HOST")
	s = maskInstant.ReplaceAllString(s, "T")
	s = maskHex.ReplaceAllString(s, "X")
	s = maskPath.ReplaceAllString(s, "${1}/P/")
	s = maskNumber.ReplaceAllString(s, "N")
	return strings.TrimSpace(maskSpace.ReplaceAllString(s, " "))
}

func TestRunbook(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	checkRunbook(t, runbookScenario(t, []string{"--etcd-endpoints", strings.Join(etcd.Endpoints(), ",")}, nil), *updateRunbook, false)
}

// The runbook's commands work on each store: the scenario on ZooKeeper (a
// real server from zktest) gives what docs/runbook.md shows, masked as
// TestRunbook masks it, but for the wording of the store's own errors in
// /healthz (each store words its quarantine and its refused claim; the
// runbook shows etcd's): the same lines, fields, codes and reasons. Its
// holders get short timings (the tables' would have the quarantined holder
// issue for minutes, to its 5-minute mark).
func TestRunbookZooKeeper(t *testing.T) {
	testenv.ZooKeeperLater(t)
	t.Parallel()
	e := zktest.Start(t, 1)
	checkRunbook(t, runbookScenario(t, zkFlags(e, "/runbook"), shortTableTimings), false, true)
}

// The runbook's commands on Kubernetes: the scenario of TestRunbookZooKeeper
// on a real kube-apiserver (k8stest), through the least-privilege service
// account's kubeconfig, with the same short timings.
func TestRunbookKubernetes(t *testing.T) {
	t.Parallel()
	_, _, flags := k8sFleet(t, "runbook")
	checkRunbook(t, runbookScenario(t, flags, shortTableTimings), false, true)
}

// shortTableTimings are holder timings for a store with the tables'
// timings in a scenario that waits for a holder to stop: a lease of 6 s,
// within the tests' bound (e2eTableMaxSelfFence), renewed every 2 s as on
// etcd — each renewal then has 1 s (the keeper's RequestTimeout, half the
// period), which a loaded machine's ZooKeeper meets; at 500 ms a renewal
// timed out now and then, and /healthz showed its last_error.
var shortTableTimings = []string{"--lease-ttl", "6s", "--renew-every", "2s", "--self-fence", "4s", "--fence-margin", "1s"}

// maskErrText is the text of the error fields of /healthz's JSON.
var maskErrText = regexp.MustCompile(`"(message|detail|last_error)":"(\\.|[^"\\])*"`)

// checkRunbook holds steps to the examples of docs/runbook.md, or with
// update writes them there; with storeWords the text of /healthz's error
// fields is the store's own, and not compared.
func checkRunbook(t *testing.T, steps []runbookStep, update, storeWords bool) {
	t.Helper()
	doc, err := os.ReadFile(runbookPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	blocks := runbookBlocks(t, lines)
	byName := map[string]runbookStep{}
	for _, s := range steps {
		byName[s.name] = s
	}
	var docNames []string
	for _, b := range slices.Backward(blocks) { // from the end, so earlier line numbers stay valid
		docNames = append(docNames, b.name)
		s, ok := byName[b.name]
		if !ok {
			t.Errorf("docs/runbook.md has an example %q no scenario step makes", b.name)
			continue
		}
		got := strings.Split(strings.TrimRight("$ "+s.command+"\n"+s.output, "\n"), "\n")
		if update {
			lines = slices.Replace(lines, b.start, b.end, got...)
			continue
		}
		want := lines[b.start:b.end]
		if len(want) != len(got) {
			t.Errorf("example %q: the runbook shows %d lines, the command now prints %d:\n%s\nrun go test ./cmd/snowfence -run TestRunbook -update-runbook",
				b.name, len(want), len(got), strings.Join(got, "\n"))
			continue
		}
		for i := range want {
			w, g := want[i], got[i]
			if storeWords {
				w, g = maskErrText.ReplaceAllString(w, `"$1":"…"`), maskErrText.ReplaceAllString(g, `"$1":"…"`)
			}
			if mw, mg := mask(w), mask(g); mw != mg {
				t.Errorf("example %q line %d:\n  runbook: %s\n  now:     %s\n(masked: %q vs %q); run go test ./cmd/snowfence -run TestRunbook -update-runbook",
					b.name, i+1, want[i], got[i], mw, mg)
			}
		}
	}
	for _, s := range steps {
		if !slices.Contains(docNames, s.name) {
			t.Errorf("scenario step %q has no example in docs/runbook.md (add `<!-- runbook: %s -->` and a console block)", s.name, s.name)
		}
	}
	if update {
		if err := os.WriteFile(runbookPath, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runbookCLI runs the snowfence binary with args and extra (flags the
// runbook leaves out, such as the data directory of the scenario's
// embedded etcd) and returns the step: the command as the runbook shows it
// and its output (stdout, then stderr), which must exit with wantCode.
func runbookCLI(t *testing.T, name string, wantCode int, extra []string, args ...string) runbookStep {
	t.Helper()
	cmd := exec.Command(binary(t), append(slices.Clone(args), extra...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != wantCode {
		t.Fatalf("runbook step %q: snowfence %v: exit %d, want %d\n%s%s", name, args, code, wantCode, out.String(), errb.String())
	}
	shown := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ,") {
			a = "'" + a + "'"
		}
		shown[i] = filepath.Base(a)
		if !strings.HasPrefix(a, "/") {
			shown[i] = a
		}
	}
	return runbookStep{name: name, command: "snowfence " + strings.Join(shown, " "), output: out.String() + errb.String()}
}

// fprint is fmt.Sprintf for scenario steps that are not CLI commands.
func fprint(format string, args ...any) string { return fmt.Sprintf(format, args...) }
