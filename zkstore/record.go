package zkstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

// A record is the JSON one lease znode holds: one machine number of one
// keyspace. The znode is created by the number's first claim and never
// deleted; every later write is a Set conditioned on the version read.
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

// zstat is what the store compares of a znode's stat (signs.go): the
// zxid that created it, its data version and the zxid of its last write.
type zstat struct {
	czxid, mzxid int64
	version      int32
}

// A znode is one lease znode as read: exists false for a number without
// one.
type znode struct {
	exists bool
	rec    record
	stat   zstat
}

func statOf(st *zk.Stat) zstat {
	if st == nil {
		return zstat{}
	}
	return zstat{czxid: st.Czxid, mzxid: st.Mzxid, version: st.Version}
}

// Paths of the layout (see the package documentation).
func (s *Store) originPath() string { return s.cfg.Path + "/origin" }
func (s *Store) leasesPath() string { return s.cfg.Path + "/leases" }
func (s *Store) regionPath() string { return s.leasesPath() + "/" + strconv.Itoa(s.region) }
func (s *Store) path(n int) string  { return s.regionPath() + "/" + strconv.Itoa(n) }
func (s *Store) parents() []string  { return []string{s.cfg.Path, s.leasesPath(), s.regionPath()} }
func encode(r record) []byte        { b, _ := json.Marshal(r); return b }
func (s *Store) acl() []zk.ACL      { return s.cfg.ACL }
func (s *Store) syncPath() string   { return s.cfg.Path }

// decode reads number n's znode data.
func (s *Store) decode(n int, data []byte) (record, error) {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return record{}, fmt.Errorf("zkstore: znode %s holds %q, not a lease record: %v; it was not written by this store: "+
			"move it away or give the store a Path of its own", s.path(n), data, err)
	}
	return r, nil
}

// sync makes the session's server catch up with the leader, so that the
// reads after it see every write acknowledged before it was sent (a
// follower's reads can be stale otherwise). Every read that decides a
// write follows one.
func (s *Store) sync(ctx context.Context) error {
	_, err := call(ctx, func() (string, error) { return s.c.Sync(s.syncPath()) })
	if errors.Is(err, zk.ErrNoNode) {
		s.forgetParents() // made once, and deleted since (the path wiped)
		if err = s.ensureParents(ctx); err == nil {
			_, err = call(ctx, func() (string, error) { return s.c.Sync(s.syncPath()) })
		}
	}
	if err != nil {
		return fmt.Errorf("zkstore: sync %s: %w; retry", s.syncPath(), err)
	}
	return nil
}

// read syncs and reads number n's znode, both on one session.
func (s *Store) read(ctx context.Context, n int) (znode, error) {
	g := generation(s.c)
	if err := s.sync(ctx); err != nil {
		return znode{}, err
	}
	z, err := s.get(ctx, n)
	if err == nil && generation(s.c) != g {
		return znode{}, errSwapped
	}
	return z, err
}

// get reads number n's znode, without a sync.
func (s *Store) get(ctx context.Context, n int) (znode, error) {
	type got struct {
		data []byte
		st   *zk.Stat
	}
	g, err := call(ctx, func() (got, error) {
		d, st, err := s.c.Get(s.path(n))
		return got{d, st}, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return znode{}, nil
	case err != nil:
		return znode{}, fmt.Errorf("zkstore: read %s: %w", s.path(n), err)
	}
	r, err := s.decode(n, g.data)
	if err != nil {
		return znode{}, err
	}
	return znode{exists: true, rec: r, stat: statOf(g.st)}, nil
}

// reread is read on a context of its own (Config.RequestTimeout), for
// deciding after a write of unknown outcome.
func (s *Store) reread(ctx context.Context, n int) (znode, error) {
	rctx, cancel := s.rereadCtx(ctx)
	defer cancel()
	return s.read(rctx, n)
}

// ensureParents creates the path, its leases znode and the region's znode
// unless they exist (persistent, empty, open ACL).
func (s *Store) ensureParents(ctx context.Context) error {
	for _, p := range s.parents() {
		s.id.mu.Lock()
		made := s.id.made[p]
		s.id.mu.Unlock()
		if made {
			continue
		}
		if err := s.ensure(ctx, p); err != nil {
			return err
		}
		s.id.mu.Lock()
		if s.id.made == nil {
			s.id.made = map[string]bool{}
		}
		s.id.made[p] = true
		s.id.mu.Unlock()
	}
	return nil
}

// forgetParents forgets which parent znodes are known to exist, so that
// the next ensureParents makes them again: a request found one gone (the
// path deleted by hand, or the data restored from before it was made).
func (s *Store) forgetParents() {
	s.id.mu.Lock()
	s.id.made = nil
	s.id.mu.Unlock()
}

// ensure creates znode p and any parent of it missing.
func (s *Store) ensure(ctx context.Context, p string) error {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		q := p[:i]
		_, err := call(ctx, func() (string, error) { return s.c.Create(q, nil, 0, s.acl()) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zkstore: create %s: %w; check the session may create znodes there (ACLs), and retry", q, err)
		}
	}
	return nil
}

// asRecord is the lease.Record callers see of number n's znode. A held
// number shows its mark as ExpiresMs too; a quarantined one shows
// lease.QuarantineExpiryMs.
func (s *Store) asRecord(n int, z znode) lease.Record {
	r := lease.Record{Machine: n, Region: s.region}
	if !z.exists {
		return r
	}
	r.Token, r.MarkMs = z.rec.Epoch, z.rec.MarkMs
	switch {
	case z.rec.quarantined():
		// The mark kept is the holder's at the quarantine (Unquarantine
		// gives it back); the expiry, as in a lease table's row, 2100.
		r.Holder, r.Quarantined, r.ExpiresMs = z.rec.Holder, true, lease.QuarantineExpiryMs
	case z.rec.held():
		r.Holder, r.ExpiresMs, r.Claim, r.Renewal = z.rec.Holder, z.rec.MarkMs, z.rec.Claim, z.rec.Renewal
	}
	return r
}
