package k8sstore_test

import (
	"context"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
)

// Review: the region registry's identity of a Kubernetes copy ("kubernetes
// origin <id> namespace <ns> prefix <p>", RegistryIdentity) is data the
// objects carry — the origin id is an annotation — so a copy of the
// prefix's Lease objects into another cluster (a namespace backup restored
// elsewhere, as Velero does, or kubectl get -o yaml | kubectl apply, for a
// DR site) reports the very identity of the original. registry.CheckHome
// compares exactly that string, so holders of a region homed on cluster A
// are admitted on cluster B (docs/regions.md: "every holder of the region
// ... is refused on any other store"), where the copied records free the
// numbers A's holders still hold once their copied marks pass: machine 0
// held on both clusters at once, the same IDs. Every other store's
// identity is the server's (etcd's cluster ID, PostgreSQL's system
// identifier, DynamoDB's TableId); a server-assigned part here (the origin
// object's UID, which an object made anew through the API never keeps)
// would tell the two apart.
func TestReviewCopiedPrefixKeepsTheRegistryIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := k8stest.Shared(t)
	ns := a.Namespace(t)
	b := k8stest.Start(t) // another cluster
	if _, err := b.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	prefix := newPrefix()
	cfg := k8sstore.Config{Namespace: ns, Prefix: prefix}
	sa := open(t, a.Config(), cfg)
	now := time.Now().UnixMilli()
	la := mustClaim(t, sa, on("holder-a", 0, now))
	idA, err := sa.RegistryIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// The namespace's Lease objects copied to cluster B, as a backup tool
	// restores them: name, labels, annotations and spec.
	ls, err := a.Clientset(t).CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: "snowfence.io/prefix=" + prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls.Items {
		c := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.Name, Labels: l.Labels, Annotations: l.Annotations}, Spec: l.Spec}
		if _, err := b.Clientset(t).CoordinationV1().Leases(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sb := open(t, b.Config(), cfg)
	idB, err := sb.RegistryIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster A (%s): %s", a.Host(), idA)
	t.Logf("cluster B (%s): %s", b.Host(), idB)

	// A's holder renews on A; past its copied mark, B grants the same number.
	la = mustExtend(t, sa, la, la.MarkMs+60_000)
	lb, err := sb.Claim(ctx, on("holder-b", 0, now+11_000))
	if err != nil {
		t.Logf("cluster B refused machine 0: %v", err)
	} else {
		t.Logf("machine 0 held on A by %s until %d and on B by %s from %d", la.Holder, la.MarkMs, lb.Holder, lb.StartMs)
	}
	if idA == idB {
		t.Errorf("two clusters report one registry identity %q: a region homed on A's store admits holders on B's", idA)
	}
}
