package k8stest

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// leaseVerbs are the verbs Restricted grants on leases: what a lease
// holder needs — read, list, create a lease, and patch it — and not
// update, delete, deletecollection or watch.
var leaseVerbs = []string{"get", "list", "create", "patch"}

// tokenLifetime is how long Restricted's tokens are valid: longer than
// any test.
const tokenLifetime = 6 * time.Hour

// Restricted returns the client configuration a pod's service account
// would have when granted only get, list, create and patch on coordination.k8s.io leases in
// namespace ns: it creates a ServiceAccount in ns, a Role granting those
// verbs on leases and nothing else, a RoleBinding of the one to the other,
// and asks the TokenRequest API for the account's bearer token (valid for
// 6 h, for the API server's default audience). It returns once the API
// server authenticates the token and authorizes a patch of a lease in ns
// with it (the authorizer reads roles from a cache), or fails the test
// after 30 s.
func (s *Server) Restricted(tb testing.TB, ns string) *rest.Config {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cs := s.Clientset(tb)
	sa, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{GenerateName: "k8stest-holder-"}}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("k8stest: Restricted: create a service account in %s: %v", ns, err)
	}
	meta := metav1.ObjectMeta{Name: sa.Name}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: leaseVerbs,
	}}}, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("k8stest: Restricted: create a role in %s: %v", ns, err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta,
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa.Name},
	}, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("k8stest: Restricted: create a role binding in %s: %v", ns, err)
	}
	lifetime := int64(tokenLifetime / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &lifetime}}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("k8stest: Restricted: request a token for %s/%s: %v", ns, sa.Name, err)
	}
	cfg := &rest.Config{
		Host:            s.Host(),
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.pki.ca},
		QPS:             -1,
	}
	s.waitAllowed(tb, cfg, ns)
	return cfg
}

// waitAllowed polls, as cfg's user, a SelfSubjectAccessReview of a patch
// of a lease in ns (every authenticated user may ask one) until the API
// server allows it.
func (s *Server) waitAllowed(tb testing.TB, cfg *rest.Config, ns string) {
	tb.Helper()
	cs := clientset(tb, cfg)
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "patch", Group: "coordination.k8s.io", Resource: "leases",
		},
	}}
	deadline := time.Now().Add(requestTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		cancel()
		if err == nil && got.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("k8stest: Restricted: a patch of leases in %s is not allowed after %v: %v %+v", ns, requestTimeout, err, got)
		}
		time.Sleep(20 * time.Millisecond) // poll: only the API server's caches can catch up
	}
}
