package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/k8stest"
)

// serve on Kubernetes, a real kube-apiserver from k8stest, as a pod's
// holder would run it but with a kubeconfig: the credentials of a service
// account granted only get, list, create and patch on leases in its
// namespace (k8stest.Restricted, written by k8stest.Kubeconfig). A holder
// claims its number with the tables' timings (its mark minutes ahead),
// mints on it and releases it at SIGTERM; the next holder of the number —
// configured through the environment this time, KUBECONFIG and
// SNOWFENCE_K8S_NAMESPACE — mints above everything the first issued, and
// no ID of the two repeats.
func TestE2EKubernetes(t *testing.T) {
	t.Parallel() // mostly waits out the claims' notice windows (23 s each)
	s := k8stest.Start(t)
	ns := s.Namespace(t)
	kubeconfig := k8stest.Kubeconfig(t, s.Restricted(t, ns))
	flags := []string{"--lease-store", "kubernetes", "--kubeconfig", kubeconfig, "--k8s-namespace", ns, "--k8s-prefix", "e2e", "--machines", "9-9"}
	h := startService(t, t.TempDir(), flags...)
	ids := mintUntilReady(t, h, 100, 90*time.Second)
	if d, _ := snowfence.Decode(ids[0]); d.Machine != 9 {
		t.Errorf("machine %d, want 9", d.Machine)
	}
	rec := k8sRecord(t, s, ns, "e2e-r0-9")
	if rec.Holder == "" {
		t.Fatalf("Lease e2e-r0-9 while held: %+v, want a holder", rec)
	}
	// The tables' timings: a 5-minute lease is the reservation.
	if ahead := time.Until(time.UnixMilli(rec.MarkMs)); ahead < 4*time.Minute {
		t.Errorf("mark only %s ahead; the tables' timings give 5 min", ahead)
	}
	ids = append(ids, mintUntilReady(t, h, 100, 10*time.Second)...)
	h.stop(t)
	if rec := k8sRecord(t, s, ns, "e2e-r0-9"); rec.Holder != "" {
		t.Fatalf("after SIGTERM: %+v, want released", rec)
	}

	env := []string{"env", "KUBECONFIG=" + kubeconfig, "SNOWFENCE_K8S_NAMESPACE=" + ns, "SNOWFENCE_K8S_PREFIX=e2e"}
	h2 := startServiceVia(t, env, t.TempDir(), "--lease-store", "kubernetes", "--machines", "9-9")
	next := mintUntilReady(t, h2, 100, 90*time.Second)
	h2.stop(t)
	if next[0] <= ids[len(ids)-1] {
		t.Errorf("after restart: %d, want an ID above %d", next[0], ids[len(ids)-1])
	}
	seen := map[snowfence.ID]bool{}
	for _, id := range append(ids, next...) {
		if seen[id] {
			t.Fatalf("ID %d minted twice", id)
		}
		seen[id] = true
	}
}

// k8sRecord reads, as the admin, the record of the Lease object name in
// namespace ns.
func k8sRecord(t *testing.T, s *k8stest.Server, ns, name string) (rec struct {
	Holder string `json:"holder"`
	MarkMs int64  `json:"mark_ms"`
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := s.Clientset(t).CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Lease %s/%s: %v", ns, name, err)
	}
	raw := l.Annotations["snowfence.io/record"]
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.MarkMs == 0 {
		t.Fatalf("Lease %s/%s: record %q: %v", ns, name, raw, fmt.Sprint(err))
	}
	return rec
}

// serve with the credentials of a service account that may not read the
// namespace's leases (no Role bound) exits at start — before it listens,
// with status 1 — saying what to grant, rather than wait as a holder that
// can never claim.
func TestE2EKubernetesForbidden(t *testing.T) {
	t.Parallel()
	s := k8stest.Start(t)
	ns := s.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := s.Clientset(t)
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc := s.Config()
	rc.CertData, rc.KeyData, rc.BearerToken = nil, nil, tr.Status.Token
	kubeconfig := k8stest.Kubeconfig(t, rc)
	_, errOut := cli(t, 1, "serve", "--listen", "127.0.0.1:0", "--lease-store", "kubernetes", "--kubeconfig", kubeconfig, "--k8s-namespace", ns)
	for _, want := range []string{"forbidden", "get, list, create and patch", ns} {
		if !strings.Contains(errOut, want) {
			t.Errorf("serve's error does not say %q:\n%s", want, errOut)
		}
	}
}

// k8sFleet is a fresh namespace on a kube-apiserver of the test's own and
// the store flags that point serve and the CLI at prefix there, through a
// kubeconfig holding the least-privilege service account's token.
func k8sFleet(t *testing.T, prefix string) (*k8stest.Server, string, []string) {
	t.Helper()
	s := k8stest.Start(t)
	ns := s.Namespace(t)
	kubeconfig := k8stest.Kubeconfig(t, s.Restricted(t, ns))
	return s, ns, []string{"--lease-store", "kubernetes", "--kubeconfig", kubeconfig, "--k8s-namespace", ns, "--k8s-prefix", prefix}
}

// The operator's commands on Kubernetes, through the holders' own
// least-privilege credentials: operatorScenario, as on ZooKeeper.
func TestE2EKubernetesOperatorCLI(t *testing.T) {
	t.Parallel()
	_, ns, flags := k8sFleet(t, "e2e-op")
	operatorScenario(t, flags, operatorStore{kind: "kubernetes", key40: ns + "/e2e-op-r0-40", keyWhat: "Kubernetes Lease object"})
}

// snowfence who on Kubernetes (whoScenario, as on every store): the
// journal in each lease object's annotation.
func TestE2EWhoKubernetes(t *testing.T) {
	t.Parallel()
	_, _, flags := k8sFleet(t, "who")
	whoScenario(t, flags, append(slices.Clone(shortTableTimings), "--machines", "20-21"))
}
