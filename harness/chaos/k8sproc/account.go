package k8sproc

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// leaseVerbs are what a holder of k8sstore needs on leases, and all the
// service account gets (k8sstore/doc.go, "Permissions").
var leaseVerbs = []string{"get", "list", "create", "patch"}

// tokenLifetime is how long a holder's token is valid: longer than any run.
const tokenLifetime = 12 * time.Hour

// Restricted makes namespace ns, a service account in it, a Role allowed
// only get, list, create and patch on its leases and a RoleBinding of the
// two, asks the TokenRequest API for the account's token, and writes a
// kubeconfig for it to path: the relay's address (Addr), the CA, the
// token — what a pod's holder has. It returns once the API server
// authorizes a patch of a lease in ns with the token (its authorizer reads
// roles from a cache), or fails after 30 s.
func (s *Server) Restricted(ctx context.Context, ns, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := kubernetes.NewForConfig(s.AdminConfig())
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("k8sproc: namespace %s: %w", ns, err)
	}
	meta := metav1.ObjectMeta{Name: "snowfence-holder"}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("k8sproc: service account in %s: %w", ns, err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: leaseVerbs,
	}}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("k8sproc: role in %s: %w", ns, err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta,
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: meta.Name, Namespace: ns}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("k8sproc: role binding in %s: %w", ns, err)
	}
	lifetime := int64(tokenLifetime / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, meta.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &lifetime}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("k8sproc: token for %s/%s: %w", ns, meta.Name, err)
	}
	cfg := &rest.Config{Host: s.host(), BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: s.pki.caPEM}}
	if err := waitAllowed(ctx, cfg, ns); err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	// tls-server-name: the certificate names localhost, whichever address
	// the holder dials (a relay on a namespace's link: --k8s-server).
	kc.Clusters["chaos"] = &clientcmdapi.Cluster{Server: "https://" + s.Addr(), CertificateAuthorityData: s.pki.caPEM, TLSServerName: "localhost"}
	kc.AuthInfos["holder"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["holder"] = &clientcmdapi.Context{Cluster: "chaos", AuthInfo: "holder", Namespace: ns}
	kc.CurrentContext = "holder"
	return clientcmd.WriteToFile(*kc, path)
}

// waitAllowed polls, as cfg's user, a SelfSubjectAccessReview of a patch
// of a lease in ns until the API server allows it or ctx ends.
func waitAllowed(ctx context.Context, cfg *rest.Config, ns string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Group: "coordination.k8s.io", Resource: "leases"},
	}}
	tick := time.NewTicker(20 * time.Millisecond) // poll: only the API server's caches can catch up
	defer tick.Stop()
	for {
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err == nil && got.Status.Allowed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("k8sproc: a patch of leases in %s is not allowed to the holders' account: %v", ns, err)
		case <-tick.C:
		}
	}
}
