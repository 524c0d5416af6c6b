package k8sstore

import (
	"context"
	"fmt"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The prefix's records beside the leases — the fleet schedule
// (<prefix>-schedule, schedule.go) and the copy of the region registry
// (<prefix>-registry, registry.go) — are Lease objects too, each holding
// its text in one annotation, labelled with the prefix only (so no
// keyspace's list of lease objects sees them). They are created by their
// first write, never deleted, and written as a lease object is: one JSON
// patch testing the resourceVersion and the exact annotation read
// (fence_k8srecord.go), or a Create when absent.

// A metaObject is one of the prefix's records as read: exists false when
// there is no object.
type metaObject struct {
	exists bool
	raw    string
	rvText string
}

// readMeta reads the object name's annotation key (a quorum read).
func (s *Store) readMeta(ctx context.Context, name, key string) (metaObject, error) {
	l, err := s.c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return metaObject{}, nil
	case apierrors.IsForbidden(err):
		return metaObject{}, s.forbidden("get", name, err)
	case err != nil:
		return metaObject{}, fmt.Errorf("k8sstore: read lease %s: %w; retry", name, err)
	}
	raw, ok := l.Annotations[key]
	if !ok {
		return metaObject{}, fmt.Errorf("%w: lease %s in namespace %s has no %s annotation: it was not written by this store; delete it "+
			"or give the store a Prefix of its own", ErrNotRecord, name, s.cfg.Namespace, key)
	}
	return metaObject{exists: true, raw: raw, rvText: l.ResourceVersion}, nil
}

// writeMeta writes body into the annotation key of object name, read as
// m: a Create if m does not exist (AlreadyExists if another made it
// first), else one JSON patch whose first operations test the
// resourceVersion and the exact annotation read. The caller judges the
// error: definite ones (a failed test, AlreadyExists, NotFound) mean it
// did not commit.
func (s *Store) writeMeta(ctx context.Context, name, key string, m metaObject, body string) error {
	if !m.exists {
		obj := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{prefixLabel: s.cfg.Prefix}, Annotations: map[string]string{key: body}}}
		_, err := s.c.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
		switch {
		case apierrors.IsForbidden(err):
			return s.forbidden("create", name, err)
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%w: create lease %s in namespace %s: %v; create the namespace", ErrNoNamespace, name, s.cfg.Namespace, err)
		}
		return err
	}
	ops := append(preconditions(m.rvText, key, m.raw), patchOp{Op: "replace", Path: annotationPath(key), Value: body})
	_, err := s.patch(ctx, name, ops)
	return err
}
