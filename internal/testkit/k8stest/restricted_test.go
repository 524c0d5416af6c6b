package k8stest_test

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
)

// TestRestricted: the service account Restricted makes may get, list,
// create and patch leases in its namespace, and nothing else: no update,
// no delete, no watch, no other namespace, no secrets.
func TestRestricted(t *testing.T) {
	t.Parallel()
	s := k8stest.Shared(t)
	admin := s.Clientset(t)
	ns, other := s.Namespace(t), s.Namespace(t)
	newLease(t, admin, other, "theirs", record("o", 0))
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holder, err := kubernetes.NewForConfig(s.Restricted(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	leases := holder.CoordinationV1().Leases(ns)

	mine := newLease(t, holder, ns, "mine", record("c1", 0))
	if _, err := leases.Get(ctx(t), "mine", metav1.GetOptions{}); err != nil {
		t.Errorf("get: %v", err)
	}
	if list, err := leases.List(ctx(t), metav1.ListOptions{}); err != nil {
		t.Errorf("list: %v", err)
	} else if len(list.Items) != 1 {
		t.Errorf("list: %d items, want 1", len(list.Items))
	}
	if _, err := jsonPatch(t, holder, ns, "mine", recordOps(record("c1", 0), record("c1", 1))...); err != nil {
		t.Errorf("json patch: %v", err)
	}

	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"update", func() error {
			l := getLease(t, admin, ns, "mine")
			l.Annotations[recordKey] = record("c1", 2)
			_, err := leases.Update(ctx(t), l, metav1.UpdateOptions{})
			return err
		}},
		{"delete", func() error { return leases.Delete(ctx(t), "mine", metav1.DeleteOptions{}) }},
		{"delete collection", func() error {
			return leases.DeleteCollection(ctx(t), metav1.DeleteOptions{}, metav1.ListOptions{})
		}},
		{"watch", func() error {
			w, err := leases.Watch(ctx(t), metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{"get in another namespace", func() error {
			_, err := holder.CoordinationV1().Leases(other).Get(ctx(t), "theirs", metav1.GetOptions{})
			return err
		}},
		{"patch in another namespace", func() error {
			_, err := jsonPatch(t, holder, other, "theirs", recordOps(record("o", 0), record("o", 1))...)
			return err
		}},
		{"create in another namespace", func() error {
			_, err := holder.CoordinationV1().Leases(other).Create(ctx(t), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}},
		{"list leases cluster-wide", func() error {
			_, err := holder.CoordinationV1().Leases("").List(ctx(t), metav1.ListOptions{})
			return err
		}},
		{"get a secret", func() error {
			_, err := holder.CoreV1().Secrets(ns).Get(ctx(t), "s", metav1.GetOptions{})
			return err
		}},
		{"list secrets", func() error {
			_, err := holder.CoreV1().Secrets(ns).List(ctx(t), metav1.ListOptions{})
			return err
		}},
		{"get its namespace", func() error {
			_, err := holder.CoreV1().Namespaces().Get(ctx(t), ns, metav1.GetOptions{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s as the holder: %v (%s), want 403 Forbidden", tc.name, err, status(err))
			}
		})
	}
	if got := getLease(t, admin, ns, "mine"); got.UID != mine.UID || got.Annotations[recordKey] != record("c1", 1) {
		t.Errorf("lease after the refusals: uid %s record %q, want uid %s record %q", got.UID, got.Annotations[recordKey], mine.UID, record("c1", 1))
	}
}
