package k8sstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fieldManager names the store's writes in the objects' managedFields.
const fieldManager = "snowfence"

// escapePointer escapes a JSON pointer's reference token (RFC 6901).
func escapePointer(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// writeOps is the JSON patch of a write of rec over o, a lease object as
// read, with sp as its spec: the preconditions (fence_k8srecord.go), then
// the replacement of the record and of the spec.
func writeOps(o object, rec record, sp coordv1.LeaseSpec) []patchOp {
	return append(preconditions(o.rvText, recordKey, o.raw),
		patchOp{Op: "replace", Path: annotationPath(recordKey), Value: encode(rec)},
		patchOp{Op: "replace", Path: "/spec", Value: sp})
}

// patch sends ops as one JSON patch of the object named name, and returns
// the object as written. The patch's bytes are made before the request:
// a request held in the client and sent late sends what was planned.
func (s *Store) patch(ctx context.Context, name string, ops []patchOp) (*coordv1.Lease, error) {
	b, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("k8sstore: encode a patch of lease %s: %v", name, err)
	}
	l, err := s.c.Patch(ctx, name, types.JSONPatchType, b, metav1.PatchOptions{FieldManager: fieldManager})
	if apierrors.IsForbidden(err) {
		return nil, s.forbidden("patch", name, err)
	}
	return l, err
}

// create creates number n's first object, holding rec. ErrNoNamespace
// when the namespace does not exist (a Create answered NotFound).
func (s *Store) create(ctx context.Context, n int, rec record, nowMs int64) (*coordv1.Lease, error) {
	return s.createJournal(ctx, n, rec, nowMs, "")
}

// createJournal is create with the journal annotation journal ("": none).
func (s *Store) createJournal(ctx context.Context, n int, rec record, nowMs int64, journal string) (*coordv1.Lease, error) {
	obj := s.newObject(n, rec, nowMs)
	if journal != "" {
		obj.Annotations[journalKey] = journal
	}
	l, err := s.c.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
	switch {
	case apierrors.IsForbidden(err):
		return nil, s.forbidden("create", s.name(n), err)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: create lease %s in namespace %s: %v; create the namespace", ErrNoNamespace, s.name(n), s.cfg.Namespace, err)
	}
	return l, err
}

// refusedAsIs reports whether a write refused with a definite error,
// planned on o, was refused for what it asks rather than for a change of
// the object: the object is still o (the same resourceVersion and
// record), so the same write would be refused again.
func refusedAsIs(o, now object) bool {
	return o.exists && now.exists && now.rvText == o.rvText && now.raw == o.raw
}
