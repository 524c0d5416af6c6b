package k8sstore

import (
	"context"
	"encoding/json"
	"fmt"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snowfence/snowfence/lease"
)

// The origin object (<prefix>-origin) is created once, by the first claim
// under the prefix, with a random id in its annotation snowfence.io/origin;
// it also holds the restore floor the first claim after a noticed restore
// sets (FloorMs), so that every process's claims start above it, not only
// those of the Store value that noticed.
type origin struct {
	ID      string `json:"id"`
	FloorMs int64  `json:"floor_ms,omitempty"`
}

// originRead is the origin object as a claim read it: what its write is
// planned on, and what the claim checks again once its write committed.
type originRead struct {
	o      origin
	raw    string
	rvText string
	// uid is the object's metadata.uid, which the API server assigns at
	// its creation: a copy of the object made through the API (a
	// namespace backup restored, kubectl apply of its YAML) has another,
	// though its annotations are the original's. RegistryIdentity
	// includes it; readOrigin fills it in.
	uid string
}

// readOrigin reads the origin object, creating it if absent.
func (s *Store) readOrigin(ctx context.Context) (originRead, error) {
	for range 3 {
		l, err := s.c.Get(ctx, s.originName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			o := origin{ID: lease.NewNonce()}
			b, _ := json.Marshal(o)
			obj := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: s.originName(),
				Labels: map[string]string{prefixLabel: s.cfg.Prefix}, Annotations: map[string]string{originKey: string(b)}}}
			l, err := s.c.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
			switch {
			case err == nil:
				s.log.Info("created the origin object", "name", s.originName(), "id", o.ID)
				return originRead{o: o, raw: string(b), rvText: l.ResourceVersion, uid: string(l.UID)}, nil
			case apierrors.IsAlreadyExists(err):
				continue // another claimer made it: read it
			case apierrors.IsForbidden(err):
				return originRead{}, s.forbidden("create", s.originName(), err)
			case apierrors.IsNotFound(err):
				return originRead{}, fmt.Errorf("%w: create lease %s in namespace %s: %v; create the namespace", ErrNoNamespace, s.originName(), s.cfg.Namespace, err)
			}
			return originRead{}, fmt.Errorf("k8sstore: create lease %s: %w; retry", s.originName(), err)
		case apierrors.IsForbidden(err):
			return originRead{}, s.forbidden("get", s.originName(), err)
		case err != nil:
			return originRead{}, fmt.Errorf("k8sstore: read lease %s: %w; retry", s.originName(), err)
		}
		raw := l.Annotations[originKey]
		var o origin
		if err := json.Unmarshal([]byte(raw), &o); err != nil || o.ID == "" {
			return originRead{}, fmt.Errorf("%w: lease %s in namespace %s holds %q in %s, not an origin record (%v): something else "+
				"writes under the prefix; give the store a Prefix of its own", ErrNotRecord, s.originName(), s.cfg.Namespace, raw, originKey, err)
		}
		return originRead{o: o, raw: raw, rvText: l.ResourceVersion, uid: string(l.UID)}, nil
	}
	return originRead{}, fmt.Errorf("k8sstore: lease %s keeps appearing and vanishing: something else writes under the store's prefix; "+
		"give it a Prefix of its own", s.originName())
}

// writeFloor raises the origin's floor to floorMs (never lowers it), with
// one JSON patch planned on the origin as read (fence_k8srecord.go),
// re-reading on a refusal, and returns the origin as written (or found).
func (s *Store) writeFloor(ctx context.Context, or originRead, floorMs int64) (originRead, error) {
	for range 5 {
		if or.o.FloorMs >= floorMs {
			return or, nil
		}
		o := or.o
		o.FloorMs = floorMs
		b, _ := json.Marshal(o)
		ops := append(preconditions(or.rvText, originKey, or.raw), patchOp{Op: "replace", Path: annotationPath(originKey), Value: string(b)})
		l, err := s.patch(ctx, s.originName(), ops)
		if err == nil {
			s.log.Warn("restore floor written into the origin object: every claim under the prefix starts at or above it",
				"floor", lease.FormatMs(floorMs))
			return originRead{o: o, raw: string(b), rvText: l.ResourceVersion}, nil
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return originRead{}, fmt.Errorf("k8sstore: write the restore floor %s into lease %s: %w; retry", lease.FormatMs(floorMs), s.originName(), err)
		}
		if or, err = s.readOrigin(ctx); err != nil {
			return originRead{}, err
		}
	}
	return originRead{}, fmt.Errorf("k8sstore: write the restore floor into lease %s: it keeps changing under this write; retry", s.originName())
}
