package k8sstore

import (
	"github.com/snowfence/snowfence/internal/revert"
)

// The record test: every write of an existing object is one JSON patch
// (RFC 6902) whose first operations test the object's resourceVersion and
// the exact record annotation the write was planned on, then replace the
// record and the spec. kube-apiserver applies a JSON patch to its copy of
// the object — from its watch cache, when it has one — and commits the
// result in an etcd transaction conditional on that copy's revision being
// the object's ModRevision in etcd; when it is not, it reads etcd and
// applies the patch again. So a test that fails refuses the whole write,
// with 422 Invalid, and a test that passes passed on the object as etcd
// holds it — provided a revision names one content only.
//
// The resourceVersion alone is not enough: it is etcd's revision of the
// object's last write, and etcd restored from a copy (without etcdutl's
// --bump-revision) counts its revisions again from the copy's. A write
// planned before the restore — a process frozen between its read and its
// patch, a request held in a retrying client — then finds the
// resourceVersion it read on an object it never read, once other writes
// (any object's: the revision is the cluster's) have moved the revision
// as far: another holder's live lease, which the write would take over.
// The record string cannot repeat: it carries the claim's random nonce and
// the fresh random renewal value of every extension, so a write planned on
// record S commits only while the object holds exactly S, in any history.
//
// One restore defeats both tests: etcd restored without a --bump-revision
// under an API server left running. Its watch cache keeps the objects of
// the lost history, and revisions it shows are then given again to other
// contents in etcd; a patch whose tests pass on the stale cached copy
// commits wherever etcd's object sits at that revision. No test in the
// patch can tell, since every one is checked against the same copy. A
// claim plans on a quorum Get, not on its list (reread4claim), so that
// its own write cannot commit that way and the divergence shows as a
// restore sign; a write planned before such a restore can. Kubernetes
// restores etcd with its API servers stopped; docs/lease-stores.md asks
// for that, or for a --bump-revision past every revision issued since the
// copy, under which no revision repeats.

// A patchOp is one operation of a JSON patch.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// annotationPath is the JSON pointer of annotation key (RFC 6901: "/" in a
// key is written "~1").
func annotationPath(key string) string {
	return "/metadata/annotations/" + escapePointer(key)
}

// preconditions are the first operations of every JSON patch of an object
// read with resourceVersion rv and annotation key holding raw: the test of
// the resourceVersion, then the test of the annotation's exact string,
// which keeps a write planned before an etcd restore from landing on the
// record of another history whose resourceVersion repeats the one read.
// Load-bearing for uniqueness: change only with scripts/prove-search k8srecord.
func preconditions(rv, key, raw string) []patchOp {
	ops := []patchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: rv}}
	if revert.K8sRecord {
		return ops
	}
	return append(ops, patchOp{Op: "test", Path: annotationPath(key), Value: raw})
}
