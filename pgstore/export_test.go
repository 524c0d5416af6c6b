package pgstore

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/lease"
)

// NewWithIdentity is New with identSQL in place of the statement that
// reads the server's system identifier and WAL timeline (it must return
// one row: sysid text, tl bigint). Tests point it at a table they control
// to stand for a failover or a restore into another cluster, which needs
// two servers: the real test is a second cluster (initdb of Debian's
// /usr/lib/postgresql/15/bin into a temporary directory, as
// scripts/services/postgres.sh does) behind a loopback TCP proxy the test
// switches from one cluster to the other, after which the store must
// report lease.ErrRestored and fence every holder exactly as the seam
// makes it.
func NewWithIdentity(pool *pgxpool.Pool, cfg Config, identSQL string) (*Store, error) {
	cfg.ident = identSQL
	return New(pool, cfg)
}

// ClaimStatement returns the claim statement and its arguments for number
// n with nonce, so a test can run a claim inside a transaction it holds
// open (the row lock of a claim in flight).
func (s *Store) ClaimStatement(req lease.ClaimRequest, n int, nonce string) (string, []any) {
	req, err := req.Check(lease.Unlimited)
	if err != nil {
		panic(err)
	}
	return s.queries.claim, s.claimArgs(req, n, nonce, 0)
}

// Pool returns the store's pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
