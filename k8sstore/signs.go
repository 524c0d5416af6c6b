package k8sstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// A restore that the API server does not show — etcd restored from a
// snapshot or a copy of its data directory under it, objects written back
// by hand — shows in the lease objects themselves: every Store value
// remembers the records it read and wrote (package tablewatch: the Watch
// in identity) and compares each later read with what it knew before
// sending it. An epoch lower than one seen, an object gone, the epoch seen
// under another claim nonce, a mark lower than one seen under the same
// claim (held or free), or a renewal value the holder wrote before its
// last one back in its record (checkRenewal) is a restore. So is what an
// object's metadata shows (metaSign): under the same UID, a
// resourceVersion lower than one seen (every write raises it, to etcd's
// revision), or the object made anew under another UID (the store deletes
// none). Claim's list, Extend, Release and Get notice it: every lease
// claimed before is fenced with lease.ErrRestored, and the next claim sets
// the restore floor and writes it into the origin object for every other
// Store value (origin.go, fence_restore.go). The call that saw the sign
// fails with lease.ErrRestored (Claim goes on, above the floor).

// row is what the Watch compares of an object.
func (o object) row() tablewatch.Row {
	if !o.exists {
		return tablewatch.Row{}
	}
	return tablewatch.Row{Exists: true, Epoch: o.rec.Epoch, Claim: o.rec.Claim, Holder: o.rec.Holder, MarkMs: o.rec.MarkMs}
}

// A span is what a Store knew of numbers lo to hi before a request about
// them was sent: the Watch's Span and the objects' metadata seen.
type span struct {
	sp    tablewatch.Span
	gen   uint64
	metas map[string]objMeta
}

// before is the span of number n of this store's region.
func (s *Store) before(n int) span { return s.beforeRange(n, n) }

// beforeRange is the span of numbers lo to hi of this store's region.
func (s *Store) beforeRange(lo, hi int) span {
	sp := span{sp: s.id.watch.Before(s.region, lo, hi), metas: map[string]objMeta{}}
	id := s.id
	id.mu.Lock()
	defer id.mu.Unlock()
	sp.gen = id.watch.Gen()
	if id.metaGen != sp.gen {
		id.metas, id.metaGen = nil, sp.gen
	}
	for name, m := range id.metas {
		if n, ok := s.numberOf(name); ok && n >= lo && n <= hi {
			sp.metas[name] = m
		}
	}
	return sp
}

// saw judges object o of number n, read or written by a request sent
// after sp was taken, and records it: lease.ErrRestored, saying what it
// saw and what to do, if it shows that the data went back in time.
func (s *Store) saw(sp span, n int, o object) error {
	if err := s.judged(s.id.watch.After(sp.sp, map[int]tablewatch.Row{n: o.row()}, false)); err != nil {
		return err
	}
	return s.sawMeta(sp, n, o)
}

// sawList judges and records the objects of a list of the numbers sp
// covers (every one that exists), as saw does.
func (s *Store) sawList(sp span, os map[int]object) error {
	rows := make(map[int]tablewatch.Row, len(os))
	for n, o := range os {
		rows[n] = o.row()
	}
	if err := s.judged(s.id.watch.After(sp.sp, rows, true)); err != nil {
		return err
	}
	for n, o := range os {
		if err := s.sawMeta(sp, n, o); err != nil {
			return err
		}
	}
	return nil
}

// sawMeta judges o's metadata against what sp knew (metaSign) and keeps
// the later of the two: lease.ErrRestored, noticed, on a sign.
func (s *Store) sawMeta(sp span, n int, o object) error {
	if !o.exists || o.meta.uid == "" {
		return nil
	}
	name := s.name(n)
	if sign := metaSign(fmt.Sprintf("machine %d's object %s", n, name), sp.metas[name], o.meta); sign != "" {
		if s.id.watch.NoticeAfter(sp.sp, sign) {
			return s.judged(sign)
		}
		return nil // a restore was noticed since sp was taken: the object may be of either history
	}
	id := s.id
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.metaGen != sp.gen {
		return nil // likewise
	}
	if id.metas == nil {
		id.metas = map[string]objMeta{}
	}
	if cur, ok := id.metas[name]; !ok || cur.uid != o.meta.uid || o.meta.rv > cur.rv {
		id.metas[name] = o.meta
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
			_ = s.judged(what) // logs it
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
	s.log.Error("the API server's data went back in time (the lease objects show it): every lease claimed before is fenced, "+
		"and claims start after the restore window; raise every mark past the last ID issued before letting holders back",
		"detail", what, "runbook", "docs/runbook.md")
	return fmt.Errorf("%w: Kubernetes namespace %s prefix %s: %s — etcd restored from a snapshot or a copy under the API server, or "+
		"lease objects written back or deleted by hand. Marks it acknowledged may be lost: stop issuing on every lease claimed before, "+
		"and raise every mark past the last ID issued before letting other holders claim (docs/runbook.md)",
		lease.ErrRestored, s.cfg.Namespace, s.cfg.Prefix, what)
}

// fenced is the error of Extend for lease l, fenced because a restore
// (what, noticed at at) was noticed after it was claimed:
// lease.ErrRestored, with what to do.
func (s *Store) fenced(l *lease.Lease, what string, at time.Time) error {
	return fmt.Errorf("%w: machine %d region %d epoch %d under Kubernetes namespace %s prefix %s was claimed before the store noticed, "+
		"at %s, that the data went back in time (%s): stop issuing on it and claim again (claims start after the restore window), and "+
		"raise every mark past the last ID issued before letting other holders back (docs/runbook.md)",
		lease.ErrRestored, l.Machine, l.Region, l.Token, s.cfg.Namespace, s.cfg.Prefix, at.UTC().Format(time.RFC3339), what)
}
