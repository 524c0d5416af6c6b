package k8sstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snowfence/snowfence/lease"
)

// Annotation and label keys of the store's objects.
const (
	// recordKey is the annotation holding a lease object's record (JSON).
	recordKey = "snowfence.io/record"
	// originKey is the annotation holding the origin object's record.
	originKey = "snowfence.io/origin"
	// prefixLabel and regionLabel select a keyspace's lease objects for
	// Claim's list.
	prefixLabel = "snowfence.io/prefix"
	regionLabel = "snowfence.io/region"
)

// A record is the JSON one lease object's annotation holds: one machine
// number of one keyspace. The object is created by the number's first
// claim and never deleted; every later write is one JSON patch whose
// first operations test the resourceVersion and this exact string
// (fence_k8srecord.go).
type record struct {
	// Holder is who holds the number: "" when free, lease.QuarantineHolder
	// when an operator quarantined it.
	Holder string `json:"holder,omitempty"`
	// Epoch is the fencing token: one more on every claim.
	Epoch uint64 `json:"epoch"`
	// MarkMs is the mark and the expiry (Unix ms, exclusive): the holder
	// issues only below it; a claimer takes the number over once its own
	// clock is past it; every later holder starts at or above it.
	MarkMs int64 `json:"mark_ms"`
	// Claim is the nonce of the claim attempt that made the current (or
	// last) lease, kept by its release.
	Claim string `json:"claim,omitempty"`
	// Renewal is the renewal value the holder's last extension wrote
	// (lease.Renewals); empty after a claim and a release.
	Renewal string `json:"renewal,omitempty"`
	// FloorMs is the mark the number had before the current claim: a
	// release never records a lower one.
	FloorMs int64 `json:"floor_ms,omitempty"`
	// Release is the nonce of the release that freed the number, by which
	// a release of unknown outcome recognises its own.
	Release string `json:"release,omitempty"`
}

func (r record) held() bool        { return r.Holder != "" && r.Holder != lease.QuarantineHolder }
func (r record) quarantined() bool { return r.Holder == lease.QuarantineHolder }

func encode(r record) string { b, _ := json.Marshal(r); return string(b) }

// objMeta is what the store compares of an object's metadata (signs.go):
// its UID and its resourceVersion read as a number (0 when the server's
// is not one: then it is no sign).
type objMeta struct {
	uid string
	rv  uint64
}

// An object is one lease object as read: exists false for a number
// without one.
type object struct {
	exists bool
	rec    record
	// raw is the record annotation exactly as stored, and rvText the
	// resourceVersion as the server wrote it: what a write's JSON patch
	// tests (fence_k8srecord.go).
	raw    string
	rvText string
	meta   objMeta
	// journal is the journal annotation as stored ("" when absent):
	// parsed only by the writes that change it and by History (journal.go).
	journal string
}

// Names of the layout (see the package documentation).
func (s *Store) originName() string { return s.cfg.Prefix + "-origin" }
func (s *Store) namePrefix() string { return s.cfg.Prefix + "-r" + strconv.Itoa(s.region) + "-" }
func (s *Store) name(n int) string  { return s.namePrefix() + strconv.Itoa(n) }

// numberOf is the number whose object is named name in this keyspace, or
// false for a name of another keyspace or none of the store's.
func (s *Store) numberOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, s.namePrefix())
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// metaOf reads an object's UID and resourceVersion.
func metaOf(l *coordv1.Lease) objMeta {
	rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
	if err != nil {
		rv = 0 // not a number: kube-apiserver on etcd writes one, anything else is no sign
	}
	return objMeta{uid: string(l.UID), rv: rv}
}

// objectOf decodes l, a lease object.
func (s *Store) objectOf(l *coordv1.Lease) (object, error) {
	raw, ok := l.Annotations[recordKey]
	if !ok {
		return object{}, fmt.Errorf("%w: lease %s in namespace %s has no %s annotation: it was not written by this store; delete it "+
			"or give the store a Prefix of its own", ErrNotRecord, l.Name, s.cfg.Namespace, recordKey)
	}
	var r record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return object{}, fmt.Errorf("%w: lease %s in namespace %s holds %q in %s, not a lease record: %v; give the store a Prefix of its own",
			ErrNotRecord, l.Name, s.cfg.Namespace, raw, recordKey, err)
	}
	return object{exists: true, rec: r, raw: raw, rvText: l.ResourceVersion, meta: metaOf(l), journal: l.Annotations[journalKey]}, nil
}

// get reads number n's object: a zero object if it has none. Every read
// is a quorum read (no resourceVersion given: the API server reads etcd,
// or a cache it has made consistent with etcd's current revision first),
// so it sees every write acknowledged before it was sent.
func (s *Store) get(ctx context.Context, n int) (object, error) {
	l, err := s.c.Get(ctx, s.name(n), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return object{}, nil
	case apierrors.IsForbidden(err):
		return object{}, s.forbidden("get", s.name(n), err)
	case err != nil:
		return object{}, fmt.Errorf("k8sstore: read lease %s: %w", s.name(n), err)
	}
	return s.objectOf(l)
}

// reread is get on a context of its own (Config.RequestTimeout), for
// deciding after a write of unknown outcome.
func (s *Store) reread(ctx context.Context, n int) (object, error) {
	rctx, cancel := s.rereadCtx(ctx)
	defer cancel()
	return s.get(rctx, n)
}

// list reads the objects of the numbers in r that have one: one list of
// the keyspace's objects by their labels (a consistent list, as get's
// reads). An object whose labels were removed by hand is not listed; a
// claim of its number then fails its Create, as if taken.
func (s *Store) list(ctx context.Context, r lease.Range) (map[int]object, error) {
	sel := prefixLabel + "=" + s.cfg.Prefix + "," + regionLabel + "=" + strconv.Itoa(s.region)
	ls, err := s.c.List(ctx, metav1.ListOptions{LabelSelector: sel})
	switch {
	case apierrors.IsForbidden(err):
		return nil, s.forbidden("list", "objects labelled "+sel, err)
	case err != nil:
		return nil, fmt.Errorf("k8sstore: list leases labelled %s: %w", sel, err)
	}
	os := map[int]object{}
	for i := range ls.Items {
		n, ok := s.numberOf(ls.Items[i].Name)
		if !ok || !r.Contains(n) {
			continue
		}
		o, err := s.objectOf(&ls.Items[i])
		if err != nil {
			return nil, err
		}
		os[n] = o
	}
	return os, nil
}

// spec is the Lease spec written beside rec, for `kubectl get leases` and
// nothing else: no decision of the store reads it (expiry is the claimer's
// clock against the record's mark). nowMs is the writer's clock; acquired
// the claim's.
func spec(rec record, nowMs, acquiredMs int64) coordv1.LeaseSpec {
	var sp coordv1.LeaseSpec
	if rec.Holder == "" {
		return sp
	}
	holder := rec.Holder
	trans := int32(min(rec.Epoch, math.MaxInt32))
	dur := int32(min(max((rec.MarkMs-nowMs+999)/1000, 1), math.MaxInt32))
	renew := metav1.NewMicroTime(time.UnixMilli(nowMs))
	sp.HolderIdentity, sp.LeaseTransitions, sp.LeaseDurationSeconds, sp.RenewTime = &holder, &trans, &dur, &renew
	if acquiredMs > 0 {
		acq := metav1.NewMicroTime(time.UnixMilli(acquiredMs))
		sp.AcquireTime = &acq
	}
	return sp
}

// newObject is number n's first object, holding rec.
func (s *Store) newObject(n int, rec record, nowMs int64) *coordv1.Lease {
	return &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:        s.name(n),
			Labels:      map[string]string{prefixLabel: s.cfg.Prefix, regionLabel: strconv.Itoa(s.region)},
			Annotations: map[string]string{recordKey: encode(rec)},
		},
		Spec: spec(rec, nowMs, nowMs),
	}
}

// asRecord is the lease.Record callers see of number n's object. A held
// number shows its mark as ExpiresMs too; a quarantined one shows
// lease.QuarantineExpiryMs.
func (s *Store) asRecord(n int, o object) lease.Record {
	r := lease.Record{Machine: n, Region: s.region}
	if !o.exists {
		return r
	}
	r.Token, r.MarkMs = o.rec.Epoch, o.rec.MarkMs
	switch {
	case o.rec.quarantined():
		r.Holder, r.Quarantined, r.ExpiresMs = o.rec.Holder, true, lease.QuarantineExpiryMs
	case o.rec.held():
		r.Holder, r.ExpiresMs, r.Claim, r.Renewal = o.rec.Holder, o.rec.MarkMs, o.rec.Claim, o.rec.Renewal
	}
	return r
}
