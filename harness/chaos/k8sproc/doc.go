// Package k8sproc runs the chaos suite's Kubernetes API server: a real
// kube-apiserver (Kubernetes v1.37.2, the binary
// scripts/services/kube-apiserver.sh builds into internal/testkit/k8stest's
// cache; never client-go's fake clientset) as a process of the suite's
// own, over a one-member etcd that is a process too (package etcdproc),
// both on loopback. The suite kills, freezes and restores them; so they
// are processes it signals, not servers in its own address space as
// k8stest's etcd is (k8stest also takes a testing.TB, which the chaos
// command has not).
//
//	s, _ := k8sproc.Start(ctx, cfg)   // etcd + kube-apiserver, ready
//	kc, _ := s.Restricted(ctx, ns, f) // a namespace, a service account allowed get, list, create, patch on its leases, its kubeconfig in f
//	s.Kill(); s.StartAPIServer(ctx)   // crashed, started again on its port
//	s.Freeze(); s.Thaw()              // SIGSTOP, SIGCONT
//	s.Snapshot(ctx, p); s.Restore(ctx, p) // etcdctl snapshot save; restored without --bump-revision (its revision returned)
//
// # Who reaches what
//
// The holders reach the API server through a relay of the package's
// (Server.Addr): a plain TCP forwarder, so the TLS session is the API
// server's. Block makes it refuse every connection and drop those it
// carries — the holders are kept away while the operator works on a
// restored store, as PostgreSQL's drill keeps them to its Unix socket —
// and Unblock lets them back. The operator (AdminConfig: a client
// certificate in the group system:masters) reaches the API server's own
// port, which the relay never stands in front of.
//
// # The server
//
// The API server has the package's own PKI, made per server: one CA that
// signs its serving certificate (127.0.0.1, localhost) and the admin's
// client certificate, and an RSA key that signs service-account tokens.
// It authorizes with RBAC alone and refuses anonymous requests, as a
// cluster a lease holder meets; its flags are k8stest's. Its output goes
// to kube-apiserver.log in Config.Dir.
//
// # Cost
//
// A start of kube-apiserver costs about 5–10 s of wall time on two shared
// cores and several seconds of CPU (its OpenAPI and RBAC bootstrap): the
// suite starts one per run and shares it among the scenarios, each in a
// namespace of its own, and restarts it only when a scenario's fault is the
// restart.
package k8sproc
