package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// Review: --k8s-prefix given with another --lease-store is refused
// (TestKubernetesFlagsNeedTheStore's "prefix flag", docs/deployment.md:
// "serve refuses to start ... with --k8s-namespace, --k8s-prefix or
// --kubeconfig but another --lease-store") — unless its value is the
// default, "snowfence". That is the very setting the shipped overlay
// makes (deploy/kubernetes/overlays/kubernetes: SNOWFENCE_K8S_PREFIX=
// snowfence, which manifests_test requires, the namespace left to the
// pod's): a deployment written from it that loses SNOWFENCE_LEASE_STORE
// has no other Kubernetes setting, and starts on the default store, an
// embedded etcd of its own (a private store), minting the fleet's IDs
// again. (The shipped base keeps the root read-only, so there the embedded
// etcd fails to start; a deployment of one's own need not.)
func TestReviewK8sPrefixAtItsDefaultNeedsTheStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag, default store", []string{"--k8s-prefix", "snowfence"}, nil},
		{"flag, another store", []string{"--lease-store", "etcd", "--etcd-endpoints", "http://127.0.0.1:2379", "--k8s-prefix", "snowfence"}, nil},
		{"environment", nil, map[string]string{"SNOWFENCE_K8S_PREFIX": "snowfence"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tc.env[k] }}
			_, _, err := parseServeFlags(e, tc.args)
			var u usageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), "--lease-store kubernetes") {
				t.Errorf("got %v, want a usage error naming --lease-store kubernetes, as for --k8s-prefix eu", err)
			}
		})
	}
}

// Review: in a pod, --kubeconfig (or KUBECONFIG) points the holder at
// another cluster's API server, yet the namespace defaults to the pod's —
// a namespace of the pod's own cluster, which means nothing on the
// kubeconfig's — and the kubeconfig context's own namespace is ignored.
// So two holders of one fleet started with the SAME flags and the SAME
// kubeconfig (a central lease cluster, context namespace "ids") from pods
// in two namespaces lease in two namespaces of one API server: two fences
// that know nothing of each other, each handing out machine 0 — the same
// IDs. Both starts are accepted without a word. Accepted holders given one
// kubeconfig and no --k8s-namespace must resolve one namespace (the
// context's, as kubectl would), or be refused (give --k8s-namespace).
func TestReviewK8sPodNamespaceWithAnotherClustersKubeconfig(t *testing.T) {
	dir := t.TempDir()
	central := writeKubeconfigNS(t, dir, "central", "https://leases.example:6443", "ids")
	type resolved struct{ namespace, host string }
	var got []resolved
	for _, podNS := range []string{"team-a", "team-b"} {
		nsFile := filepath.Join(dir, podNS+".namespace")
		if err := os.WriteFile(nsFile, []byte(podNS+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var f storeFlags
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.register(fs)
		if err := fs.Parse([]string{"--lease-store", "kubernetes", "--kubeconfig", central}); err != nil {
			t.Fatal(err)
		}
		if err := applyEnv(fs, func(string) string { return "" }); err != nil {
			t.Fatal(err)
		}
		f.k8s.pod = &podSeam{namespaceFile: nsFile, inCluster: func() (*rest.Config, error) {
			return &rest.Config{Host: "https://10.0.0.1:443"}, nil // the pod's own cluster: not used, a kubeconfig is given
		}}
		if err := f.check(); err != nil {
			t.Logf("pod in %s: refused: %v", podNS, err)
			continue
		}
		t.Logf("pod in %s: accepted: %s", podNS, f.describe())
		if f.k8s.namespace == podNS {
			t.Errorf("pod in namespace %s, --kubeconfig of another cluster whose context names namespace ids: accepted in namespace %s "+
				"(the pod's, of another cluster) at %s", podNS, f.k8s.namespace, f.k8s.rest.Host)
		}
		got = append(got, resolved{f.k8s.namespace, f.k8s.rest.Host})
	}
	if len(got) == 2 && got[0].host == got[1].host && got[0].namespace != got[1].namespace {
		t.Errorf("two holders, the same flags and kubeconfig: accepted in namespaces %s and %s of one API server %s — two fleets minting the same IDs",
			got[0].namespace, got[1].namespace, got[0].host)
	}
}

// Review: an external etcd's address given with another --lease-store is
// accepted and ignored — the one store address the "address without its
// --lease-store" rule (storeFlags.check) leaves out. A fleet on an etcd
// cluster whose holder is started with --etcd-endpoints on its command line
// and SNOWFENCE_LEASE_STORE=kubernetes in its environment (a ConfigMap
// made for a move to the Kubernetes store, say; in a pod the Kubernetes
// store needs no other setting: the pod's namespace and service account)
// leases from the namespace's Lease objects, a store its etcd peers know
// nothing of, and mints their IDs again. --postgres-url with another store
// is refused in the same position; --etcd-endpoints must be too.
func TestReviewEtcdEndpointsWithAnotherStore(t *testing.T) {
	kc := writeKubeconfig(t, t.TempDir(), "a", "https://a.example:6443")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"kubernetes from the environment", []string{"--etcd-endpoints", "http://etcd:2379"},
			map[string]string{"SNOWFENCE_LEASE_STORE": "kubernetes", "SNOWFENCE_K8S_NAMESPACE": "ids", "SNOWFENCE_KUBECONFIG": kc}},
		{"kubernetes on the command line", []string{"--lease-store", "kubernetes", "--k8s-namespace", "ids", "--kubeconfig", kc,
			"--etcd-endpoints", "http://etcd:2379"}, nil},
		{"SNOWFENCE_ETCD_ENDPOINTS on kubernetes", []string{"--lease-store", "kubernetes", "--k8s-namespace", "ids", "--kubeconfig", kc},
			map[string]string{"SNOWFENCE_ETCD_ENDPOINTS": "http://etcd:2379"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tc.env[k] }}
			f, _, err := parseServeFlags(e, tc.args)
			if err == nil {
				t.Fatalf("accepted: the holder leases from %s, and the etcd cluster given (%s) is ignored", f.store.describe(), f.store.endpoints)
			}
			var u usageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), "--etcd-endpoints") {
				t.Errorf("got %v, want a usage error naming --etcd-endpoints", err)
			}
		})
	}
}
