package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snowfence/snowfence/k8sstore"
)

// podNamespaceFile is where Kubernetes puts the namespace of a pod whose
// service account token is mounted: --k8s-namespace's default in a pod.
const podNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// k8sFlags are the store flags of --lease-store kubernetes.
type k8sFlags struct {
	namespace string
	prefix    string
	// context is the kubeconfig context to use ("": the current one); a
	// --copy SPEC's ?context=.
	context    string
	kubeconfig kubeconfigFlag
	// rest is the client configuration check resolved: the kubeconfig's,
	// or the pod's.
	rest *rest.Config
	// pod is a test's stand-in for the pod the process runs in; nil: the
	// real one. (A pointer keeps storeFlags comparable.)
	pod *podSeam
	// flags is the flag set register put the flags in (nil for a --copy
	// SPEC's): given asks it whether --k8s-prefix was set, whatever its
	// value — the default's spelling is as much a sign as another's.
	flags *flag.FlagSet
}

// podSeam is what a test gives in place of the pod: where its namespace
// file is, and its in-cluster configuration.
type podSeam struct {
	namespaceFile string
	inCluster     func() (*rest.Config, error)
}

func (k *k8sFlags) register(fs *flag.FlagSet) {
	k.flags = fs
	fs.StringVar(&k.namespace, "k8s-namespace", "", "namespace of the Lease objects for --lease-store kubernetes; every holder of a fleet must give the same "+
		"(default in a pod: the pod's namespace, from its service account; required elsewhere)")
	fs.StringVar(&k.prefix, "k8s-prefix", k8sstore.DefaultPrefix, "prefix of the Lease objects' names for --lease-store kubernetes: a DNS-1123 label "+
		"(a-z, 0-9, '-') of at most "+strconv.Itoa(k8sstore.MaxPrefixLen)+" characters; every holder of a fleet must give the same, and fleets sharing a namespace need their own")
	fs.Var(&k.kubeconfig, "kubeconfig", "kubeconfig `file` (or a list separated by '"+string(filepath.ListSeparator)+"', as KUBECONFIG) for --lease-store kubernetes, "+
		"its current context; empty: the files in KUBECONFIG, else the pod's service account (in-cluster). ~/.kube/config is never read unless named")
}

// kubeconfigFlag is --kubeconfig: a path list given as the flag or
// SNOWFENCE_KUBECONFIG, and KUBECONFIG, kubectl's variable, which applyEnv
// gives it and which counts only when neither is given. KUBECONFIG is set
// in many an operator's shell: it is no sign that the Kubernetes store was
// meant, as --kubeconfig is.
type kubeconfigFlag struct{ given, environ string }

func (k *kubeconfigFlag) String() string     { return k.given }
func (k *kubeconfigFlag) Set(v string) error { k.given = v; return nil }

// readEnviron takes KUBECONFIG (applyEnv calls it).
func (k *kubeconfigFlag) readEnviron(getenv func(string) string) { k.environ = getenv("KUBECONFIG") }

// paths is the kubeconfig files to read, blanks dropped: the flag's, else
// KUBECONFIG's.
func (k *kubeconfigFlag) paths() []string {
	v := k.given
	if v == "" {
		v = k.environ
	}
	var out []string
	for _, p := range filepath.SplitList(v) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// given reports a Kubernetes store flag given, on the command line or in
// its SNOWFENCE_* variable — not KUBECONFIG.
func (k *k8sFlags) given() bool {
	return k.namespace != "" || (k.prefix != "" && k.prefix != k8sstore.DefaultPrefix) || k.set("k8s-prefix") || k.kubeconfig.given != "" || k.context != ""
}

// set reports flag name set in k's flag set, on the command line or from
// its SNOWFENCE_* variable (applyEnv sets it so), whatever the value.
func (k *k8sFlags) set(name string) bool {
	found := false
	if k.flags != nil {
		k.flags.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	}
	return found
}

// config is the Kubernetes store's configuration (check has resolved the
// namespace).
func (k *k8sFlags) config(region int, log *slog.Logger) k8sstore.Config {
	return k8sstore.Config{Namespace: k.namespace, Prefix: k.prefix, Region: region, Logger: log, TestBound: testBound}
}

// check refuses Kubernetes flags that would point a holder at no
// namespace, at names the store cannot take, or at no API server; it fills
// in the pod's namespace and resolves the client configuration.
func (k *k8sFlags) check() error {
	nsFile, inCluster := podNamespaceFile, rest.InClusterConfig
	if k.pod != nil {
		nsFile, inCluster = k.pod.namespaceFile, k.pod.inCluster
	}
	paths := k.kubeconfig.paths()
	if k.namespace == "" && len(paths) > 0 {
		// A kubeconfig may name another cluster than the pod's: the pod's
		// namespace is no default there, and two holders of one fleet in
		// pods of two namespaces, with one kubeconfig, would lease in two
		// namespaces of one API server — two fences over the same numbers.
		return usagef("--lease-store kubernetes with a kubeconfig (--kubeconfig, SNOWFENCE_KUBECONFIG or KUBECONFIG) needs --k8s-namespace " +
			"(or SNOWFENCE_K8S_NAMESPACE): the namespace of the fleet's Lease objects on that kubeconfig's API server, the same for every holder")
	}
	if k.namespace == "" {
		ns, err := podNamespace(nsFile)
		if err != nil {
			return err
		}
		if ns == "" {
			return usagef("--lease-store kubernetes needs --k8s-namespace (or SNOWFENCE_K8S_NAMESPACE): the namespace of the fleet's Lease objects, "+
				"the same for every holder (in a pod it defaults to the pod's namespace; %s is not here)", nsFile)
		}
		k.namespace = ns
	}
	if err := k.config(0, nil).Check(); err != nil {
		return usageError{fmt.Errorf("--k8s-namespace %q, --k8s-prefix %q: %w", k.namespace, k.prefix, err)}
	}
	rc, err := restConfig(paths, k.context, inCluster)
	if err != nil {
		return err
	}
	k.rest = rc
	return nil
}

// podNamespace reads the pod's namespace from path: "" when there is no
// such file (not in a pod, or no service account token mounted).
func podNamespace(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the pod's namespace: %w; give --k8s-namespace", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// restConfig is the client configuration of the kubeconfig files paths
// (merged as kubectl merges KUBECONFIG's; context "" is the current one),
// or with none the pod's service account's (inCluster). Every error says
// what to give instead.
func restConfig(paths []string, context string, inCluster func() (*rest.Config, error)) (*rest.Config, error) {
	if len(paths) == 0 {
		if context != "" {
			return nil, usagef("a kubeconfig context (%q) is given but no kubeconfig: give --kubeconfig (or SNOWFENCE_KUBECONFIG, KUBECONFIG)", context)
		}
		rc, err := inCluster()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, usageError{fmt.Errorf("--lease-store kubernetes needs --kubeconfig (or SNOWFENCE_KUBECONFIG, KUBECONFIG) "+
				"when not in a pod: %w", err)}
		}
		if err != nil {
			return nil, fmt.Errorf("the pod's service account (in-cluster configuration): %w; check that its token is mounted "+
				"(automountServiceAccountToken), or give --kubeconfig", err)
		}
		return rc, nil
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return nil, usageError{fmt.Errorf("--kubeconfig (or KUBECONFIG) %s: %w; give the path of a kubeconfig file", p, err)}
		}
	}
	loaded, err := (&clientcmd.ClientConfigLoadingRules{Precedence: paths}).Load()
	if err != nil {
		return nil, usageError{fmt.Errorf("--kubeconfig (or KUBECONFIG) %s: %w", strings.Join(paths, string(filepath.ListSeparator)), err)}
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*loaded, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, usageError{fmt.Errorf("--kubeconfig (or KUBECONFIG) %s: %w; give a kubeconfig whose context names a cluster and a user "+
			"(kubectl config view --minify shows what it resolves to)", strings.Join(paths, string(filepath.ListSeparator)), err)}
	}
	return rc, nil
}

// describe names the store, without credentials: the namespace and prefix,
// and the API server once check has resolved it.
func (k *k8sFlags) describe() string {
	d := fmt.Sprintf("kubernetes namespace %s, prefix %s", k.namespace, cmp.Or(k.prefix, k8sstore.DefaultPrefix))
	if k.context != "" {
		d += ", context " + k.context
	}
	if k.rest != nil {
		d += " at " + k.rest.Host
	}
	return d
}
