package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/snowfence/snowfence/lease"
)

// identity is the server's identity as a claim or extension read it, with
// the one the origin row records (nil when it has no row).
type identity struct {
	sysid    string
	tl       int64
	oldSysid *string
	oldTl    *int64
}

func (id identity) String() string {
	switch {
	case id.oldSysid == nil || id.oldTl == nil:
		return fmt.Sprintf("no origin recorded; the server is system %s on timeline %d", id.sysid, id.tl)
	case *id.oldSysid != id.sysid:
		return fmt.Sprintf("the server's system identifier is %s, the table was on %s (timeline %d → %d): another cluster, "+
			"as after a restore into a new cluster or a connection to another server", id.sysid, *id.oldSysid, *id.oldTl, id.tl)
	default:
		return fmt.Sprintf("the server writes WAL on timeline %d, the table was on timeline %d (system %s): a standby was promoted "+
			"or the cluster was recovered to a point in time", id.tl, *id.oldTl, id.sysid)
	}
}

// noticeRestore records in the origin row that the server is not the one
// it records, as the claim that found it: a first look (no row) only
// records the identity; a change counts a restore, fences every held row
// of every region (holder ”, epoch + 1) and raises the origin's floor to
// the claimer's now plus its restore window, so that every later claim of
// any holder, in any process, starts above anything a holder cut off by
// the change may still issue. Claims and extensions refuse until it is
// recorded, so no holder renews on the new server meanwhile.
func (s *Store) noticeRestore(ctx context.Context, req lease.ClaimRequest, id identity) error {
	floor := req.NowMs + s.restoreWindow(req).Milliseconds()
	var restores *int64
	var fenced int64
	err := s.pool.QueryRow(ctx, s.queries.origin, floor, id.oldSysid, id.oldTl, id.String(), req.NowMs).Scan(&restores, &fenced)
	switch {
	case err != nil:
		return fmt.Errorf("pgstore: claim in %s region %d: %s; recording it failed: %w; retry", req.Range, s.region, id, s.schemaErr(err))
	case restores == nil:
		s.log.Info("another claimer recorded the server's new identity first", "detail", id.String())
	case *restores == 0:
		s.log.Info("recorded the server's identity (first look)", "system_identifier", id.sysid, "timeline", id.tl)
	default:
		s.log.Error("the server is another cluster or on another timeline than the table was: treated as a restore from an "+
			"earlier state; every holder is fenced and claims start after the restore window",
			"region", s.region, "detail", id.String(), "restores", *restores, "holders_fenced", fenced,
			"floor", lease.FormatMs(floor), "runbook", "docs/runbook.md")
	}
	return nil
}

// restoredErr is Extend's error when the server is not the one the origin
// row records.
func restoredErr(l *lease.Lease, id identity) error {
	return fmt.Errorf("%w: machine %d region %d epoch %d: %s. Acknowledged marks may have been lost: stop issuing on this "+
		"lease and claim again (the next claim records the change, fences every holder and starts after the restore window)",
		lease.ErrRestored, l.Machine, l.Region, l.Token, id)
}

// schemaErr adds what to do to an error about a missing table or column:
// the table predates this version, or Migrate never ran.
func (s *Store) schemaErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "42703") {
		return fmt.Errorf("%w (run Migrate — \"snowfence leases init\" — on table %s: this version needs %s%s, %s%s, %s%s, %s%s "+
			"and the columns claim_nonce, claim_seq and renewal)",
			err, s.name, s.name, fleetSuffix, s.name, originSuffix, s.name, registrySuffix, s.name, journalSuffix)
	}
	return err
}
