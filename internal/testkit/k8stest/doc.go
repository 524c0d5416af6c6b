// Package k8stest runs a real kube-apiserver for the tests of the
// Kubernetes lease store: Kubernetes v1.37.2's, built from the Go module
// proxy by scripts/services/kube-apiserver.sh, as a process on a free
// loopback port, over a single etcd member embedded in the test process
// (configured as etcdtest's, by etcdmember), never client-go's fake
// clientset, which enforces no resourceVersion and evaluates no patch
// against a stored object.
//
//	s := k8stest.Start(t)                // etcd + kube-apiserver, ready
//	ns := s.Namespace(t)                 // a fresh namespace
//	cs := s.Clientset(t)                 // the admin (system:masters)
//	holder := s.Restricted(t, ns)        // a service account's token: get, list, create, patch leases in ns
//	path := k8stest.Kubeconfig(t, holder) // the same as a kubeconfig file, for a program that reads one
//	c := s.CopyData(t)                   // etcd snapshot, as etcdctl snapshot save
//	s.Restore(t, c)                      // restored without --bump-revision: resourceVersions repeat
//	s.KillAPIServer(t); s.StartAPIServer(t)
//	s.Freeze(t); s.Thaw(t)
//
// # The server
//
// The API server runs with the kit's own PKI, made in Go per server: one
// CA for its serving certificate (127.0.0.1, localhost) and its clients'
// certificates — the admin's names the group system:masters — and an RSA
// key that signs service-account tokens. It authorizes with RBAC alone and
// refuses anonymous requests, as a cluster a lease holder meets; it has no
// controller-manager (no namespace deletion, no garbage collection, no
// token controller), and --endpoint-reconciler-type=none. Start waits for
// /readyz (at most ReadyTimeout), and the test's cleanup kills the API
// server and stops its etcd. Its output goes to kube-apiserver.log in the
// server's directory; a failure to start shows the last of it.
//
// # Cost
//
// A start of kube-apiserver is the expensive part. Here (two shared cores,
// under load) Start took 2.5–10 s of wall time, of which the API server
// used 1.5–1.8 s of CPU until ready (its OpenAPI, its RBAC and
// flow-control bootstrap; every start logs both); StartAPIServer and
// Restore take 2.4–4.7 s and 1.2–1.5 s of CPU. The package's own tests,
// three API servers and four restarts, take 17–23 s under -race. Shared
// spares the start: one server for all the tests of a package that only
// read and write objects, each in a Namespace of its own; a test that
// stops, kills, freezes or restores the API server Starts its own.
//
// # Restores
//
// resourceVersions are etcd revisions. Restore puts back a copy of etcd
// the way an operator restores a backup without etcdutl's
// --bump-revision: the revision falls back to the copy's, objects written
// since come back older or not at all, and the next writes are given
// resourceVersions that were already issued before the restore — to other
// contents of the same objects. A write that tests only a resourceVersion
// can land on an object it never read; this package's tests show it, and
// that a JSON Patch test of the object's content refuses it. RestoreWith
// with a RevisionBump restores as the Kubernetes documentation tells
// operators to (--bump-revision --mark-compacted): the next writes rise
// above every resourceVersion issued before, but objects still come back
// at the resourceVersion of their last write before the copy.
//
// # Missing binary
//
// Without a kube-apiserver executable (Binary: $SNOWFENCE_KUBE_APISERVER,
// else kube-apiserver-v1.37.2 in scripts/services/kube-apiserver.sh's
// cache directory) Start and Shared skip the test, or fail it under
// CI=true (testenv.Missing).
package k8stest
