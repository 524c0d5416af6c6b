package k8stest

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig writes rc as a kubeconfig file in a directory of tb's own
// (tb.TempDir) and returns its path: for a test of a program that reads a
// kubeconfig (snowfence serve --kubeconfig) rather than taking a
// rest.Config. The file has one cluster (rc.Host, with rc's CA, inline),
// one user (rc's bearer token, or its client certificate and key,
// inline), and one context of the two, current. It holds only what
// Config and Restricted put in a rest.Config: a configuration with file
// paths, an exec plugin or basic auth fails the test rather than being
// written partly.
func Kubeconfig(tb testing.TB, rc *rest.Config) string {
	tb.Helper()
	if rc.CAFile != "" || rc.CertFile != "" || rc.KeyFile != "" || rc.BearerTokenFile != "" || rc.ExecProvider != nil ||
		rc.AuthProvider != nil || rc.Username != "" || rc.Password != "" {
		tb.Fatal("k8stest.Kubeconfig: only inline CA, client certificate and bearer token are written (the rest.Configs of Config and Restricted)")
	}
	const name = "k8stest"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: rc.BearerToken, ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(tb.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		tb.Fatalf("k8stest.Kubeconfig: %v", err)
	}
	if err := os.Chmod(path, 0o600); err != nil { // it holds credentials
		tb.Fatalf("k8stest.Kubeconfig: %v", err)
	}
	return path
}
