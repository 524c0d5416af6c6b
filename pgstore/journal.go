package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
)

// History implements lease.Journal: the retained journal entries of
// machine in the store's region, from <table>_claims, oldest claim first
// (by claim number, seq). It validates machine as Get does (lease.ErrInvalid).
//
// Each entry was written by the claim's own statement, and ended (released,
// quarantined, raised) by the statement of the write that ended the
// holding; see "The journal" in the package documentation.
func (s *Store) History(ctx context.Context, machine int) ([]lease.JournalEntry, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, s.queries.history, s.region, machine)
	es, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lease.JournalEntry, error) {
		e := lease.JournalEntry{Region: s.region}
		var epoch int64
		err := r.Scan(&e.Machine, &epoch, &e.Claim, &e.Holder, &e.ClaimedMs, &e.PrevMarkMs, &e.StartMs, &e.End, &e.EndMs, &e.EndedMs)
		e.Token = uint64(epoch)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: journal of machine %d region %d: %w", machine, s.region, s.schemaErr(err))
	}
	return es, nil
}

// giveBack empties the journal entry of claim attempt nonce on number n:
// the attempt committed (or may have), its claimer could not adopt it and
// issues nothing on it. Without this its entry's interval would run to
// the next claimer's mark, naming a holder for timestamps nobody issued.
// It is best effort: it logs a failure and returns nothing.
func (s *Store) giveBack(ctx context.Context, n int, nonce string) {
	var seq int64
	err := s.pool.QueryRow(ctx, s.queries.giveBack, s.region, n, nonce).Scan(&seq)
	switch {
	case err == nil:
		s.log.Info("claim committed but not adopted: its journal entry is ended at its start (it issued nothing)",
			"machine", n, "region", s.region, "seq", seq)
	case errors.Is(err, pgx.ErrNoRows): // the attempt did not commit: no entry
	default:
		s.log.Warn("claim of unknown outcome: could not end its journal entry, if it has one; "+
			"the entry would name its holder for timestamps nobody issued", "machine", n, "region", s.region, "error", err)
	}
}
