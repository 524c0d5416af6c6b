package explore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// A clone is a copy of one running holder's process state taken at one
// instant, as a VM snapshot restored while the original runs makes it: the
// lease its keeper holds (holder, token, claim, mark, renewal value), its
// grant, its generator's position, and its clock. Its memory of the lease
// is what the lease carries (it is taken with no extension in flight) on a
// Store value of its own. It renews as its keeper would — every
// RenewEvery after the original's last renewal, Reserve ahead, its grant
// the mark minus the keeper's margin, with the keeper's self-fence — and
// mints whenever its original mints, right after it, in the same
// milliseconds.
//
// The IDs both copies mint before each has renewed once since the clone
// repeat: that window is the clone's (docs/design.md, "Cloned holders"),
// and the ledger lets those duplicates through (tolerated, counted in the
// figures). After it, the copy whose renewal landed second is fenced;
// any duplicate then is a finding. With the renewal value undone
// (snowfence_revert_clone) both copies go on renewing and minting, and the
// search finds one.
type clone struct {
	idx   int // its ledger index: cloneBase + n, never a holder's
	of    *holder
	ofGen int
	st    lease.Admin
	l     *lease.Lease
	view  cloneView
	g     *snowfence.Generator
	last  snowfence.ID
	// The keeper's timings: renew every, reserve ahead, margin below the
	// mark, self-fence.
	leaseFor, renewEvery, reserve, margin, selfFence time.Duration
	nextMs                                           int64 // wall ms (on the process's clock) of its next renewal
	// at is the original's status when it was cloned; tried says the
	// clone's renewal reached the store since (acknowledged or refused).
	at    lease.Status
	tried bool
	lost  bool
}

// cloneBase is the ledger index of the first clone.
const cloneBase = 1 << 20

// cloneView is a clone's snowfence.LeaseView.
type cloneView struct {
	grant atomic.Pointer[snowfence.Grant]
}

func (v *cloneView) GrantAt(int64) (*snowfence.Grant, error) {
	if g := v.grant.Load(); g != nil {
		return g, nil
	}
	return nil, fmt.Errorf("%w: the clone's lease was lost", snowfence.ErrFenced)
}

// The clone has no schedule, clock or placements of its own (its
// generator's Config gives them), binds every generator and has no renewal
// to hasten.
func (v *cloneView) Schedule() snowfence.Schedule      { return snowfence.Schedule{} }
func (v *cloneView) Clock() snowfence.Clock            { return nil }
func (v *cloneView) Placements() []snowfence.Placement { return nil }
func (v *cloneView) Bind() error                       { return nil }
func (v *cloneView) MarkReached(*snowfence.Grant)      {}

// origTried reports whether c's original has renewed (or lost its lease,
// or stopped) since the clone.
func (c *clone) origTried() bool {
	h := c.of
	if !h.running() || h.gen != c.ofGen {
		return true
	}
	st := h.k.Status()
	return st.LastRenewal.After(c.at.LastRenewal) || st.Losses > c.at.Losses || st.Claims > c.at.Claims
}

// windowOpen reports whether c and its original may both still mint on the
// lease they shared at the clone: one of them has not renewed since.
func (c *clone) windowOpen() bool { return !c.tried || !c.origTried() }

// cloneOne clones a running holder whose process runs one layout (a clone
// of a keeper across a cutover would need its every number).
func (w *world) cloneOne() {
	h := w.runningHolder()
	if h == nil || len(w.clones) >= 2 || strings.Contains(h.p.cfg.Schedule, ",") {
		return
	}
	w.catchUp(h.p)
	l := h.k.Lease()
	gr, err := h.k.Grant()
	if l == nil || err != nil || gr.Token != l.Token {
		return
	}
	sched, err := w.schedule(h.p.cfg.Schedule)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	st, err := w.sp.open(ctx, h.p.cfg.Store, l.Region)
	if err != nil {
		w.fail(setupMarker, "the store of a clone: %v", err)
		return
	}
	t := h.p.cfg.Timing.resolved()
	at := h.k.Status()
	c := &clone{idx: cloneBase + len(w.clones), of: h, ofGen: h.gen, st: st, l: l,
		leaseFor: t.LeaseFor, renewEvery: t.RenewEvery, reserve: t.Reserve, selfFence: gr.SelfFence, at: at,
		nextMs: at.LastRenewal.Add(t.RenewEvery).UnixMilli()}
	if gr.LimitMs != math.MaxInt64 {
		c.margin = time.Duration(l.MarkMs-gr.LimitMs) * time.Millisecond
	}
	// The generator where the original's stands: nothing below its last
	// timestamp, the same sequences from the next millisecond on.
	start := *gr
	start.StartMs = max(gr.StartMs, h.g.LastIssued())
	c.view.grant.Store(&start)
	g, err := snowfence.New(snowfence.Config{Lease: &c.view, Clock: mintClock{Clock: h.p.clk.Clock}, ClockPolicy: snowfence.ClockOff, Schedule: sched})
	if err != nil {
		st.Close()
		w.fail(setupMarker, "the generator of a clone: %v", err)
		return
	}
	c.g = g
	w.clones = append(w.clones, c)
	w.fig.add("clones", 1)
	w.log.add(w.step, "holder %d (process %d) cloned as %d: machine %d token %d mark %d renewal %.8s",
		h.idx, h.p.idx, c.idx, l.Machine, l.Token, l.MarkMs, l.Renewal)
}

// renewClones renews p's clones that are due, as their keeper would.
func (w *world) renewClones(p *proc) {
	for _, c := range w.clones {
		if c.lost || c.of.p != p || p.paused || w.failure != "" {
			continue
		}
		r := p.clk.Now()
		if r.WallMs < c.nextMs {
			continue
		}
		mark := max(r.WallMs+c.reserve.Milliseconds(), c.l.MarkMs, c.l.StartMs+1)
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		nl, err := c.st.Extend(ctx, c.l, mark, c.leaseFor)
		cancel()
		switch {
		case err == nil:
			c.l, c.tried, c.nextMs = nl, true, r.WallMs+c.renewEvery.Milliseconds()
			c.view.grant.Store(&snowfence.Grant{Machine: nl.Machine, Region: nl.Region, Token: nl.Token, StartMs: c.view.grant.Load().StartMs,
				LimitMs: nl.MarkMs - c.margin.Milliseconds(), RenewedAt: r.Mono, RenewedWallMs: r.WallMs, SelfFence: c.selfFence})
			w.log.add(w.step, "clone %d renewed: mark %d renewal %.8s", c.idx, nl.MarkMs, nl.Renewal)
			w.fig.add("clone renewals", 1)
		case errors.Is(err, lease.ErrLost), errors.Is(err, lease.ErrRestored), errors.Is(err, lease.ErrQuarantined), errors.Is(err, lease.ErrSchedule):
			c.lost, c.tried = true, true
			c.view.grant.Store(nil)
			w.log.add(w.step, "clone %d fenced: %s", c.idx, short(err))
			w.fig.add("clones fenced: "+classify(err), 1)
		default:
			c.nextMs = r.WallMs + (c.renewEvery / 4).Milliseconds()
			w.log.add(w.step, "clone %d renewal failed: %s", c.idx, short(err))
		}
	}
}

// mintClones mints n on the live clones of h, right after h did.
func (w *world) mintClones(h *holder, n int, single bool) {
	for _, c := range w.clones {
		if c.lost || c.of != h || c.ofGen != h.gen || h.p.paused || w.failure != "" {
			continue
		}
		open := c.windowOpen() // as the mint begins (mintOn)
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		var ids []snowfence.ID
		var err error
		if single {
			var id snowfence.ID
			if id, err = c.g.Next(ctx); err == nil {
				ids = []snowfence.ID{id}
			}
		} else {
			ids, err = c.g.NextN(ctx, n)
		}
		cancel()
		if err != nil {
			w.fig.add("clone mint refused: "+classify(err), 1)
			continue
		}
		by := minted{holder: c.idx, gen: 1, step: w.step, clone: true}
		if open {
			by.window = c.idx
		}
		if prev, id, dup := w.led.record(ids, by); dup {
			w.fail(duplicateMarker, "%s", w.describeDuplicate(id, by, prev))
			return
		}
		c.last = ids[len(ids)-1]
	}
}

// cloneWindow is the ledger's tolerance: a duplicate of an ID a clone
// minted in its window (with anyone: its original, or whoever holds the
// number after the original released it below what the clone minted), or
// of an ID the original minted in it with one of that clone's.
func (w *world) cloneWindow(prev, by minted) bool {
	for _, x := range []struct{ a, b minted }{{prev, by}, {by, prev}} {
		if x.a.window == 0 {
			continue
		}
		if x.a.clone || x.b.holder == x.a.window {
			return true
		}
	}
	return false
}

// windowTag is the window an ID h mints now falls in: that of a clone of h
// whose window is open, or 0.
func (w *world) windowTag(h *holder) int {
	for _, c := range w.clones {
		if c.of == h && c.ofGen == h.gen && c.windowOpen() {
			return c.idx
		}
	}
	return 0
}

// cloneOf returns the clone that minted m (m.clone), or nil.
func (w *world) cloneOf(m minted) *clone {
	if !m.clone {
		return nil
	}
	for _, c := range w.clones {
		if c.idx == m.holder {
			return c
		}
	}
	return nil
}

// closeClones stops every clone (it releases nothing: its lease runs out).
func (w *world) closeClones() {
	for _, c := range w.clones {
		c.g.Close()
		c.st.Close()
	}
	w.clones = nil
}
