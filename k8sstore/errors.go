package k8sstore

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Errors of the store's own, beside the lease package's. Match them with
// errors.Is.
var (
	// ErrForbidden: the API server's authorization refused a request.
	// The store needs get, list, create and patch on
	// leases.coordination.k8s.io in Config.Namespace (a Role and a
	// RoleBinding for its service account; doc.go shows them) and
	// nothing else.
	ErrForbidden = errors.New("k8sstore: forbidden by the API server")
	// ErrNotRecord: an object under one of the store's names does not
	// hold what the store writes (its annotation is missing or is not a
	// record): something else writes under the prefix.
	ErrNotRecord = errors.New("k8sstore: object is not a snowfence record")
	// ErrNoNamespace: the namespace does not exist. Create it; the store
	// creates nothing outside its leases.
	ErrNoNamespace = errors.New("k8sstore: namespace not found")
)

// errClosed is the error of every call after Close.
var errClosed = errors.New("k8sstore: store is closed")

// forbidden wraps err, a refusal of verb on object name, in ErrForbidden
// with what to grant.
func (s *Store) forbidden(verb, name string, err error) error {
	return fmt.Errorf("%w: %s lease %s in namespace %s: %v; grant the store's service account get, list, create and patch on "+
		"leases.coordination.k8s.io in that namespace (a Role and RoleBinding: see the package documentation)",
		ErrForbidden, verb, name, s.cfg.Namespace, err)
}

// definite reports whether err is an answer after which the write
// certainly did not commit: a failed precondition (a JSON Patch test
// operation: 422 Invalid; a stale resourceVersion: 409 Conflict), an object
// that exists (a Create) or does not (a patch), or a refusal by
// authorization. Every other error (a timeout, a connection lost, a
// server error, a context ended) leaves the outcome unknown.
func definite(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) ||
		apierrors.IsNotFound(err) || apierrors.IsForbidden(err)
}
