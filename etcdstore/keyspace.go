package etcdstore

import "github.com/snowfence/snowfence/lease"

// Keyspace implements lease.Store: a Store on the same etcd client and
// prefix whose keys are <prefix>/<index>/…, checked as New checks a
// Config with Region index (lease.ErrInvalid for a negative one). It
// shares <prefix>/schedule and <prefix>/registry with s, since they are
// the prefix's, and s's restore history: etcd's revision, raft term and
// cluster ID are the cluster's, so a restore either Store notices fences
// the leases of both and floors the claims of both, and a sibling opened
// after s noticed one knows of it; so are the mark revisions every
// keyspace's claims, renewals and releases have seen (the history's marks,
// by keyspace), which each claim compares with what it reads. The leases
// held are the sibling's own. Its Close leaves the client open even when s owns
// it (Connect); close the sibling before s. After s's Close a sibling's
// calls fail with the closed client's error when s owned the client, and
// go on working when the caller owns it (New).
func (s *Store) Keyspace(index int) (lease.Store, error) {
	sib, err := s.sibling(index)
	if err != nil {
		return nil, err
	}
	return sib, nil
}

// AdminKeyspace is Keyspace as a lease.Admin, for the operator's actions.
func (s *Store) AdminKeyspace(index int) (lease.Admin, error) {
	sib, err := s.sibling(index)
	if err != nil {
		return nil, err
	}
	return sib, nil
}

// sibling is the Store on keyspace index that Keyspace returns.
func (s *Store) sibling(index int) (*Store, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	cfg := s.cfg
	cfg.Region = index
	sib, err := New(s.cli, cfg)
	if err != nil {
		return nil, err
	}
	sib.mu, sib.hist = s.mu, s.hist
	return sib, nil
}
