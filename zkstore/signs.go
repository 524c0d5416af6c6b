package zkstore

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// A restore that ZooKeeper does not show — an ensemble started again on a
// copy of its data directories, znodes written back by hand — shows in
// the lease znodes themselves: every Store value remembers the records it
// read and wrote (package tablewatch: the Watch in identity) and compares
// each later read with what it knew before sending it. An epoch lower
// than one seen, a znode gone, the epoch seen under another claim nonce, a
// mark lower than one seen under the same claim (held or free), or a
// renewal value the holder wrote before its last one back in its record
// (checkRenewal) is a restore. So is what a znode's stat shows (statSign):
// under the same creation zxid, a data version or a modification zxid
// lower than one seen (every write raises both), or the znode created
// anew (none is ever deleted); and, for the region's znode that Claim
// lists, a children's version or a last child's zxid lower than one seen
// (a number first claimed since is gone, even one outside the range read). Claim's scan, Extend, Release and Get
// notice it: every lease claimed before is fenced with lease.ErrRestored,
// and the next claim sets the restore floor and writes it into the origin
// znode for every other Store value (origin.go, fence_restore.go). The call that saw the
// sign fails with lease.ErrRestored (Claim goes on, above the floor). A
// release of a claim whose own record came back lower still succeeds: it
// writes the end of what the holder issued, which the next claimer must
// start above (its renewal compare takes the holder's own earlier values
// too, lease.Renewals.Own).

// row is what the Watch compares of a znode.
func (z znode) row() tablewatch.Row {
	if !z.exists {
		return tablewatch.Row{}
	}
	return tablewatch.Row{Exists: true, Epoch: z.rec.Epoch, Claim: z.rec.Claim, Holder: z.rec.Holder, MarkMs: z.rec.MarkMs}
}

// A span is what a Store knew of numbers lo to hi before a request about
// them was sent: the Watch's Span and the znode stats seen.
type span struct {
	sp    tablewatch.Span
	gen   uint64
	stats map[string]zstat
}

// before is the span of number n of this store's region.
func (s *Store) before(n int) span { return s.beforeRange(n, n) }

// beforeRange is the span of numbers lo to hi of this store's region.
func (s *Store) beforeRange(lo, hi int) span {
	sp := span{sp: s.id.watch.Before(s.region, lo, hi), stats: map[string]zstat{}}
	id := s.id
	id.mu.Lock()
	defer id.mu.Unlock()
	sp.gen = id.watch.Gen()
	if id.statGen != sp.gen {
		id.stats, id.statGen = nil, sp.gen
	}
	prefix := s.regionPath() + "/"
	for p, st := range id.stats {
		if p == s.regionPath() || strings.HasPrefix(p, prefix) {
			sp.stats[p] = st
		}
	}
	return sp
}

// saw judges znode z of number n, read or written by a request sent after
// sp was taken, and records it: lease.ErrRestored, saying what it saw and
// what to do, if it shows that the data went back in time.
func (s *Store) saw(sp span, n int, z znode) error {
	if err := s.judged(s.id.watch.After(sp.sp, map[int]tablewatch.Row{n: z.row()}, false)); err != nil {
		return err
	}
	return s.sawStat(sp, n, z)
}

// sawScan judges and records the znodes of a scan of the numbers sp
// covers (every one that exists), as saw does.
func (s *Store) sawScan(sp span, zs map[int]znode) error {
	rows := make(map[int]tablewatch.Row, len(zs))
	for n, z := range zs {
		rows[n] = z.row()
	}
	if err := s.judged(s.id.watch.After(sp.sp, rows, true)); err != nil {
		return err
	}
	for n, z := range zs {
		if err := s.sawStat(sp, n, z); err != nil {
			return err
		}
	}
	return nil
}

// sawStat judges z's stat against the one sp knew (statSign) and keeps
// the later of the two. A stat whose version is unknown (a write's, whose
// reply carries none here) is not kept.
func (s *Store) sawStat(sp span, n int, z znode) error {
	if !z.exists {
		return nil
	}
	return s.sawPathStat(sp, s.path(n), fmt.Sprintf("machine %d's znode", n), z.stat)
}

// sawPathStat judges the stat st of znode p (named what in messages),
// read by a request sent after sp was taken, against the one sp knew, and
// keeps the later of the two: lease.ErrRestored, noticed, on a sign.
func (s *Store) sawPathStat(sp span, p, what string, st zstat) error {
	if st.czxid == 0 {
		return nil
	}
	if sign := statSign(what, sp.stats[p], st); sign != "" {
		if s.id.watch.NoticeAfter(sp.sp, sign) {
			return s.judged(sign)
		}
		return nil // a restore was noticed since sp was taken: the stat may be of either history
	}
	id := s.id
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.statGen != sp.gen {
		return nil // likewise
	}
	if id.stats == nil {
		id.stats = map[string]zstat{}
	}
	if cur, ok := id.stats[p]; !ok || cur.czxid != st.czxid || st.version > cur.version || st.mzxid > cur.mzxid {
		id.stats[p] = st
	}
	return nil
}

// checkRenewal is lease.Renewals.Check of the renewal value stored, read
// in the answer to a request on l sent after sp was taken. A value l's
// holder wrote before its last (lease.ErrRestored) is a restore as sure as
// any sign of the records: the Watch notices it, with the same
// consequences.
func (s *Store) checkRenewal(sp span, l *lease.Lease, stored string) error {
	err := s.renewals.Check(l, stored)
	if errors.Is(err, lease.ErrRestored) {
		what := fmt.Sprintf("machine %d holds a renewal value its holder (%q, epoch %d) wrote before its last acknowledged one",
			l.Machine, l.Holder, l.Token)
		if s.id.watch.NoticeAfter(sp.sp, what) {
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
	s.log.Error("ZooKeeper's data went back in time (the lease znodes show it): every lease claimed before is fenced, "+
		"and claims start after the restore window; raise every mark past the last ID issued before letting holders back",
		"detail", what, "runbook", "docs/runbook.md")
	return fmt.Errorf("%w: ZooKeeper path %s: %s — ZooKeeper restored from a copy of its data directories, or znodes written "+
		"back or deleted by hand. Marks it acknowledged may be lost: stop issuing on every lease claimed before, and raise every mark "+
		"past the last ID issued before letting other holders claim (docs/runbook.md)", lease.ErrRestored, s.cfg.Path, what)
}

// fenced is the error of Extend for lease l, fenced because a restore
// (what, noticed at at) was noticed after it was claimed:
// lease.ErrRestored, with what to do.
func (s *Store) fenced(l *lease.Lease, what string, at time.Time) error {
	return fmt.Errorf("%w: machine %d region %d epoch %d under ZooKeeper path %s was claimed before the store noticed, at %s, that "+
		"the data went back in time (%s): stop issuing on it and claim again (claims start after the restore window), and raise "+
		"every mark past the last ID issued before letting other holders back (docs/runbook.md)",
		lease.ErrRestored, l.Machine, l.Region, l.Token, s.cfg.Path, at.UTC().Format(time.RFC3339), what)
}
