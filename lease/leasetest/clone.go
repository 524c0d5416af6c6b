package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// A cloned holder process — a VM snapshot restored while the original
// runs, a live clone, a forked image — is two copies of one process state:
// one lease value (holder, token, claim, mark, renewal value) and one
// store's memory of it. A Store value from Reopen given a copy of the lease
// is exactly that for a copy taken after an acknowledged renewal: it
// shares the data, and its memory of the lease is what the lease value
// carries (for etcd, what it reads when it adopts the lease, as a copy
// whose memory matched the store's would hold).

// checkCloneIsLost: of two copies of one lease, each renewing through its
// own Store value, the one whose extension lands second gets ErrLost and
// changes nothing, whichever copy it is and whether the clone was taken
// after the claim or after an extension, and whether the extensions move
// the mark or not (a clock stepped back, a mark raised); the one that
// extended first keeps extending. A copy's Release after the other's
// extension gets ErrLost too and leaves the mark and the holder. Each
// extension writes a new renewal value, which Get shows.
func checkCloneIsLost(t *testing.T, s *suite) {
	for _, c := range []struct {
		name             string
		afterClaim       bool // the clone is taken before the first extension
		cloneRenewsFirst bool
		earlier          bool // both copies extend to a mark below the stored one
	}{
		{"after an extension, original renews first", false, false, false},
		{"after an extension, clone renews first", false, true, false},
		{"after the claim, original renews first", true, false, false},
		{"after the claim, clone renews first", true, true, false},
		{"to an earlier mark, original renews first", false, false, true},
		{"to an earlier mark, clone renews first", false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := s.store(t)
			nowMs := now()
			l := MustClaim(t, st, s.req("cloned", 5, 5, nowMs))
			if !c.afterClaim {
				l = s.mustExtend(t, st, l, s.top(nowMs)+1000)
			}
			copies := []lease.Store{st, s.reopen(t, st)}
			first, second := 0, 1
			if c.cloneRenewsFirst {
				first, second = 1, 0
			}
			next := s.top(nowMs) + 2000
			if c.earlier {
				next = nowMs + 1 // below the mark: an extension that moves nothing
			}
			won, err := copies[first].Extend(ctxFor(t), l, next, s.h.LeaseFor)
			if err != nil {
				t.Fatalf("the copy whose extension lands first: %v", err)
			}
			if won.MarkMs < max(next, l.MarkMs) {
				t.Fatalf("the first copy's extension returned mark %d, below %d", won.MarkMs, max(next, l.MarkMs))
			}
			if won.Renewal == "" || won.Renewal == l.Renewal {
				t.Errorf("extension returned renewal value %q, want a new one (the lease had %q)", won.Renewal, l.Renewal)
			}
			stored := MustGet(t, st, 5)
			if stored.Renewal != won.Renewal {
				t.Errorf("Get(5).Renewal = %q, want the last extension's %q", stored.Renewal, won.Renewal)
			}
			cl := *l // the other copy's lease: as it was at the clone
			if !c.earlier {
				next = s.top(nowMs) + 3000
			}
			_, err = copies[second].Extend(ctxFor(t), &cl, next, s.h.LeaseFor)
			if !errors.Is(err, lease.ErrLost) {
				t.Fatalf("the copy whose extension lands second: %v, want ErrLost (a second process renews the same claim)", err)
			}
			if rec := MustGet(t, st, 5); rec.MarkMs != won.MarkMs || rec.Renewal != won.Renewal || rec.Token != l.Token || rec.Holder != l.Holder {
				t.Errorf("record after the refused extension = %+v, want the first copy's mark %d and renewal %q", rec, won.MarkMs, won.Renewal)
			}
			if err := copies[second].Release(ctxFor(t), &cl, l.StartMs); !errors.Is(err, lease.ErrLost) {
				t.Fatalf("Release by the copy that lost: %v, want ErrLost", err)
			}
			if rec := MustGet(t, st, 5); !rec.Held() || rec.MarkMs != won.MarkMs || rec.Token != l.Token {
				t.Errorf("record after the refused release = %+v, want still held with the first copy's mark %d", rec, won.MarkMs)
			}
			again := s.mustExtend(t, copies[first], won, s.top(nowMs)+4000)
			if again.Renewal == won.Renewal {
				t.Errorf("a second extension returned the renewal value of the first, %q", again.Renewal)
			}
			MustRelease(t, copies[first], again, again.MarkMs)
		})
	}
}

// checkCloneReleaseKeepsMark: a copy of the lease that never extended
// releases after the other copy extended: ErrLost, and the mark the other
// copy reserved — and may have issued up to — stays, as does its lease.
// (checkCloneIsLost releases after a refused extension; here the release
// is the copy's first write since the clone.)
func checkCloneReleaseKeepsMark(t *testing.T, s *suite) {
	st := s.store(t)
	nowMs := now()
	l := s.mustExtend(t, st, MustClaim(t, st, s.req("cloned", 6, 6, nowMs)), s.top(nowMs)+1000)
	clone := s.reopen(t, st)
	won := s.mustExtend(t, st, l, s.top(nowMs)+5000)
	cl := *l
	if err := clone.Release(ctxFor(t), &cl, l.StartMs); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Release by the clone after the original's extension: %v, want ErrLost", err)
	}
	if rec := MustGet(t, st, 6); !rec.Held() || rec.MarkMs != won.MarkMs {
		t.Fatalf("record after the clone's release = %+v, want held with the original's mark %d", rec, won.MarkMs)
	}
	s.mustExtend(t, st, won, s.top(nowMs)+6000)
}

// checkCloneUnknownOutcome: an extension whose write committed while its
// reply was lost (Harness.LoseReply) is not taken for a clone's: the next
// extension from the same Store value succeeds (a store that decides such
// an outcome itself, by a re-read, may already have returned the lease),
// and keeps succeeding; a copy of the lease from before the lost reply —
// a clone, which never sent that write — gets ErrLost.
func checkCloneUnknownOutcome(t *testing.T, s *suite) {
	if s.h.LoseReply == nil {
		t.Skip("leasetest: Harness.LoseReply is nil: the store's tests cannot lose a reply")
	}
	st, lose := s.h.LoseReply(t)
	nowMs := now()
	l := s.mustExtend(t, st, MustClaim(t, st, s.req("lost-reply", 3, 3, nowMs)), s.top(nowMs)+1000)
	before := *l // a clone's copy, from before the write whose reply is lost
	lose()
	nl, err := st.Extend(ctxFor(t), l, s.top(nowMs)+2000, s.h.LeaseFor)
	t.Logf("the extension whose reply was lost returned %v", err)
	switch {
	case err == nil:
		// The store re-read the record and found its own write.
		l = nl
	case errors.Is(err, lease.ErrLost), errors.Is(err, lease.ErrQuarantined), errors.Is(err, lease.ErrRestored):
		t.Fatalf("extension whose reply was lost: %v, want success or an error of unknown outcome", err)
	}
	rec := MustGet(t, st, 3)
	if rec.MarkMs != s.top(nowMs)+2000 {
		t.Fatalf("record after the extension whose reply was lost = %+v, want it committed with mark %d", rec, s.top(nowMs)+2000)
	}
	if err != nil && rec.Renewal == l.Renewal {
		t.Fatalf("the committed write left the renewal value %q the lease already had", rec.Renewal)
	}
	if _, err := s.reopen(t, st).Extend(ctxFor(t), &before, s.top(nowMs)+2500, s.h.LeaseFor); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("a copy of the lease from before the lost reply: %v, want ErrLost", err)
	}
	l = s.mustExtend(t, st, l, s.top(nowMs)+3000)
	l = s.mustExtend(t, st, l, s.top(nowMs)+4000)
	MustRelease(t, st, l, l.MarkMs)
}

// cloneView is the snowfence.LeaseView of one copy of a cloned holder: the
// grant of its last acknowledged extension, or none once fenced.
type cloneView struct {
	grant atomic.Pointer[snowfence.Grant]
}

func (v *cloneView) GrantAt(int64) (*snowfence.Grant, error) {
	if g := v.grant.Load(); g != nil {
		return g, nil
	}
	return nil, fmt.Errorf("%w: the copy's lease was lost", snowfence.ErrFenced)
}

// The copy has no schedule, clock or placements of its own, binds every
// generator and has no renewal to hasten.
func (v *cloneView) Schedule() snowfence.Schedule      { return snowfence.Schedule{} }
func (v *cloneView) Clock() snowfence.Clock            { return nil }
func (v *cloneView) Placements() []snowfence.Placement { return nil }
func (v *cloneView) Bind() error                       { return nil }
func (v *cloneView) MarkReached(*snowfence.Grant)      {}

// checkCloneMints: a holder process is cloned right after an acknowledged
// renewal, before it minted: two copies with one lease and one generator
// state, each renewing every renewEvery through its own Store value and
// minting in the same milliseconds, as the copies of a restored snapshot
// do. The IDs both mint before either renews again repeat — the window no
// store can close — but the copy whose renewal lands second gets ErrLost
// and stops, so the repeats are at most one renewal period's minting, and
// after it there are none; the other copy keeps renewing and minting.
func checkCloneMints(t *testing.T, s *suite) {
	const (
		renewEvery = 2 * time.Second
		tick       = 50 * time.Millisecond // the copies mint every tick
		perTick    = 3
		rounds     = 4
	)
	perRound := int(renewEvery/tick) * perTick // IDs one copy mints in one renewal period
	for _, cloneFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("clone renews first %v", cloneFirst), func(t *testing.T) {
			st := s.store(t)
			clk := fakeclock.New(time.UnixMilli(now()))
			reserve := s.h.LeaseFor.Milliseconds()
			l := MustClaim(t, st, s.req("cloned", 8, 8, clk.Now().WallMs))
			l = s.mustExtend(t, st, l, clk.Now().WallMs+reserve)
			type copyOf struct {
				name string
				st   lease.Store
				l    *lease.Lease
				view *cloneView
				gen  *snowfence.Generator
				lost bool
			}
			copies := []*copyOf{{name: "original", st: st}, {name: "clone", st: s.reopen(t, st)}}
			if cloneFirst {
				copies[0], copies[1] = copies[1], copies[0]
			}
			publish := func(c *copyOf) {
				c.view.grant.Store(&snowfence.Grant{Machine: c.l.Machine, Region: c.l.Region, Token: c.l.Token, StartMs: c.l.StartMs, LimitMs: c.l.MarkMs})
			}
			for _, c := range copies {
				cl := *l
				c.l, c.view = &cl, &cloneView{}
				publish(c)
				g, err := snowfence.New(snowfence.Config{Lease: c.view, Clock: clk, ClockPolicy: snowfence.ClockOff})
				if err != nil {
					t.Fatal(err)
				}
				c.gen = g
			}
			minted := map[snowfence.ID]string{}
			total := 0
			for round := range rounds {
				dups := 0
				for range int(renewEvery / tick) {
					clk.Advance(tick)
					for _, c := range copies {
						if c.lost {
							continue
						}
						ids, err := c.gen.NextN(context.Background(), perTick)
						if err != nil {
							t.Fatalf("round %d: %s: NextN: %v", round, c.name, err)
						}
						for _, id := range ids {
							if by, ok := minted[id]; ok && by != c.name {
								dups++
							}
							minted[id] = c.name
						}
					}
				}
				total += dups
				switch {
				case round == 0 && dups > perRound:
					t.Fatalf("round 0: %d IDs minted by both copies, more than one copy mints in a renewal period (%d)", dups, perRound)
				case round > 0 && dups > 0:
					t.Fatalf("round %d: %d IDs minted by both copies after the first renewal since the clone (%d in all): "+
						"both copies still renew the same claim", round, dups, total)
				}
				for _, c := range copies {
					if c.lost {
						continue
					}
					nl, err := c.st.Extend(ctxFor(t), c.l, clk.Now().WallMs+reserve, s.h.LeaseFor)
					switch {
					case errors.Is(err, lease.ErrLost):
						c.lost = true
						c.view.grant.Store(nil)
						t.Logf("round %d: %s fenced: %v", round, c.name, err)
					case err != nil:
						t.Fatalf("round %d: %s: Extend: %v", round, c.name, err)
					default:
						c.l = nl
						publish(c)
					}
				}
			}
			if !copies[1].lost || copies[0].lost {
				t.Fatalf("%s lost %v, %s lost %v: want the copy whose renewal lands second, and only it, fenced",
					copies[0].name, copies[0].lost, copies[1].name, copies[1].lost)
			}
			if total == 0 {
				t.Fatal("the copies minted no common ID before the fence: the test does not reach the clone's window")
			}
			t.Logf("%d IDs minted by both copies, all before the first renewal after the clone (at most %d)", total, perRound)
		})
	}
}
