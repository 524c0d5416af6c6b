package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestE2EGeneratedClients generates a client from api/openapi.json with
// each of two independent generators — oapi-codegen (Go) and
// openapi-typescript with openapi-fetch (TypeScript, type-checked by tsc
// --strict, run by node) — and makes the natural call of every operation
// through it against a live serve (contract/goclient/caller.go,
// contract/tsclient/caller.ts): each must answer 200 and decode into the
// generated types. The clients are generated in the test, from the
// description as it is now, so they cannot go stale; the build cache
// keeps oapi-codegen's compile to the first run. Either caller missing an
// operation of the description fails the test, so a new operation needs a
// natural call here too. The TypeScript types must also steer JavaScript
// callers off id_num: it is marked deprecated.
func TestE2EGeneratedClients(t *testing.T) {
	t.Parallel()
	heavy(t)
	tmp := t.TempDir()
	keys := filepath.Join(tmp, "keys.json")
	writeFile(t, keys, `{"keys": {"2": {"status": "primary", "key": "000102030405060708090a0b0c0d0e0f"}}}`)
	s := startService(t, filepath.Join(tmp, "data"), "--public-id-keys", keys, "--public-id-open-without-tls")
	spec, err := filepath.Abs(specPath)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(operationIDs(t)))

	t.Run("oapi-codegen", func(t *testing.T) {
		t.Parallel()
		began := time.Now()
		dir := copyDir(t, "../../contract/goclient", "go.mod", "go.sum", "caller.go", "oapi-codegen.yaml")
		gen := runIn(t, dir, "go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", spec)
		t.Logf("oapi-codegen: generated in %s %s", time.Since(began).Round(time.Millisecond), gen)
		out := runIn(t, dir, "go", "run", ".", "-url", s.url)
		checkCalled(t, out, want)
		t.Logf("oapi-codegen: %d operations called in %s", len(want), time.Since(began).Round(time.Millisecond))
	})
	t.Run("openapi-typescript", func(t *testing.T) {
		t.Parallel()
		began := time.Now()
		tool := npmTool(t, "openapi-typescript-7.13.0", "openapi-typescript")
		dir := copyDir(t, "../../contract/tsclient", "caller.ts", "tsconfig.json")
		if err := os.Symlink(filepath.Join(tool, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "package.json"), `{"type": "module"}`)
		bin := func(name string) string { return filepath.Join(tool, "node_modules", ".bin", name) }
		runIn(t, dir, bin("openapi-typescript"), spec, "-o", "schema.d.ts")
		types, err := os.ReadFile(filepath.Join(dir, "schema.d.ts"))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`@deprecated[^/]*\*/\s*id_num\?: number;`).Match(types) {
			t.Errorf("openapi-typescript does not mark id_num deprecated: a JavaScript caller is not steered to id")
		}
		runIn(t, dir, bin("tsc"), "-p", ".")
		out := runIn(t, dir, "node", "caller.js", s.url)
		checkCalled(t, out, want)
		t.Logf("openapi-typescript: %d operations called in %s", len(want), time.Since(began).Round(time.Millisecond))
	})
}

// operationIDs lists the operationIds of api/openapi.json.
func operationIDs(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, p := range loadSpecOps(t).paths {
		for _, op := range p.ops {
			ids = append(ids, op.id)
		}
	}
	return ids
}

// checkCalled checks that a caller printed every operation of want, each
// at least once (a name may carry a variant after '?').
func checkCalled(t *testing.T, out string, want []string) {
	t.Helper()
	called := map[string]bool{}
	for _, line := range strings.Fields(out) {
		op, _, _ := strings.Cut(line, "?")
		called[op] = true
	}
	for _, op := range want {
		if !called[op] {
			t.Errorf("the caller made no call of %s", op)
		}
	}
}

// copyDir copies the named files of src into a new temporary directory.
func copyDir(t *testing.T, src string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, n), string(b))
	}
	return dir
}

// runIn runs a command in dir (with the module of dir on its own: no
// workspace), bounded, and returns its standard output; it fails the test
// with both outputs if the command fails.
func runIn(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s %s: still running after 5 min\n%s", name, strings.Join(args, " "), stderr.String())
	}
	return stdout.String()
}
