package dynamostore

import "github.com/snowfence/snowfence/lease"

// Region is the region (keyspace) whose machine numbers the store leases:
// its items are machine_id Region×Machines + number.
func (s *Store) Region() int { return s.region }

// Keyspace implements lease.Store: a Store on the same client and table
// whose items are machine_id index×Machines + number, checked as New
// checks a Config with Region index (lease.ErrInvalid for one outside 0
// to MaxRegion-1). The table's own items — the fleet schedule, the
// identity item and the registry (negative machine_ids) — are the
// table's, so the sibling reads and writes the same ones as s, and it
// shares s's memory of the table's identity (restore.go): the TableId it
// saw first, when it last called DescribeTable (and with it the global
// table check), and the restores noticed. A restore either notices thus
// fences the leases of both and floors the claims of both. The SDK client
// holds nothing to close; the sibling's Close only marks it closed.
// After s's Close it fails like s's methods.
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
	sib, err := New(s.db, cfg)
	if err != nil {
		return nil, err
	}
	sib.id = s.id
	return sib, nil
}
