package dynamostore

import (
	"errors"
	"fmt"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// A restore the table's identity does not show — dynalite or DynamoDB
// Local restarted on a copy of its data, items written back by hand —
// shows in the items themselves: every Store value remembers the items it
// read and wrote (package tablewatch: the Watch in identity) and compares
// each later read with what it knew before sending it. An epoch lower than
// one seen, an item gone, the epoch seen under another claim nonce, or a
// mark lower than one seen under the same claim (held or free), or a
// renewal value the holder wrote before its last one back in its item
// (checkRenewal: what this Store value's own renewals show) is a
// restore: Claim's scan, Extend, Release, Get and List notice it as a new
// TableId is noticed — every lease claimed before is fenced with
// lease.ErrRestored, and the next claim sets the restore floor and writes
// it into the identity item for every other Store value. The call that
// saw the sign fails with lease.ErrRestored too (Claim goes on, above the
// floor). A renewal also refuses to renew a mark found below the one last
// seen under its claim; a release of such a claim still succeeds and
// notices nothing: it writes the end of what the holder issued, which is
// what the next claimer must start above (its renewal compare takes the
// holder's own earlier values too, lease.Renewals.Own). A higher epoch is
// no sign: another holder's claim, a quarantine
// and raise-marks make one, and so would a restore followed by as many
// claims — that one is not told apart from an ordinary loss.

// row is what the Watch compares of an item.
func (it item) row() tablewatch.Row {
	if !it.exists {
		return tablewatch.Row{}
	}
	return tablewatch.Row{Exists: true, Epoch: it.epoch, Claim: it.nonce, Holder: it.holder, MarkMs: it.expiryMs}
}

// before is the Watch's Span of number n of this store's region, taken
// before a request about it is sent.
func (s *Store) before(n int) tablewatch.Span { return s.id.watch.Before(s.region, n, n) }

// saw judges item it of number n, read or written by a request sent after
// sp was taken, and records it: lease.ErrRestored, saying what it saw and
// what to do, if it shows that the table went back in time.
func (s *Store) saw(sp tablewatch.Span, n int, it item) error {
	return s.judged(s.id.watch.After(sp, map[int]tablewatch.Row{n: it.row()}, false))
}

// sawScan judges and records the items of a scan of the numbers sp
// covers (every one with an item), as saw does.
func (s *Store) sawScan(sp tablewatch.Span, items []item) error {
	rows := make(map[int]tablewatch.Row, len(items))
	for _, it := range items {
		rows[it.machine] = it.row()
	}
	return s.judged(s.id.watch.After(sp, rows, true))
}

// checkRenewal is lease.Renewals.Check of the renewal value stored, read
// in the answer to a request on l sent after sp was taken. A value l's
// holder wrote before its last (lease.ErrRestored) is a restore as sure as
// any sign of the items: the Watch notices it, with the same consequences.
func (s *Store) checkRenewal(sp tablewatch.Span, l *lease.Lease, stored string) error {
	err := s.renewals.Check(l, stored)
	if errors.Is(err, lease.ErrRestored) {
		what := fmt.Sprintf("machine %d holds a renewal value its holder (%q, epoch %d) wrote before its last acknowledged one",
			l.Machine, l.Holder, l.Token)
		if s.id.watch.NoticeAfter(sp, what) {
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
	s.log.Error("the lease table went back in time (its items show it; the TableId does not): every lease claimed before is fenced, "+
		"and claims start after the restore window; run raise-marks before letting holders back", "detail", what, "runbook", "docs/runbook.md")
	return tablewatch.Seen(s.table, what)
}
