package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// The independent tools that check api/openapi.json against a live serve
// (contract_e2e_test.go, genclients_e2e_test.go) are npm packages, pinned,
// installed as scripts/test installs @redocly/cli: into the cache
// ${SNOWFENCE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/snowfence}/<name>-<version>,
// once, and reused. Under CI=true a tool that cannot be installed fails the
// test that needs it (testenv.Missing); elsewhere it is skipped.

// npmTools are the pinned packages, by the name of their cache directory.
// Later releases of some need a newer Node.js than Debian's (20).
var npmTools = map[string][]string{
	// Stoplight Prism: the validation proxy.
	"prism-5.16.0": {"@stoplight/prism-cli@5.16.0"},
	// openapi-typescript makes the types, openapi-fetch is the fetch-based
	// client that takes them, typescript checks the caller against them.
	"openapi-typescript-7.13.0": {"openapi-typescript@7.13.0", "openapi-fetch@0.17.0", "typescript@5.9.3"},
}

var npmInstall sync.Map // directory → *sync.Once

// npmTool returns the cache directory of the pinned tool name (a key of
// npmTools), with its node_modules, installing it first if need be.
func npmTool(t *testing.T, name, bin string) string {
	t.Helper()
	pkgs, ok := npmTools[name]
	if !ok {
		t.Fatalf("npmTool: %s is not pinned in npmTools", name)
	}
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node (Node.js) not found: apt-get install nodejs npm (scripts/test installs it)")
	}
	cache := os.Getenv("SNOWFENCE_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			testenv.Missing(t, "no cache directory for npm packages: "+err.Error())
		}
		cache = filepath.Join(base, "snowfence")
	}
	dir := filepath.Join(cache, name)
	exe := filepath.Join(dir, "node_modules", ".bin", bin)
	once, _ := npmInstall.LoadOrStore(dir, new(sync.Once))
	var out []byte
	var err error
	once.(*sync.Once).Do(func() {
		if _, statErr := os.Stat(exe); statErr == nil {
			return
		}
		npm, lookErr := exec.LookPath("npm")
		if lookErr != nil {
			err = lookErr
			return
		}
		if err = os.MkdirAll(dir, 0o755); err != nil {
			return
		}
		args := append([]string{"install", "--silent", "--no-audit", "--no-fund", "--prefix", dir}, pkgs...)
		out, err = exec.Command(npm, args...).CombinedOutput()
	})
	if _, statErr := os.Stat(exe); statErr != nil {
		testenv.Missing(t, "npm packages "+strings.Join(pkgs, " ")+" could not be installed into "+dir+": "+errString(err)+" "+string(out))
	}
	return dir
}

func errString(err error) string {
	if err == nil {
		return "(no error, but the binary is not there)"
	}
	return err.Error()
}
