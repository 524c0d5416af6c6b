package explore

import (
	"context"
	"fmt"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// An action is one kind of step, with its weight in the draw.
type action struct {
	name   string
	weight func(w *world) int
	do     func(w *world)
}

// actions is every kind of step. Weights depend on the world's theme and
// state; zero means not possible now.
var actions = []action{
	{"pass everywhere", func(w *world) int { return 26 }, (*world).passAll},
	// One process seeing time first renews (and notices a restore) while
	// the others still mint on what they held.
	{"pass on one", func(w *world) int { return w.themed(themeRestore, 18, w.themed(themeCutoff, 14, 10)) }, (*world).passOne},
	{"mint on one", func(w *world) int { return 14 }, (*world).mintOne},
	{"mint on all", func(w *world) int { return w.themed(themeRestore, 30, w.themed(themeCutoff, 30, 22)) }, (*world).mintAll},
	{"step a clock", func(w *world) int { return w.unfocused(w.themed(themeRegistry, 2, 4)) }, (*world).stepClock},
	{"change a rate", func(w *world) int { return w.unfocused(1) }, (*world).changeRate},
	// A restores world keeps its holders mostly running and reachable, so
	// that two of them hold numbers when the restore comes; so does a
	// registry world, whose holders of two stores collide only while both
	// mint.
	{"pause or resume", func(w *world) int {
		return w.unfocused(w.themed(themeRestore, 2, w.themed(themeCutoff, 1, w.themed(themeRegistry, 1, 4))))
	}, (*world).pauseOrResume},
	{"lose replies", func(w *world) int { return w.unfocused(w.themed(themeRestore, 2, w.themed(themeRegistry, 1, 4))) }, (*world).loseReplies},
	// (The cut-off theme cuts a process off at each restore, for long; a
	// second process cut off too would leave none to notice it.)
	{"cut off", func(w *world) int {
		return w.unfocused(w.themed(themeCutoff, 2, w.themed(themeRestore, 1, w.themed(themeRegistry, 1, 3))))
	}, (*world).cutOff},
	// Restarts move holders to other numbers (in a mixed-schedule world,
	// onto the numbers whose IDs another schedule's holder mints).
	{"restart a process", func(w *world) int { return w.unfocused(w.themed(themeShared, 8, w.themed(themeSchedules, 6, 2))) }, (*world).restart},
	// A process started anew has no memory of the store (its revision,
	// cluster ID and marks) to notice a restore by: after one, it claims
	// numbers that running holders still issue on (followRestore queues
	// one too).
	{"restart a process afresh", func(w *world) int { return w.unfocused(w.themed(themeRestore, 2, 1)) }, (*world).restartFresh},
	{"start idle holders", func(w *world) int { return w.themed(themeRestore, 6, 3) }, (*world).startIdle},
	{"stop a holder", func(w *world) int { return w.unfocused(1) }, (*world).stopOne},
	// A cloned holder process (clone_test.go), in worlds without restores:
	// its window's duplicates are expected, and a restore's would blur
	// them.
	{"clone a holder", func(w *world) int {
		if w.cfg.Restores || len(w.clones) >= 2 {
			return 0
		}
		return w.unfocused(2)
	}, (*world).cloneOne},
	{"snapshot", func(w *world) int {
		if w.snapshotAt >= 0 || !w.cfg.Restores {
			return 0
		}
		return w.themed(themeRestore, 10, w.themed(themeCutoff, 8, 2))
	}, (*world).snapshot},
	{"restore", func(w *world) int {
		if w.snapshotAt < 0 || w.step-max(w.snapshotAt, w.restoredAt) < 3 {
			return 0
		}
		// Not at once in the restores theme: holders move on (renew,
		// restart, claim again) between the snapshot and the restore.
		return w.themed(themeRestore, 3, w.themed(themeCutoff, 8, 2))
	}, (*world).restore},
	// Every entry point: a program building a second generator on a
	// keeper (entry_test.go).
	{"another generator on a keeper", func(w *world) int { return w.unfocused(2) }, (*world).anotherGenerator},
	// A registry world's operators (registry_test.go), while holders run.
	{"operator: regions add", func(w *world) int { return w.registryActive(1) }, (*world).opRegionsAdd},
	{"operator: regions add-copy", func(w *world) int {
		switch {
		case w.reg == nil || len(w.reg.copies) == w.cfg.Registry.Stores:
			return 0
		case w.reg.joinTried:
			return 1 // refused before: now and then again
		}
		return 5
	}, (*world).opRegionsAddCopy},
	{"operator: regions retire", func(w *world) int {
		if w.reg == nil || w.reg.retiredDuring {
			return 0
		}
		return 1
	}, (*world).opRegionsRetire},
	{"operator: schedule set on one copy", func(w *world) int {
		if w.reg == nil || w.reg.setAlone || w.step < w.cfg.Steps/2 {
			return 0
		}
		return 1
	}, (*world).opScheduleSetAlone},
}

func (w *world) themed(theme string, yes, no int) int {
	if w.cfg.Theme == theme {
		return yes
	}
	return no
}

// unfocused is weight, or zero in a focused world (config.Focused), which
// keeps only time, minting, snapshots and restores.
func (w *world) unfocused(weight int) int {
	if w.cfg.Focused {
		return 0
	}
	return weight
}

// pick draws the next action.
func (w *world) pick() action {
	total := 0
	ws := make([]int, len(actions))
	for i, a := range actions {
		ws[i] = a.weight(w)
		total += ws[i]
	}
	x := w.r.IntN(total)
	for i, a := range actions {
		if x < ws[i] {
			return a
		}
		x -= ws[i]
	}
	return actions[0]
}

// duration draws a stretch of true time: milliseconds (holders meet in
// one), fractions of a second, seconds, or most of a lease.
func (w *world) duration() time.Duration {
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+w.r.IntN(hi-lo+1)) * time.Millisecond }
	switch x := w.r.Float64(); {
	case x < 0.3:
		return ms(1, 20)
	case x < 0.6:
		return ms(50, 900)
	case x < 0.92:
		return ms(1000, 5000)
	}
	return ms(5000, 40000)
}

func (w *world) anyProc() *proc { return w.procs[w.r.IntN(len(w.procs))] }

// runningHolder draws a holder whose keeper runs in an unpaused process.
func (w *world) runningHolder() *holder {
	var hs []*holder
	for _, h := range w.all {
		if h.running() && !h.p.paused {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	return hs[w.r.IntN(len(hs))]
}

func (w *world) batch(h *holder) (int, bool) {
	switch x := w.r.Float64(); {
	case x < 0.25:
		return 1, true
	case x < 0.55 && !h.p.cfg.MintBiggest:
		return 1 + w.r.IntN(1000), false
	}
	return 1000, false
}

// passAll lets true time pass, and every running process sees it, in a
// random order, each clock moved before any keeper is waited for.
func (w *world) passAll() {
	d := w.duration()
	w.trueNow += d
	w.log.add(w.step, "%s passes; every process sees it", d)
	for _, i := range w.r.Perm(len(w.procs)) {
		if p := w.procs[i]; !p.paused {
			w.pass(p, w.trueNow-p.clk.trueElapsed)
		}
	}
	w.settleAll()
}

// passOne lets true time pass and one process see it first: the others'
// clocks catch up before they next act (true time is one for all, only
// the order in which keepers notice it differs).
func (w *world) passOne() {
	p, d := w.anyProc(), w.duration()
	if p.paused {
		return
	}
	w.trueNow += d
	w.log.add(w.step, "%s passes; process %d sees it first", d, p.idx)
	w.catchUp(p)
}

func (w *world) mintOne() {
	h := w.runningHolder()
	if h == nil {
		return
	}
	w.catchUp(h.p)
	n, single := w.batch(h)
	w.log.add(w.step, "holder %d mints %d (clock %d)", h.idx, n, h.p.clk.Now().WallMs)
	w.mint(h, n, single)
	w.settle(h.p)
}

func (w *world) mintAll() {
	n, single := 1000, false
	if w.r.IntN(3) == 0 {
		n, single = 1+w.r.IntN(1000), w.r.IntN(4) == 0
	}
	w.log.add(w.step, "every holder mints %d", n)
	for _, i := range w.r.Perm(len(w.all)) {
		h := w.all[i]
		if h.running() && !h.p.paused {
			w.catchUp(h.p)
			w.mint(h, n, single)
			w.settle(h.p)
		}
	}
}

func (w *world) stepClock() {
	p := w.anyProc()
	d := time.Duration(1+w.r.IntN(200)) * time.Millisecond
	if w.r.IntN(10) == 0 && !w.cfg.Restores {
		d = time.Duration(1000+w.r.IntN(2000)) * time.Millisecond
	}
	if w.r.IntN(2) == 0 {
		d = -d
	}
	w.log.add(w.step, "process %d: wall clock steps %s", p.idx, d)
	p.clk.Step(d)
	w.settle(p)
}

func (w *world) changeRate() {
	p := w.anyProc()
	rate := 0.92 + 0.16*w.r.Float64()
	w.log.add(w.step, "process %d: clock rate %.3f", p.idx, rate)
	p.clk.SetRate(rate)
}

func (w *world) pauseOrResume() {
	p := w.anyProc()
	if !p.paused {
		w.log.add(w.step, "process %d pauses", p.idx)
		p.paused = true
		return
	}
	w.resume(p)
}

// resume ends p's pause: its clock jumps by the time it missed, and now
// and then a holder mints at once, racing its keeper's wake-up.
func (w *world) resume(p *proc) {
	p.paused = false
	w.log.add(w.step, "process %d resumes after %s", p.idx, w.trueNow-p.clk.trueElapsed)
	w.pass(p, w.trueNow-p.clk.trueElapsed)
	if w.r.IntN(2) == 0 {
		for _, h := range p.holders {
			if h.running() {
				w.mint(h, 1000, false)
				break
			}
		}
	}
	w.settle(p)
}

func (w *world) loseReplies() {
	n := 1 + w.r.IntN(3)
	if w.sp.dropReplies(n) {
		w.log.add(w.step, "the next %d write replies are dropped (after the write)", n)
		w.fig.add("replies dropped (asked)", n)
		return
	}
	p := w.anyProc()
	w.log.add(w.step, "process %d loses the next %d write replies", p.idx, n)
	p.stores[p.cfg.Region].loseReplies(n)
	w.fig.add("replies lost (asked)", n)
}

func (w *world) cutOff() { w.cutOffFor(3 + w.r.IntN(20)) }

// cutOffFor cuts a process off from its stores for steps steps.
func (w *world) cutOffFor(steps int) {
	p := w.anyProc()
	if p.cutLeft > 0 || (w.cfg.Theme == themeCutoff && w.cutOffs() > 0) {
		return
	}
	p.cutLeft = steps
	w.log.add(w.step, "process %d cut off from its store for %d steps", p.idx, p.cutLeft)
	w.fig.add("cut-offs", 1)
	for _, st := range p.stores {
		st.cutOff(true)
	}
}

// cutOffs counts the processes cut off now.
func (w *world) cutOffs() int {
	n := 0
	for _, p := range w.procs {
		if p.cutLeft > 0 {
			n++
		}
	}
	return n
}

// tickCutOffs ends the cut-offs whose steps are used up.
func (w *world) tickCutOffs() {
	for _, p := range w.procs {
		if p.cutLeft == 0 {
			continue
		}
		p.cutLeft--
		if p.cutLeft == 0 {
			w.log.add(w.step, "process %d reaches its store again", p.idx)
			for _, st := range p.stores {
				st.cutOff(false)
			}
		}
	}
}

func (w *world) restart() {
	p := w.anyProc()
	if p.paused {
		return
	}
	w.catchUp(p)
	w.log.add(w.step, "process %d restarts its %d keeper(s)", p.idx, len(p.holders))
	hs := w.stopAll(p)
	w.fig.add("restarts", 1)
	w.startHolders(p, hs)
}

// stopAll stops every holder of p, as a process stopping does, and returns
// those to start again: the ones not refused for good, and in a registry
// world only on a store holding a copy of the registry (startable).
func (w *world) stopAll(p *proc) []*holder {
	var hs []*holder
	for _, h := range p.holders {
		w.stop(h)
		if h.refused == "" || w.retryable(h) {
			hs = append(hs, h)
		}
	}
	return w.startable(p, hs)
}

// restartFresh restarts a process as a new one: its keepers close, its
// stores are closed and opened anew — a store value with no memory of the
// store's revision, cluster ID or marks, as a process started after a
// restore has — and its keepers start again on them. The process's faults
// (an outage, lost replies) carry over.
func (w *world) restartFresh() {
	p := w.anyProc()
	if p.paused {
		return
	}
	w.catchUp(p)
	w.log.add(w.step, "process %d restarts afresh (new store connections) with its %d keeper(s)", p.idx, len(p.holders))
	hs := w.stopAll(p)
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	for region, old := range p.stores {
		st, err := w.sp.open(ctx, p.cfg.Store, region)
		if err != nil {
			w.fail(setupMarker, "reopen the store of process %d, region %d: %v", p.idx, region, err)
			return
		}
		p.stores[region] = old.reopen(st)
		old.Close()
	}
	w.fig.add("fresh restarts", 1)
	w.startHolders(p, hs)
}

func (w *world) startIdle() {
	p := w.anyProc()
	if p.paused {
		return
	}
	var hs []*holder
	for _, h := range p.holders {
		if !h.running() && (h.refused == "" || w.retryable(h)) {
			hs = append(hs, h)
		}
	}
	if hs = w.startable(p, hs); len(hs) == 0 {
		return
	}
	w.catchUp(p)
	w.log.add(w.step, "process %d starts %d idle holder(s)", p.idx, len(hs))
	w.startHolders(p, hs)
}

func (w *world) stopOne() {
	h := w.runningHolder()
	if h == nil {
		return
	}
	w.log.add(w.step, "holder %d closes", h.idx)
	w.stop(h)
	w.settle(h.p)
}

func (w *world) snapshot() {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := w.sp.snapshot(ctx); err != nil {
		w.fail(setupMarker, "snapshot: %v", err)
		return
	}
	w.snapshotAt, w.snapshotMs = w.step, w.latestClock()
	w.log.add(w.step, "snapshot of the store")
	w.fig.add("snapshots", 1)
}

// setupMarker starts the failure of the test's own machinery (a store it
// could not snapshot or restore), not of the product.
const setupMarker = "EXPLORE SETUP"

func (w *world) restore() {
	// Same token with a revision bump (etcd's recommended restore, and the
	// one that used to go unnoticed) half the time.
	// In the restores theme three times in four. The bump grows with every
	// restore, so that restoring one snapshot again also keeps the
	// revision from falling.
	w.restores++
	bump := 1_000_000 * uint64(w.restores)
	how := restoreHow{bump: bump}
	switch w.r.IntN(w.themed(themeRestore, 8, 4)) {
	case 0:
		how = restoreHow{newToken: true, bump: bump}
	case 1:
		how = restoreHow{newToken: w.r.IntN(2) == 0}
	}
	if w.cfg.Theme == themeCutoff && (w.cfg.Focused || w.r.IntN(8) != 0) {
		// A holder cut off while the others notice the restore, for long
		// enough that it issues until its self-fence.
		w.cutOffFor(10 + w.r.IntN(30))
	}
	// The journal before the restore takes the claims since the snapshot
	// away: every ID must be in it now.
	w.checkJournal(fmt.Sprintf("before the restore of step %d", w.step))
	ctx, cancel := context.WithTimeout(context.Background(), 2*settleTimeout)
	defer cancel()
	detectable, err := w.sp.restore(ctx, how)
	if err != nil {
		w.fail(setupMarker, "restore: %v", err)
		return
	}
	kind := fmt.Sprintf("restore (%s) of the snapshot of step %d", w.cfg.Store, w.snapshotAt)
	w.restoredAt = w.step
	w.restoreEvents = append(w.restoreEvents, restoreEvent{snapshot: w.snapshotAt, snapshotMs: w.snapshotMs, at: w.step, beforeMs: w.raiseMark()})
	// A restores or cut-off world restores the snapshot taken before the first claim
	// again and again: each time every number is free in the store while
	// the holders that claimed since still mint. (On etcd, a snapshot taken
	// while holders hold numbers brings back their etcd leases, which run
	// out on the server's real clock only, long after the world is over,
	// and the range fills up.)
	if (w.cfg.Theme != themeRestore && w.cfg.Theme != themeCutoff) || w.snapshotAt != 0 || !w.cfg.SnapshotFirst {
		w.snapshotAt = -1
	}
	if w.cfg.Store == storeEtcd {
		kind = fmt.Sprintf("etcd restore (%s)", how)
	}
	w.fig.add("restores", 1)
	operator := !detectable || (!w.cfg.Focused && w.r.IntN(w.themed(themeRestore, 16, w.themed(themeCutoff, 8, 4))) == 0)
	w.log.add(w.step, "%s; detectable by the store: %v; operator step follows: %v", kind, detectable, operator)
	if operator {
		w.raiseMarks(ctx)
	}
	if (w.cfg.Theme == themeRestore || w.cfg.Theme == themeCutoff) && (w.cfg.Focused || w.r.IntN(4) != 0) {
		w.followRestore()
	}
}

// followRestore queues, after a restore, short passes of time each followed
// by a mint on every holder: whichever keeper renews first and claims a
// number anew, every holder mints in the milliseconds that follow, while
// the others (cut off, or not yet due to renew) may still hold the number
// they had. Two holders collide only in one millisecond; drawn at random,
// a mint on all rarely falls inside that window.
func (w *world) followRestore() {
	if w.r.IntN(2) == 0 {
		// A process started at once after the restore: it cannot notice
		// it, and may claim what a running holder still issues on.
		w.next = append(w.next, (*world).restartFresh, func(w *world) { w.mintAll() })
	}
	for range 4 + w.r.IntN(12) {
		w.next = append(w.next, func(w *world) {
			d := time.Duration(300+w.r.IntN(2200)) * time.Millisecond
			w.trueNow += d
			w.log.add(w.step, "%s passes; every process sees it (after the restore)", d)
			for _, i := range w.r.Perm(len(w.procs)) {
				if p := w.procs[i]; !p.paused {
					w.pass(p, w.trueNow-p.clk.trueElapsed)
				}
			}
			w.settleAll()
		}, func(w *world) { w.mintAll() })
	}
}

// raiseMarks is the runbook's operator step after a restore, run before any
// holder talks to the store again: every mark of every range in use is
// raised past anything any holder may still issue, the latest clock of the
// fleet plus the longest restore window of any holder, counting the lease
// itself as a reservation (a table's claim writes its mark LeaseFor
// ahead) — what snowfence leases raise-marks requires of --to.
func (w *world) raiseMarks(ctx context.Context) {
	mark := w.raiseMark()
	for _, region := range w.regions {
		st, err := w.sp.open(ctx, 0, region)
		if err != nil {
			w.fail(setupMarker, "operator store for region %d: %v", region, err)
			return
		}
		n, err := raiseWithRetry(ctx, st, region, lease.Range{Lo: 0, Hi: w.maxHi}, mark)
		st.Close()
		if err != nil {
			w.fail(setupMarker, "RaiseMarks in region %d: %v", region, err)
			return
		}
		w.log.add(w.step, "operator: RaiseMarks region %d 0-%d to %d: %d changed", region, w.maxHi, mark, n)
	}
	w.fig.add("operator raise-marks", 1)
}

// raiseMark is the mark raiseMarks raises to now: the latest clock of the
// fleet plus the longest restore window of any holder.
func (w *world) raiseMark() int64 {
	var longest time.Duration
	for _, p := range w.procs {
		t := p.cfg.Timing.resolved()
		longest = max(longest, lease.RestoreWindow(max(t.Reserve, t.LeaseFor), t.SelfFence))
	}
	return w.latestClock() + longest.Milliseconds()
}

// latestClock is the latest wall clock of the fleet, in Unix ms.
func (w *world) latestClock() int64 {
	var latest int64
	for _, p := range w.procs {
		// A clock not caught up yet reads this much more once it is.
		latest = max(latest, p.clk.Now().WallMs+(w.trueNow-p.clk.trueElapsed).Milliseconds())
	}
	return latest
}

// raiseWithRetry runs lease.RaiseAllMarks over the keyspaces of both layout
// steps a world's schedules have until it succeeds (a store just restored
// may refuse the first calls while it reconnects), bounded by ctx.
func raiseWithRetry(ctx context.Context, st lease.Admin, region int, r lease.Range, mark int64) (int, error) {
	for {
		n, err := lease.RaiseAllMarks(ctx, st, region, 2, r, mark)
		if err == nil || ctx.Err() != nil {
			return n, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
