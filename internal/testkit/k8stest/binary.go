package k8stest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// Version is the Kubernetes release whose kube-apiserver the kit runs.
const Version = "v1.37.2"

// BinaryEnv names a kube-apiserver executable to run instead of the one
// scripts/services/kube-apiserver.sh builds.
const BinaryEnv = "SNOWFENCE_KUBE_APISERVER"

// DirEnv names the directory where scripts/services/kube-apiserver.sh
// keeps the binary it builds (default $XDG_CACHE_HOME/snowfence, or
// ~/.cache/snowfence).
const DirEnv = "SNOWFENCE_KUBE_APISERVER_DIR"

// Binary returns the path of the kube-apiserver executable the kit runs:
// $SNOWFENCE_KUBE_APISERVER if set, else kube-apiserver-v1.37.2 in the
// script's cache directory. When there is no executable there it calls
// testenv.Missing: the test is skipped, or fails under CI=true, with the
// command that builds one. Under testenv.KubernetesLaterEnv it skips the
// test: scripts/test runs it in its Kubernetes step.
func Binary(tb testing.TB) string {
	tb.Helper()
	testenv.KubernetesLater(tb)
	path, err := Path()
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(path); err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
			err = os.ErrPermission
		}
	}
	if err != nil {
		testenv.Missing(tb, "k8stest: no kube-apiserver "+Version+" at "+path+" ("+err.Error()+
			"): build it with scripts/services/kube-apiserver.sh build (~450 CPU-seconds, once), or set "+BinaryEnv)
	}
	return path
}

// Path is where Binary looks, without looking: $SNOWFENCE_KUBE_APISERVER
// if set, else kube-apiserver-v1.37.2 in $SNOWFENCE_KUBE_APISERVER_DIR or
// the user's cache directory (…/snowfence), where
// scripts/services/kube-apiserver.sh builds it. For callers without a
// test (the chaos suite's runner), which check the file themselves.
func Path() (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		return p, nil
	}
	dir := os.Getenv(DirEnv)
	if dir == "" {
		cache, err := os.UserCacheDir() // $XDG_CACHE_HOME, else ~/.cache
		if err != nil {
			return "kube-apiserver-" + Version, err
		}
		dir = filepath.Join(cache, "snowfence")
	}
	return filepath.Join(dir, "kube-apiserver-"+Version), nil
}
