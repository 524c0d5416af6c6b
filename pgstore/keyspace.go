package pgstore

import "github.com/snowfence/snowfence/lease"

// Keyspace implements lease.Store: a Store on the same pool and table
// whose rows are those with region = index, checked as New checks a
// Config with Region index (lease.ErrInvalid for a negative one). The
// tables beside the lease table — <table>_fleet, <table>_origin and
// <table>_region — are the table's, so the sibling reads and writes the
// same rows of them as s. Every claim and extension compares the server's
// identity with <table>_origin in the statement itself, and a claim that
// finds it changed fences the held rows of every region, so a sibling's
// detection of a changed identity is exactly a second process's. What the
// rows themselves show of a restore (signs.go) the sibling shares with s:
// the rows either saw, and the restores either noticed — those fence the
// leases of both and floor the claims of both, and a sibling opened after
// s noticed one knows of it. Its Close leaves the pool open even when s
// owns it (Connect); close the sibling before s. After s's Close it fails
// like s's methods.
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
	sib, err := New(s.pool, cfg)
	if err != nil {
		return nil, err
	}
	sib.watch = s.watch
	return sib, nil
}
