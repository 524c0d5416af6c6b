package kubernetes_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	kustomizetypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/snowfence/snowfence/api"
	"github.com/snowfence/snowfence/deploy/image"
	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/pgstore"
	"github.com/snowfence/snowfence/service"
	"github.com/snowfence/snowfence/zkstore"
)

// overlays are the deployable kustomizations, each with its lease store's
// notice window: every start of a holder waits it before it is ready.
var overlays = map[string]time.Duration{
	"etcd":       etcdstore.MaxNoticeWindow,
	"postgres":   pgstore.MaxNoticeWindow,
	"dynamodb":   dynamostore.MaxNoticeWindow,
	"zookeeper":  zkstore.MaxNoticeWindow,
	"kubernetes": k8sstore.MaxNoticeWindow,
}

// measuredPeakRSS is the most a holder's resident set reached under load:
// snowfence serve (the image's static binary) against an external etcd on
// loopback, wrk -t1 -c32 20 s of POST /v1/ids (41.6 k requests/s), 20 s of
// batches of 1000 (4.0 k requests/s), then wrk -t2 -c512 20 s (78.6 k
// requests/s): VmHWM 58,488 kB, 33.5 MB after start (docs/deployment.md).
const measuredPeakRSS = 58488 * 1024

// decodeStrict decodes one YAML document into v as the API server does
// with strict field validation: an unknown field, a field in the wrong
// case or a duplicate field is an error.
func decodeStrict(doc []byte, v any) error {
	j, err := sigsyaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(j, v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return fmt.Errorf("%v", strict)
	}
	return nil
}

// typeMeta is what tells objects apart.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// newObject returns the API type of apiVersion and kind, nil for one the
// manifests have no business holding.
func newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Service":
		return &corev1.Service{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		return &monitoringv1.PrometheusRule{}
	case "rbac.authorization.k8s.io/v1 Role":
		return &rbacv1.Role{}
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		return &rbacv1.RoleBinding{}
	case "kustomize.config.k8s.io/v1beta1 Kustomization":
		return &kustomizetypes.Kustomization{}
	}
	return nil
}

// decodeObject decodes one document into its API type, strictly.
func decodeObject(doc []byte) (any, typeMeta, error) {
	var tm typeMeta
	if err := sigsyaml.Unmarshal(doc, &tm); err != nil {
		return nil, tm, err
	}
	obj := newObject(tm.APIVersion, tm.Kind)
	if obj == nil {
		return nil, tm, fmt.Errorf("%s %s: not a kind these manifests hold", tm.APIVersion, tm.Kind)
	}
	return obj, tm, decodeStrict(doc, obj)
}

// rendered is an overlay as kubectl apply -k would send it.
type rendered struct {
	name         string
	deployment   *appsv1.Deployment
	configMaps   map[string]*corev1.ConfigMap
	services     map[string]*corev1.Service
	accounts     map[string]*corev1.ServiceAccount
	pdbs         []*policyv1.PodDisruptionBudget
	monitors     []*monitoringv1.ServiceMonitor
	ruleObjects  []*monitoringv1.PrometheusRule
	roles        []*rbacv1.Role
	bindings     []*rbacv1.RoleBinding
	objectsCount int
}

// render builds overlay name with kustomize's engine and decodes every
// object strictly.
func render(t *testing.T, name string) *rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("overlays", name))
	if err != nil {
		t.Fatalf("kustomize build overlays/%s: %v", name, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	r := &rendered{name: name, configMaps: map[string]*corev1.ConfigMap{}, services: map[string]*corev1.Service{}, accounts: map[string]*corev1.ServiceAccount{}}
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		obj, tm, err := decodeObject(doc)
		if err != nil {
			t.Errorf("overlays/%s: %s %s: %v", name, tm.Kind, tm.Metadata.Name, err)
			continue
		}
		r.objectsCount++
		switch o := obj.(type) {
		case *appsv1.Deployment:
			if r.deployment != nil {
				t.Errorf("overlays/%s: two Deployments", name)
			}
			r.deployment = o
		case *corev1.ConfigMap:
			r.configMaps[o.Name] = o
		case *corev1.Service:
			r.services[o.Name] = o
		case *corev1.ServiceAccount:
			r.accounts[o.Name] = o
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, o)
		case *monitoringv1.ServiceMonitor:
			r.monitors = append(r.monitors, o)
		case *monitoringv1.PrometheusRule:
			r.ruleObjects = append(r.ruleObjects, o)
		case *rbacv1.Role:
			r.roles = append(r.roles, o)
		case *rbacv1.RoleBinding:
			r.bindings = append(r.bindings, o)
		default:
			t.Errorf("overlays/%s: %T is not expected in the rendered output", name, o)
		}
	}
	if r.deployment == nil {
		t.Fatalf("overlays/%s renders no Deployment", name)
	}
	return r
}

// Every YAML file under deploy/kubernetes — resources, patches and
// kustomizations alike — decodes strictly into its type: a misspelt field
// in a patch would otherwise be merged in and ignored by the API server's
// lenient decoding (or refused only at apply time, with strict validation).
func TestManifestFilesDecodeStrictly(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			if _, tm, err := decodeObject(doc); err != nil {
				t.Errorf("%s (document %d, %s %s): %v", path, i, tm.Kind, tm.Metadata.Name, err)
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 14 {
		t.Errorf("%d documents decoded; the walk missed files", n)
	}
	// The strict decoding refuses what it must (so that this test can fail).
	for what, doc := range map[string]string{
		"an unknown field":    "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  selectr: {}\n",
		"a field's case":      "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  Selector: {}\n",
		"a duplicate field":   "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  type: ClusterIP\n  type: NodePort\n",
		"an unknown CR field": "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: x\nspec:\n  endpoints:\n    - prot: admin\n",
		"an unknown kind":     "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n",
	} {
		if _, _, err := decodeObject([]byte(doc)); err == nil {
			t.Errorf("%s was accepted", what)
		}
	}
}

// operation is what the probes are checked against: an operation of
// api/openapi.json, the server's contract, which the server's tests hold
// to its one route table (TestOpenAPIRoutes), the listener included.
type operation struct {
	ID       string `json:"operationId"`
	Listener string `json:"x-snowfence-listener"`
}

// getOperations maps each GET path of the contract to its operation.
func getOperations(t *testing.T) map[string]operation {
	t.Helper()
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &spec); err != nil {
		t.Fatal(err)
	}
	out := map[string]operation{}
	for path, methods := range spec.Paths {
		if raw, ok := methods["get"]; ok {
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			if op.Listener != "main" && op.Listener != "admin" {
				t.Fatalf("GET %s: x-snowfence-listener %q", path, op.Listener)
			}
			out[path] = op
		}
	}
	return out
}

// serveConfig is the part of serve's configuration the manifests decide,
// resolved as serve resolves it: the image's environment, then the
// container's (envFrom first, env after), then the arguments, which win.
type serveConfig struct {
	vars    map[string]string // SNOWFENCE_* and the rest, literal values
	secrets map[string]string // variables from a Secret: name → secret/key
	args    []string
}

func resolve(t *testing.T, r *rendered, c corev1.Container) serveConfig {
	t.Helper()
	sc := serveConfig{vars: map[string]string{}, secrets: map[string]string{}, args: c.Args}
	for _, kv := range image.Env() {
		k, v, _ := strings.Cut(kv, "=")
		sc.vars[k] = v
	}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm, ok := r.configMaps[ef.ConfigMapRef.Name]
			if !ok {
				if ef.ConfigMapRef.Optional == nil || !*ef.ConfigMapRef.Optional {
					t.Errorf("overlays/%s: envFrom ConfigMap %s is not in the overlay: the pod would not start", r.name, ef.ConfigMapRef.Name)
				}
				continue
			}
			for k, v := range cm.Data {
				sc.vars[ef.Prefix+k] = v
			}
		case ef.SecretRef != nil:
			// Its keys are the operator's: AWS credentials, say.
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			sc.vars[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			delete(sc.vars, e.Name)
			sc.secrets[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		default:
			t.Errorf("overlays/%s: env %s from %+v: not a form the test resolves", r.name, e.Name, e.ValueFrom)
		}
	}
	return sc
}

// flag returns the value of serve's flag name: the last argument that sets
// it, else its SNOWFENCE_* variable.
func (sc serveConfig) flag(name string) (string, bool) {
	val, set := "", false
	for i := 0; i < len(sc.args); i++ {
		a := strings.TrimPrefix(strings.TrimPrefix(sc.args[i], "-"), "-")
		if k, v, ok := strings.Cut(a, "="); ok && k == name {
			val, set = v, true
		} else if a == name && i+1 < len(sc.args) {
			val, set = sc.args[i+1], true
			i++
		}
	}
	if set {
		return val, true
	}
	v, ok := sc.vars["SNOWFENCE_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))]
	return v, ok
}

// port is the port of a listen address such as ":8080" or "0.0.0.0:9090".
func port(t *testing.T, addr string) int32 {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	p, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil || p <= 0 || p > 65535 {
		t.Fatalf("listen address %q has no port", addr)
	}
	return int32(p)
}

// containerPort resolves a probe's or a Service's target port (a name or
// a number) to the container's port number.
func containerPort(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
			return cp.ContainerPort
		}
	}
	t.Errorf("port %s is none of the container's ports", p.String())
	return 0
}

// Each overlay renders with kustomize, decodes strictly, and runs holders
// as the image and the server need: ports, probes and the ServiceMonitor
// reach the routes the contract serves on the listener each port is;
// liveness is /livez (which answers 200 through refusals that clear) and
// readiness /readyz; the grace period outlasts the drain; a shared store is
// configured (its secret from a Secret) and nothing can run an embedded
// etcd; the pod runs as the image's non-root user with a read-only root,
// no capabilities and no service token — but on the Kubernetes store,
// whose holders use theirs, bound to a Role granting only what the store
// asks (leasesRBAC); the budget, rollout and resources fit what was
// measured.
func TestOverlays(t *testing.T) {
	ops := getOperations(t)
	for name, notice := range overlays {
		t.Run(name, func(t *testing.T) {
			r := render(t, name)
			d := r.deployment
			spec := d.Spec.Template.Spec
			if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
				t.Fatalf("%d containers, %d init containers; want the one holder", len(spec.Containers), len(spec.InitContainers))
			}
			c := spec.Containers[0]
			sc := resolve(t, r, c)

			// Listeners and ports.
			listen, _ := sc.flag("listen")
			admin, _ := sc.flag("admin-listen")
			if admin == "" {
				t.Fatal("no admin listener (--admin-listen): probes and metrics would share the API's listener, and its TLS")
			}
			mainPort, adminPort := port(t, listen), port(t, admin)
			named := map[string]int32{}
			for _, cp := range c.Ports {
				named[cp.Name] = cp.ContainerPort
			}
			if named["http"] != mainPort || named["admin"] != adminPort || len(c.Ports) != 2 {
				t.Errorf("container ports %v; serve listens on %d (http) and %d (admin)", named, mainPort, adminPort)
			}
			if mainPort != image.ListenPort || adminPort != image.AdminPort {
				t.Errorf("ports %d and %d; the image exposes %d and %d", mainPort, adminPort, image.ListenPort, image.AdminPort)
			}
			listenerOf := func(p int32) string {
				switch p {
				case adminPort:
					return "admin"
				case mainPort:
					return "main"
				}
				t.Errorf("port %d is neither listener's", p)
				return ""
			}
			// An HTTP GET of path on port p reaches the operation want.
			reaches := func(what string, p int32, path, want string) {
				t.Helper()
				op, ok := ops[path]
				switch {
				case !ok:
					t.Errorf("%s: GET %s is no operation of api/openapi.json", what, path)
				case op.ID != want:
					t.Errorf("%s: GET %s is operation %s; want %s", what, path, op.ID, want)
				case op.Listener != listenerOf(p):
					t.Errorf("%s: GET %s on port %d (the %s listener) answers 404: api/openapi.json serves it on the %s listener", what, path, p, listenerOf(p), op.Listener)
				}
			}
			probe := func(what string, pr *corev1.Probe, want string) {
				t.Helper()
				if pr == nil || pr.HTTPGet == nil {
					t.Errorf("%s: want an HTTP GET probe", what)
					return
				}
				if pr.HTTPGet.Scheme != "" && pr.HTTPGet.Scheme != corev1.URISchemeHTTP {
					t.Errorf("%s: scheme %s; the admin listener is plain HTTP", what, pr.HTTPGet.Scheme)
				}
				reaches(what, containerPort(t, c, pr.HTTPGet.Port), pr.HTTPGet.Path, want)
			}
			probe("readinessProbe", c.ReadinessProbe, "ready")
			// Not health or ready: they answer 503 through refusals that
			// clear (a clock step, a fenced wait, a spare waiting).
			probe("livenessProbe", c.LivenessProbe, "live")
			if c.StartupProbe != nil {
				t.Errorf("a startupProbe: /livez answers 200 while starting; none is needed, and a wrong one kills spares")
			}
			if lp := c.LivenessProbe; lp != nil && lp.FailureThreshold < 2 {
				t.Errorf("livenessProbe failureThreshold %d: a thawed process may answer one 503 before its loop runs again", lp.FailureThreshold)
			}

			// Services and the ServiceMonitor.
			podLabels := d.Spec.Template.Labels
			for _, svc := range r.services {
				if !selects(svc.Spec.Selector, podLabels) {
					t.Errorf("Service %s selects %v; the pods are %v", svc.Name, svc.Spec.Selector, podLabels)
				}
				for _, sp := range svc.Spec.Ports {
					listenerOf(containerPort(t, c, sp.TargetPort))
				}
			}
			api, ok := r.services["snowfence"]
			if !ok || len(api.Spec.Ports) != 1 || containerPort(t, c, api.Spec.Ports[0].TargetPort) != mainPort {
				t.Errorf("Service snowfence: %+v; want the main listener alone", api)
			}
			if len(r.monitors) != 1 {
				t.Fatalf("%d ServiceMonitors; want 1", len(r.monitors))
			}
			sm := r.monitors[0]
			var scraped *corev1.Service
			for _, svc := range r.services {
				if selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
					if scraped != nil {
						t.Errorf("ServiceMonitor selects Services %s and %s", scraped.Name, svc.Name)
					}
					scraped = svc
				}
			}
			if scraped == nil || len(sm.Spec.Endpoints) != 1 {
				t.Fatalf("ServiceMonitor selects no Service (%v), or has %d endpoints", sm.Spec.Selector.MatchLabels, len(sm.Spec.Endpoints))
			}
			ep := sm.Spec.Endpoints[0]
			found := false
			for _, sp := range scraped.Spec.Ports {
				if sp.Name == ep.Port {
					found = true
					reaches("ServiceMonitor", containerPort(t, c, sp.TargetPort), ep.Path, "metrics")
				}
			}
			if !found {
				t.Errorf("ServiceMonitor endpoint port %q is no port of Service %s", ep.Port, scraped.Name)
			}
			if len(r.ruleObjects) != 1 {
				t.Errorf("%d PrometheusRules; want 1", len(r.ruleObjects))
			}

			// The drain: SIGTERM comes after the preStop hook; serve then
			// finishes requests within --shutdown-timeout and releases its
			// number within service.ReleaseTimeout.
			shutdown, ok := sc.flag("shutdown-timeout")
			drain, err := time.ParseDuration(shutdown)
			if !ok || err != nil {
				t.Fatalf("--shutdown-timeout %q: set it (SNOWFENCE_SHUTDOWN_TIMEOUT), so that the grace period can be checked against it", shutdown)
			}
			var preStop time.Duration
			if h := c.Lifecycle; h != nil && h.PreStop != nil {
				if h.PreStop.Sleep == nil {
					t.Errorf("preStop %+v: the image has no shell; use the sleep action", h.PreStop)
				} else {
					preStop = time.Duration(h.PreStop.Sleep.Seconds) * time.Second
				}
			}
			if preStop == 0 {
				t.Errorf("no preStop sleep: serve stops accepting at SIGTERM, before the proxies have taken the pod out")
			}
			need := preStop + drain + service.ReleaseTimeout
			if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= need {
				t.Fatalf("terminationGracePeriodSeconds %s: not longer than preStop %s + shutdown %s + release %s = %s", optional(g), preStop, drain, service.ReleaseTimeout, need)
			}

			// A shared store, and no way to run an embedded etcd.
			store, _ := sc.flag("lease-store")
			switch store {
			case "postgres":
				if _, literal := sc.vars["SNOWFENCE_POSTGRES_URL"]; literal || sc.secrets["SNOWFENCE_POSTGRES_URL"] == "" {
					t.Errorf("SNOWFENCE_POSTGRES_URL: want it from a Secret (secretKeyRef), not a literal; got %v", sc.secrets)
				}
			case "dynamodb":
			case "zookeeper":
				if servers, _ := sc.flag("zk-servers"); servers == "" {
					t.Errorf("lease store zookeeper without --zk-servers (SNOWFENCE_ZK_SERVERS): serve refuses to start")
				}
				// Without the digest every znode is open to anyone who
				// reaches the servers, who could rewrite a mark.
				if _, literal := sc.vars["SNOWFENCE_ZK_DIGEST"]; literal || sc.secrets["SNOWFENCE_ZK_DIGEST"] == "" {
					t.Errorf("SNOWFENCE_ZK_DIGEST: want it from a Secret (secretKeyRef), not a literal nor absent; got %v", sc.secrets)
				}
			case "kubernetes":
				// The namespace is the pod's own (its service account's
				// mount): a literal one could differ from where the Role
				// grants the leases.
				if ns, _ := sc.flag("k8s-namespace"); ns != "" {
					t.Errorf("--k8s-namespace %q: leave it to the pod's namespace, where the overlay's Role is", ns)
				}
				if p, _ := sc.flag("k8s-prefix"); p == "" {
					t.Errorf("no --k8s-prefix (SNOWFENCE_K8S_PREFIX): name the fleet's prefix, so that a second fleet in the namespace sees it must pick another")
				}
				if kc, _ := sc.flag("kubeconfig"); kc != "" {
					t.Errorf("--kubeconfig %q: the holders use the pod's service account (in-cluster)", kc)
				}
			case "etcd", "":
				if eps, _ := sc.flag("etcd-endpoints"); eps == "" {
					t.Errorf("lease store %q without --etcd-endpoints: every pod would lease from an embedded etcd of its own, and pods would mint the same IDs", store)
				}
				if _, literal := sc.vars["SNOWFENCE_ETCD_PASSWORD"]; literal {
					t.Errorf("SNOWFENCE_ETCD_PASSWORD is a literal: put it in a Secret")
				}
			default:
				t.Errorf("lease store %q", store)
			}
			for _, vm := range c.VolumeMounts {
				if !vm.ReadOnly || image.DataDir == vm.MountPath || strings.HasPrefix(image.DataDir, vm.MountPath+"/") {
					t.Errorf("volume mount %s at %s (read-only %v): the root stays read-only and nothing is writable, so that an embedded etcd cannot start in a pod", vm.Name, vm.MountPath, vm.ReadOnly)
				}
			}
			if dl := d.Spec.ProgressDeadlineSeconds; dl == nil || time.Duration(*dl)*time.Second < 2*notice {
				t.Errorf("progressDeadlineSeconds %v: below twice the store's notice window, %s, which every new holder waits before it is ready", dl, notice)
			}

			// Security.
			ps := spec.SecurityContext
			cs := c.SecurityContext
			switch {
			case ps == nil || cs == nil:
				t.Fatal("no pod or container securityContext")
			case ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot:
				t.Error("runAsNonRoot is not true")
			case ps.RunAsUser == nil || *ps.RunAsUser != image.UID || ps.RunAsGroup == nil || *ps.RunAsGroup != image.GID:
				t.Errorf("runAsUser/runAsGroup %v/%v; the image's user is %d:%d", ps.RunAsUser, ps.RunAsGroup, image.UID, image.GID)
			case ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
				t.Error("no RuntimeDefault seccomp profile")
			case cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem:
				t.Error("readOnlyRootFilesystem is not true")
			case cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation:
				t.Error("allowPrivilegeEscalation is not false")
			case cs.Privileged != nil && *cs.Privileged:
				t.Error("privileged")
			case cs.Capabilities == nil || !slices.Equal(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(cs.Capabilities.Add) > 0:
				t.Errorf("capabilities %+v; want drop ALL, add none", cs.Capabilities)
			case cs.RunAsUser != nil || cs.RunAsNonRoot != nil:
				t.Error("the container overrides the pod's user")
			}
			leasesRBAC(t, r, spec.ServiceAccountName, store == "kubernetes")
			if a := spec.AutomountServiceAccountToken; store == "kubernetes" && (a == nil || !*a) {
				t.Error("the pod mounts no service account token: the Kubernetes store's holders reach the API server with it")
			} else if store != "kubernetes" && (a == nil || *a) {
				t.Error("the pod mounts a service account token; the holders never talk to the API server")
			}
			if sa, ok := r.accounts[spec.ServiceAccountName]; !ok || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
				t.Errorf("ServiceAccount %q: not in the overlay, or it mounts its token", spec.ServiceAccountName)
			}
			if e := spec.EnableServiceLinks; e == nil || *e {
				t.Error("enableServiceLinks is not false: Kubernetes would put SNOWFENCE_* variables of its own (SNOWFENCE_PORT, SNOWFENCE_SERVICE_HOST, ...) where serve reads its flags")
			}

			// Rollout, budget, resources.
			ru := d.Spec.Strategy.RollingUpdate
			if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
				t.Errorf("strategy %+v: want a rolling update that never has fewer ready holders (maxUnavailable 0)", d.Spec.Strategy)
			}
			replicas := int32(1)
			if d.Spec.Replicas != nil {
				replicas = *d.Spec.Replicas
			}
			if len(r.pdbs) != 1 {
				t.Fatalf("%d PodDisruptionBudgets; want 1", len(r.pdbs))
			}
			pdb := r.pdbs[0]
			if !selects(pdb.Spec.Selector.MatchLabels, podLabels) || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() < 1 || int32(pdb.Spec.MaxUnavailable.IntValue()) >= replicas {
				t.Errorf("PodDisruptionBudget %+v: want the holders selected, at least one and fewer than %d unavailable", pdb.Spec, replicas)
			}
			if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
				t.Error("unhealthyPodEvictionPolicy is not AlwaysAllow: refusing (not ready) holders would block node drains")
			}
			req, lim := c.Resources.Requests.Memory(), c.Resources.Limits.Memory()
			peak := resource.NewQuantity(measuredPeakRSS*3/2, resource.BinarySI)
			if req.Cmp(*peak) < 0 || lim.Cmp(*req) < 0 || lim.Value() < 2*req.Value() {
				t.Errorf("memory request %s, limit %s: want the request at least 1.5 × the measured peak (%s) and the limit at least twice the request", req, lim, peak)
			}
			if c.Resources.Requests.Cpu().IsZero() {
				t.Error("no CPU request")
			}
			if gml, ok := sc.vars["GOMEMLIMIT"]; !ok {
				t.Error("no GOMEMLIMIT: the Go heap does not know the container's limit")
			} else if q, err := resource.ParseQuantity(strings.TrimSuffix(gml, "B")); err != nil || q.Cmp(*req) <= 0 || q.Cmp(*lim) >= 0 {
				t.Errorf("GOMEMLIMIT %s (%v): want it between the memory request %s and limit %s", gml, err, req, lim)
			}
			t.Logf("%d objects; grace %ds for a drain of %s; store %q", r.objectsCount, *spec.TerminationGracePeriodSeconds, need, store)
		})
	}
}

// leaseVerbs are all the Kubernetes store asks of the API server (package
// k8sstore): read, list, create and patch Lease objects.
var leaseVerbs = []string{"get", "list", "create", "patch"}

// leasesRBAC holds the overlay's RBAC to least privilege: with the
// Kubernetes store (want), one Role granting leaseVerbs on
// coordination.k8s.io leases and nothing else — no update, delete or
// watch, no other resource, no wildcard — bound by one RoleBinding to
// account alone, in the binding's namespace; with any other store, no RBAC
// at all (its holders never talk to the API server).
func leasesRBAC(t *testing.T, r *rendered, account string, want bool) {
	t.Helper()
	if !want {
		if len(r.roles) != 0 || len(r.bindings) != 0 {
			t.Errorf("%d Roles, %d RoleBindings: this store's holders need no RBAC", len(r.roles), len(r.bindings))
		}
		return
	}
	if len(r.roles) != 1 || len(r.bindings) != 1 {
		t.Fatalf("%d Roles, %d RoleBindings; want one of each", len(r.roles), len(r.bindings))
	}
	role, rb := r.roles[0], r.bindings[0]
	if len(role.Rules) != 1 {
		t.Fatalf("Role %s: %d rules; want one", role.Name, len(role.Rules))
	}
	rule := role.Rules[0]
	if !slices.Equal(rule.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(rule.Resources, []string{"leases"}) ||
		len(rule.ResourceNames) != 0 || len(rule.NonResourceURLs) != 0 {
		t.Errorf("Role %s rule %+v: want coordination.k8s.io leases, no resource names or URLs", role.Name, rule)
	}
	verbs := slices.Sorted(slices.Values(rule.Verbs))
	if want := slices.Sorted(slices.Values(leaseVerbs)); !slices.Equal(verbs, want) {
		t.Errorf("Role %s verbs %v; want exactly %v", role.Name, rule.Verbs, want)
	}
	if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}) {
		t.Errorf("RoleBinding %s refers to %+v; want Role %s", rb.Name, rb.RoleRef, role.Name)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Kind != rbacv1.ServiceAccountKind || rb.Subjects[0].Name != account ||
		(rb.Subjects[0].Namespace != "" && rb.Subjects[0].Namespace != rb.Namespace) {
		t.Errorf("RoleBinding %s subjects %+v; want the pods' ServiceAccount %s alone, in the binding's namespace", rb.Name, rb.Subjects, account)
	}
	if role.Namespace != rb.Namespace {
		t.Errorf("Role in namespace %q, RoleBinding in %q", role.Namespace, rb.Namespace)
	}
}

// optional formats a pointer's value, "unset" for nil.
func optional[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// selects reports whether every label of sel is in labels.
func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

var update = flag.Bool("update", false, "write base/prometheusrule.yaml from ops/prometheus/snowfence-rules.yml")

const rulesFile = "../../ops/prometheus/snowfence-rules.yml"

// prometheusRule is base/prometheusrule.yaml as made from the rules file:
// the file's groups, comments and all, under a PrometheusRule's spec.
func prometheusRule(t *testing.T) []byte {
	t.Helper()
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	_, groups, ok := strings.Cut(string(rules), "\ngroups:\n")
	if !ok {
		t.Fatalf("%s has no top-level groups:", rulesFile)
	}
	var b strings.Builder
	b.WriteString(`# Made from ops/prometheus/snowfence-rules.yml, the one copy of the alert
# rules: edit that file, then run (in deploy/)
#   go test ./kubernetes -run TestPrometheusRule -update
# TestPrometheusRule fails while this file differs from what that writes.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: snowfence
spec:
  groups:
`)
	for _, line := range strings.SplitAfter(groups, "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return []byte(b.String())
}

// The PrometheusRule is the alert rules file, wrapped: the same text under
// spec (so there is one copy, ops/prometheus/snowfence-rules.yml, which
// promtool checks and unit-tests), and the same rules once decoded — the
// rules file decodes strictly into the Prometheus Operator's rule types, so
// it holds nothing the CRD would drop.
func TestPrometheusRule(t *testing.T) {
	want := prometheusRule(t)
	const path = "base/prometheusrule.yaml"
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not %s wrapped: run go test ./kubernetes -run TestPrometheusRule -update (in deploy/)", path, rulesFile)
	}
	var pr monitoringv1.PrometheusRule
	if err := decodeStrict(got, &pr); err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var spec monitoringv1.PrometheusRuleSpec
	if err := decodeStrict(rules, &spec); err != nil {
		t.Fatalf("%s does not decode strictly into the operator's rule types: %v", rulesFile, err)
	}
	a, _ := json.Marshal(spec)
	b, _ := json.Marshal(pr.Spec)
	if !bytes.Equal(a, b) {
		t.Errorf("the PrometheusRule's rules differ from %s's", rulesFile)
	}
	alerts := 0
	for _, g := range pr.Spec.Groups {
		alerts += len(g.Rules)
	}
	if alerts == 0 {
		t.Error("no rules")
	}
	t.Logf("%d rules", alerts)
}
