package pgstore

import (
	"errors"
	"fmt"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// A restore the server cannot show — a file-level copy of the data
// directory put back on the same cluster and timeline, a table restored
// with pg_restore into the same cluster, rows written back or deleted by
// hand — shows in the rows themselves: every Store value remembers the
// rows it read and wrote (package tablewatch; shared with the Store values
// Keyspace opened from it) and compares each later read with what it knew
// before sending it. A row gone, an epoch lower than one seen, the epoch
// seen under another claim nonce, a mark lower than one seen under the
// same claim (held or free), or — what this Store value's own renewals
// show — a renewal value the holder wrote before its last one back in its
// row (checkRenewal) is a restore:
//
//   - the call that saw it fails with lease.ErrRestored (Extend, Release,
//     Get, List; Claim goes on, above the floor);
//   - every lease claimed through these Store values before is fenced:
//     its next Extend fails with lease.ErrRestored;
//   - the next claim sets the restore floor — its clock plus the restore
//     window — and writes it into <table>_origin (the claim statement's
//     saved), where every claim of every process finds it, as the floor
//     of a changed server identity.
//
// An extension also refuses to renew a mark found below the one the store
// last saw under the lease's claim (the extend statement's $8), so that a
// restored row is not renewed as if nothing happened. A release of a claim
// whose row came back with a lower mark still succeeds and notices
// nothing: it writes the end of what the holder issued, which is what the
// next claimer must start above (its renewal compare takes the holder's
// own earlier values too, lease.Renewals.Own). A higher epoch is no
// sign: another holder's claim, a quarantine and raise-marks make one, and
// so would a restore followed by as many claims — that one is not told
// apart from an ordinary loss.

// row is what the Watch compares of a row (ok false: no row).
func (r row) seen(ok bool) tablewatch.Row {
	if !ok {
		return tablewatch.Row{}
	}
	return tablewatch.Row{Exists: true, Epoch: uint64(r.epoch), Claim: r.nonce, Holder: r.holder, MarkMs: r.expiryMs}
}

// before is the Watch's Span of number n of this store's region, taken
// before a request about it is sent.
func (s *Store) before(n int) tablewatch.Span { return s.watch.Before(s.region, n, n) }

// saw judges row r of number n (ok false: no row), read or written by a
// request sent after sp was taken, and records it: lease.ErrRestored,
// saying what it saw and what to do, if it shows that the table went back
// in time.
func (s *Store) saw(sp tablewatch.Span, n int, r row, ok bool) error {
	return s.judged(s.watch.After(sp, map[int]tablewatch.Row{n: r.seen(ok)}, false))
}

// sawScan judges and records the rows of a read of every row of the
// numbers sp covers, as saw does.
func (s *Store) sawScan(sp tablewatch.Span, rs []row) error {
	rows := make(map[int]tablewatch.Row, len(rs))
	for _, r := range rs {
		rows[r.machine] = r.seen(true)
	}
	return s.judged(s.watch.After(sp, rows, true))
}

// checkRenewal is lease.Renewals.Check of the renewal value stored, read
// in the answer to a request on l sent after sp was taken. A value l's
// holder wrote before its last (lease.ErrRestored) is a restore as sure as
// any sign of the rows: the Watch notices it, with the same consequences.
func (s *Store) checkRenewal(sp tablewatch.Span, l *lease.Lease, stored string) error {
	err := s.renewals.Check(l, stored)
	if errors.Is(err, lease.ErrRestored) {
		what := fmt.Sprintf("machine %d holds a renewal value its holder (%q, epoch %d) wrote before its last acknowledged one",
			l.Machine, l.Holder, l.Token)
		if s.watch.NoticeAfter(sp, what) {
			s.judged(what) // logs it
		}
	}
	return err
}

// judged logs a restore the Watch noticed (what is not "") and returns
// lease.ErrRestored saying so; nil when what is "".
func (s *Store) judged(what string) error {
	if what == "" {
		return nil
	}
	s.log.Error("the lease table went back in time (its rows show it; the server's identity does not): every lease claimed "+
		"before through this store is fenced, and claims start after the restore window; run raise-marks before letting holders back",
		"region", s.region, "detail", what, "runbook", "docs/runbook.md")
	return tablewatch.Seen(s.name, what)
}
