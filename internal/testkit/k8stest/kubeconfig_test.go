package k8stest_test

import (
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
)

// TestKubeconfig: a kubeconfig Kubeconfig writes, loaded as kubectl loads
// one (clientcmd), reaches the server as the user it was written for —
// the admin's client certificate, a Restricted service account's token —
// and is readable by its owner only.
func TestKubeconfig(t *testing.T) {
	t.Parallel()
	s := k8stest.Shared(t)
	ns := s.Namespace(t)
	for _, tc := range []struct {
		name      string
		path      string
		listNodes bool // the admin may; the service account may not
	}{
		{"admin certificate", k8stest.Kubeconfig(t, s.Config()), true},
		{"restricted token", k8stest.Kubeconfig(t, s.Restricted(t, ns)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fi, err := os.Stat(tc.path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("stat %s: %v, mode %v; want 0600", tc.path, err, fi.Mode().Perm())
			}
			rc, err := clientcmd.BuildConfigFromFlags("", tc.path)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoordinationV1().Leases(ns).List(ctx(t), metav1.ListOptions{}); err != nil {
				t.Errorf("list leases in %s: %v", ns, err)
			}
			_, err = cs.CoreV1().Nodes().List(ctx(t), metav1.ListOptions{})
			if got := err == nil; got != tc.listNodes {
				t.Errorf("list nodes: %v; want allowed %v", err, tc.listNodes)
			}
		})
	}
}
