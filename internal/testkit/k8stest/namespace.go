package k8stest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// requestTimeout bounds each request the kit makes for a test.
const requestTimeout = 30 * time.Second

// Namespace creates a namespace with a fresh random name (k8stest-xxxxx)
// and returns the name. It is not deleted when the test ends (the server
// has no namespace controller to finish a deletion); a Server of the
// test's own goes with the test, and the Shared one holds a namespace per
// test.
func (s *Server) Namespace(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	ns, err := s.Clientset(tb).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "k8stest-"}}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("k8stest: create a namespace: %v", err)
	}
	return ns.Name
}
