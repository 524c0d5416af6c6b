package testkit_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const (
	module  = "github.com/snowfence/snowfence"
	testkit = module + "/internal/testkit"
)

// goList runs go list in the root module (GOWORK=off: scripts/test runs
// the tests in a workspace of both modules) and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Fields(strings.TrimSpace(string(out)))
}

func inTestKit(pkg string) bool {
	return pkg == testkit || strings.HasPrefix(pkg, testkit+"/")
}

// TestProductNeverImportsTheTestKit: no non-test file of the root module
// outside internal/testkit imports it, so the binary (and any program
// built on the library) never links it.
func TestProductNeverImportsTheTestKit(t *testing.T) {
	for _, line := range goList(t, "-f", `{{.ImportPath}}:{{join .Imports ","}}`, module+"/...") {
		pkg, imports, _ := strings.Cut(line, ":")
		if inTestKit(pkg) {
			continue
		}
		for _, imp := range strings.Split(imports, ",") {
			if inTestKit(imp) {
				t.Errorf("%s imports %s outside its tests: the test kit is for tests only (move what the product needs out of internal/testkit)", pkg, imp)
			}
		}
	}
}

// TestInternalHoldsWhatTheBinaryLinks: every package in internal/ outside
// the test kit is one cmd/snowfence links, so that internal/ stays what the
// binary is made of; test helpers belong in internal/testkit and the
// harness in its own module (harness/).
func TestInternalHoldsWhatTheBinaryLinks(t *testing.T) {
	deps := goList(t, "-deps", module+"/cmd/snowfence")
	for _, pkg := range goList(t, module+"/internal/...") {
		if inTestKit(pkg) {
			continue
		}
		if !slices.Contains(deps, pkg) {
			t.Errorf("%s is in internal/ but cmd/snowfence does not link it: a test helper goes in internal/testkit, harness code in the harness module (harness/)", pkg)
		}
	}
}
