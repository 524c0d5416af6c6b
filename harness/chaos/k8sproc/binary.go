package k8sproc

import (
	"fmt"
	"os"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/internal/testkit/storeproc"
)

// Binary returns the kube-apiserver executable the suite runs — where
// k8stest.Binary looks: $SNOWFENCE_KUBE_APISERVER, else
// kube-apiserver-v1.37.2 in $SNOWFENCE_KUBE_APISERVER_DIR or the user's
// cache directory (…/snowfence) — or an error wrapping storeproc.ErrMissing
// that says how to build it.
func Binary() (string, error) {
	path, err := k8stest.Path()
	if err != nil {
		return "", fmt.Errorf("%w: kube-apiserver: %v", storeproc.ErrMissing, err)
	}
	fi, err := os.Stat(path)
	if err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
		err = os.ErrPermission
	}
	if err != nil {
		return "", fmt.Errorf("%w: no kube-apiserver %s at %s (%v): build it with scripts/services/kube-apiserver.sh build, or set %s",
			storeproc.ErrMissing, k8stest.Version, path, err, k8stest.BinaryEnv)
	}
	return path, nil
}
