package k8stest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
)

func TestMain(m *testing.M) { k8stest.Main(m) }

// recordKey is the annotation the lease store keeps its record in, and
// recordPath its JSON Pointer (RFC 6901: "/" escaped as "~1").
const (
	recordKey  = "snowfence.io/record"
	recordPath = "/metadata/annotations/snowfence.io~1record"
)

// ctx is a context for one request, bounded.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// record is a record string as the store writes one: JSON, with a nonce
// of the claim and one of the write.
func record(claim string, write int) string {
	return fmt.Sprintf(`{"claim":%q,"write":"w%d","holder":"h\"1"}`, claim, write)
}

// newLease creates lease name in ns holding rec.
func newLease(t *testing.T, cs kubernetes.Interface, ns, name, rec string) *coordinationv1.Lease {
	t.Helper()
	holder := "holder-" + name
	l, err := cs.CoordinationV1().Leases(ns).Create(ctx(t), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{recordKey: rec}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create lease %s/%s: %v", ns, name, err)
	}
	return l
}

func getLease(t *testing.T, cs kubernetes.Interface, ns, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease %s/%s: %v", ns, name, err)
	}
	return l
}

// op is one RFC 6902 operation.
type op map[string]any

func testOp(path, value string) op    { return op{"op": "test", "path": path, "value": value} }
func replaceOp(path string, v any) op { return op{"op": "replace", "path": path, "value": v} }
func recordOps(from, to string) []op {
	return []op{testOp(recordPath, from), replaceOp(recordPath, to)}
}
func holderOp(holder string) op { return replaceOp("/spec/holderIdentity", holder) }
func rvOp(rv string) op         { return testOp("/metadata/resourceVersion", rv) }

// jsonPatch sends ops as one JSON Patch of lease ns/name.
func jsonPatch(t *testing.T, cs kubernetes.Interface, ns, name string, ops ...op) (*coordinationv1.Lease, error) {
	t.Helper()
	return cs.CoordinationV1().Leases(ns).Patch(ctx(t), name, types.JSONPatchType, patchBody(t, ops...), metav1.PatchOptions{})
}

// patchBody is ops as a JSON Patch document.
func patchBody(t *testing.T, ops ...op) []byte {
	t.Helper()
	body, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// status describes an API error as the client sees it: HTTP code and
// reason.
func status(err error) string {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return fmt.Sprintf("%d %s", se.ErrStatus.Code, se.ErrStatus.Reason)
	}
	return fmt.Sprintf("not an API status: %v", err)
}
