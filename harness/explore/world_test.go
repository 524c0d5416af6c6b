package explore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/node"
)

// settleTimeout bounds, in real time, every wait for keepers to go back to
// sleep and every store call the test makes itself.
const settleTimeout = 30 * time.Second

// world is one seed's run.
type world struct {
	t     *testing.T
	cfg   *config
	r     *rand.Rand
	sp    space
	start time.Time
	procs []*proc
	all   []*holder
	led   *ledger
	log   actionLog
	fig   *figures
	step  int
	// stepNow is step, for the keepers' log lines.
	stepNow atomic.Int64
	// failure is set once the world found something; the run stops.
	failure string
	// snapshotAt is the step of the last snapshot (-1: none), snapshotMs
	// the latest clock of the fleet then.
	snapshotAt int
	snapshotMs int64
	// restoredAt is the step of the last restore; restores counts them.
	restoredAt, restores int
	// next holds actions queued to run before any drawn one (see
	// followRestore).
	next []func(*world)
	// trueNow is the true time passed since the start; each running
	// process's clock has seen it, or catches up before it next acts.
	trueNow   time.Duration
	maxHi     int
	regions   []int
	schedules map[string]snowfence.Schedule
	// holderNames is the holder string of each holder generation, by
	// (holder, generation), as its keeper claims under it.
	holderNames map[[2]int]string
	// genStarted is the step each holder generation started at, by
	// (holder, generation).
	genStarted map[[2]int]int
	// restoreEvents are the world's restores, for the journal oracle;
	// jr is its random source (apart from r, so that the oracle's draws
	// leave the actions' unchanged).
	restoreEvents []restoreEvent
	jr            *rand.Rand
	// reg is the state of a registry world's registry (nil in others).
	reg *registryState
	// clones are the holders cloned (clone_test.go).
	clones []*clone
}

// proc is one process: a clock, its stores, its holders.
type proc struct {
	idx     int
	cfg     procConfig
	clk     *procClock
	stores  map[int]*faultyStore // by region (one: the process's, on store cfg.Store)
	holders []*holder
	paused  bool
	cutLeft int // steps left cut off from the stores
}

// holder is one keeper+generator pair of a process.
type holder struct {
	idx  int
	p    *proc
	name string // KeeperConfig.Holder ("" for the default)
	k    *lease.Keeper
	g    *snowfence.Generator
	// node is the node when the process starts its holders through
	// node.Start (k and g are then its Keeper and Generator); svc, the
	// service in front of it (entryService).
	node *node.Node
	svc  *idService
	// extras are generators built on k after g (the action "another
	// generator on a keeper", accepted only where a revert lets New bind
	// a keeper twice); each mints whenever the holder does.
	extras  []*extraGen
	gen     int
	last    snowfence.ID
	refused string // why the product refused this holder's configuration
	// waiting says why a registry world has not started the holder yet
	// (its store is no copy of the registry, or its region needs its
	// cutover); startWaiting starts it once that is over.
	waiting string
	lastErr atomic.Pointer[string]
}

func (h *holder) running() bool { return h.k != nil }

// running counts the process's keepers whose loop is alive.
func (p *proc) running() int {
	n := 0
	for _, h := range p.holders {
		if h.running() {
			n++
		}
	}
	return n
}

// newWorld sets a world up on sp: clocks, stores, the fleet schedule.
func newWorld(t *testing.T, cfg *config, sp space, fig *figures) (*world, error) {
	w := &world{t: t, cfg: cfg, r: rand.New(rand.NewPCG(cfg.Seed, 0xac7104)), sp: sp, led: newLedger(), fig: fig,
		snapshotAt: -1, schedules: map[string]snowfence.Schedule{}, holderNames: map[[2]int]string{}, genStarted: map[[2]int]int{},
		jr: rand.New(rand.NewPCG(cfg.Seed, 0x10c4a1))}
	w.led.tolerate = w.cloneWindow
	w.start = time.Now().Truncate(time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	for i, pc := range cfg.Procs {
		p := &proc{idx: i, cfg: pc, clk: newProcClock(w.start, pc.Offset, pc.Rate), stores: map[int]*faultyStore{}}
		st, err := sp.open(ctx, pc.Store, pc.Region)
		if err != nil {
			return nil, fmt.Errorf("open the store of process %d: %w", i, err)
		}
		p.stores[pc.Region] = &faultyStore{Admin: st}
		if !slices.Contains(w.regions, pc.Region) {
			w.regions = append(w.regions, pc.Region)
		}
		w.maxHi = max(w.maxHi, pc.Range.Hi)
		if pc.V2Range != nil {
			w.maxHi = max(w.maxHi, pc.V2Range.Hi)
		}
		for j := range pc.Keepers {
			h := &holder{idx: len(w.all), p: p}
			switch pc.HolderMode {
			case holdersUnique:
				h.name = fmt.Sprintf("explore-p%d-k%d", i, j)
			case holdersShared:
				h.name = fmt.Sprintf("explore-p%d", i)
			}
			p.holders = append(p.holders, h)
			w.all = append(w.all, h)
		}
		w.procs = append(w.procs, p)
	}
	if cfg.Fleet != "" {
		text := w.scheduleText(cfg.Fleet)
		for _, region := range w.regions {
			st, err := sp.open(ctx, 0, region)
			if err != nil {
				return nil, err
			}
			fs, err := setFleet(ctx, st, text, w.start)
			st.Close()
			if err != nil {
				w.log.add(0, "fleet schedule %q not stored in region %d: %v", text, region, err)
				fig.add("fleet schedule not stored", 1)
				continue
			}
			w.log.add(0, "fleet schedule of region %d: %q version %d", region, fs.Text, fs.Version)
		}
	}
	if cfg.Registry != nil {
		if err := w.setupRegistry(ctx); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// setFleet writes the world's fleet schedule before any holder claims. A
// cutover is set as an operator would, with lease.SetSchedule, two hours
// before the world starts on the operator's clock (the notice it demands,
// lease.MinScheduleNotice, is then over before the cutover, which falls a
// few seconds into the world, where holders reach it). A fleet on v2 from
// its first claim is written with the store's compare-and-set, as
// SetSchedule refuses to move instants already past.
func setFleet(ctx context.Context, st lease.Admin, text string, start time.Time) (lease.FleetSchedule, error) {
	if text == "v2" {
		cur, err := st.FleetSchedule(ctx)
		if err != nil {
			return lease.FleetSchedule{}, err
		}
		return st.SetFleetSchedule(ctx, cur.Version, text)
	}
	return lease.SetSchedule(ctx, st, text, start.Add(-2*time.Hour), lease.MinScheduleNotice)
}

// scheduleText replaces the cutover placeholders with instants of this run.
func (w *world) scheduleText(s string) string {
	at := func(d time.Duration) string { return w.start.Add(d).UTC().Format(time.RFC3339Nano) }
	s = strings.ReplaceAll(s, "CUTOVER2", at(w.cfg.CutoverAfter+15*time.Second))
	if rc := w.cfg.Registry; rc != nil {
		s = strings.ReplaceAll(s, "PAST", at(pastCutover))
		s = strings.ReplaceAll(s, "EARLY", at(rc.EarlyAfter))
	}
	return strings.ReplaceAll(s, "CUTOVER", at(w.cfg.CutoverAfter))
}

// schedule parses a process's schedule.
func (w *world) schedule(text string) (snowfence.Schedule, error) {
	text = w.scheduleText(text)
	if s, ok := w.schedules[text]; ok {
		return s, nil
	}
	s, err := snowfence.ParseSchedule(text)
	if err == nil {
		w.schedules[text] = s
	}
	return s, err
}

// fail records the first finding and stops the world.
func (w *world) fail(marker, format string, args ...any) {
	if w.failure != "" {
		return
	}
	w.failure = fmt.Sprintf("%s: %s\n\n%s\n%s\nreproduce (in harness/): go test ./explore -run TestSearch -seed %d -store %s -v",
		marker, fmt.Sprintf(format, args...), w.cfg, &w.log, w.cfg.Seed, w.cfg.Store)
}

// settle waits until every keeper of p is asleep on its clock.
func (w *world) settle(p *proc) {
	n := p.running()
	if n == 0 || w.failure != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := p.clk.BlockUntilWaiters(ctx, n); err != nil {
		w.fail(stuckMarker, "the %d keeper(s) of process %d did not go back to sleep within %s (%d asleep): %s",
			n, p.idx, settleTimeout, p.clk.Waiters(), w.statuses(p))
		return
	}
	w.renewClones(p)
}

// stuckMarker starts the failure of a keeper that never went back to sleep.
const stuckMarker = "EXPLORE STUCK"

func (w *world) statuses(p *proc) string {
	var parts []string
	for _, h := range p.holders {
		if h.running() {
			parts = append(parts, fmt.Sprintf("holder %d: %+v", h.idx, h.k.Status()))
		}
	}
	return strings.Join(parts, "; ")
}

func (w *world) settleAll() {
	for _, p := range w.procs {
		if !p.paused {
			w.settle(p)
		}
	}
}

// startHolders starts the keepers of hs (all of one process) together, as
// one process starting does: each start runs at once. While they wait on
// the clock — a failed claim to be retried, or node.Start's wait for its
// first grant (startWait) — true time moves on for the whole world, a
// quarter of the shortest renewal period of the processes at a time
// (passStart): every process not paused sees it and its keepers renew, as
// they would while a real process starts. Failed claims are retried for
// eight quarters of p's renewal period; node.Start waits as long as a
// first grant may be ahead of the clock (grantWaitBound). The starts
// still waiting then are given up (they fail with their context).
func (w *world) startHolders(p *proc, hs []*holder) {
	type result struct {
		h   *holder
		k   *lease.Keeper
		n   *node.Node
		err error
	}
	if len(hs) > 0 && w.reg != nil && !w.reg.isCopy(p.cfg.Store) {
		// Every caller filters through startable; this catches one that
		// does not.
		w.fail(setupMarker, "the harness started %d holder(s) of process %d on %s, which holds no copy of the registry (an action bypassed startable)",
			len(hs), p.idx, storeName(p.cfg.Store))
		return
	}
	sched, err := w.schedule(p.cfg.Schedule)
	if err != nil {
		for _, h := range hs {
			h.refused = "schedule does not parse: " + err.Error()
			w.fig.add("refused: schedule", 1)
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := newStartCount() // starts blocked in node.Start's wait for the grant
	results := make(chan result, len(hs))
	for _, h := range hs {
		kc := w.keeperConfig(p, h, sched)
		go func() {
			k, n, err := w.startEntry(ctx, p, kc, sched, waiting)
			results <- result{h, k, n, err}
		}()
	}
	pending := len(hs)
	step := w.startStep(p)
	retryFor := 8 * max(p.cfg.Timing.resolved().RenewEvery/4, time.Millisecond)
	waitFor := w.grantWaitBound()
	var retried, waited time.Duration
	giveUp := false
	for pending > 0 {
		if giveUp || retried >= retryFor || waited > waitFor {
			if !giveUp {
				w.log.add(w.step, "process %d: %d start(s) given up after %s of true time (%s retrying claims, %s waiting for a first grant)",
					p.idx, pending, retried+waited, retried, waited)
				giveUp = true
			}
			// The starts still waiting fail with the context.
			cancel()
			res := <-results
			pending--
			w.started(p, res.h, res.k, res.n, res.err, sched)
			continue
		}
		bctx, bcancel := context.WithTimeout(ctx, settleTimeout)
		blocked := make(chan error, 1)
		// Each start waits on p's clock once (its claim's retry, or its
		// keeper's sleep), and once more while node.Start waits for the
		// grant on the clock (WaitUntil; counted by waiting, recounted as
		// it changes). A node.Start waiting for its keeper's claim is on
		// the keeper, not the clock: its keeper's sleep is the waiter.
		base := p.running() + pending
		go func() { blocked <- blockUntilStartWaiters(bctx, p.clk.Clock, base, waiting) }()
		select {
		case res := <-results:
			bcancel()
			<-blocked
			pending--
			w.started(p, res.h, res.k, res.n, res.err, sched)
		case err := <-blocked:
			bcancel()
			if err != nil {
				w.fail(stuckMarker, "starting %d keeper(s) of process %d: neither done nor waiting within %s", pending, p.idx, settleTimeout)
				giveUp = true
				continue
			}
			if n, _ := waiting.load(); n > 0 {
				waited += step
			} else {
				retried += step
			}
			w.passStart(p, step)
		}
	}
	if waited > 0 {
		w.log.add(w.step, "process %d started in %s of true time (node.Start waited for its first grant); every process saw it", p.idx, retried+waited)
	}
	w.settle(p)
}

// startStep is how far true time moves at a time while p starts holders:
// a quarter of the shortest renewal period of p and of the processes
// running, so that every keeper renews on time meanwhile.
func (w *world) startStep(p *proc) time.Duration {
	step := p.cfg.Timing.resolved().RenewEvery / 4
	for _, q := range w.procs {
		if q.running() > 0 && !q.paused {
			step = min(step, q.cfg.Timing.resolved().RenewEvery/4)
		}
	}
	return max(step, time.Millisecond)
}

// grantWaitBound bounds, in true time, node.Start's wait for its first
// grant: the store's notice window after the claim, after a floor a
// restore may have put ahead of the clock (a raised mark, the latest clock
// plus the longest restore window; a claimer's restore margin; a mark a
// reservation or a lease ahead), on clocks up to 8 % slow.
func (w *world) grantWaitBound() time.Duration {
	var ahead time.Duration
	for _, p := range w.procs {
		t := p.cfg.Timing.resolved()
		ahead = max(ahead, lease.RestoreWindow(max(t.Reserve, t.LeaseFor), t.SelfFence), t.RestoreMargin, t.Reserve, t.LeaseFor)
	}
	d := noticeWindow(w.cfg.Store) + ahead
	return d + d/10 + time.Second
}

// passStart lets d of true time pass while p starts holders: p's clock
// moves (startHolders waits for its keepers and starts), and every other
// process not paused sees it too and its keepers are waited for.
func (w *world) passStart(p *proc, d time.Duration) {
	w.trueNow += d
	for _, q := range w.procs {
		if q == p || !q.paused {
			w.pass(q, w.trueNow-q.clk.trueElapsed)
		}
	}
	for _, q := range w.procs {
		if q != p && !q.paused {
			w.settle(q)
		}
	}
}

// started handles the outcome of one start (StartKeeper, or node.Start
// when n is set: see startEntry).
func (w *world) started(p *proc, h *holder, k *lease.Keeper, n *node.Node, err error, sched snowfence.Schedule) {
	if err != nil {
		why := classify(err)
		if last := h.lastErr.Load(); why == "no claim" && last != nil && classify(errors.New(*last)) != "other" {
			// StartKeeper gave up; its claims failed for this reason.
			why = classify(errors.New(*last))
		}
		w.log.add(w.step, "holder %d (process %d, %s) not started: %s: %s", h.idx, p.idx, p.cfg.entry(), why, short(err))
		if why == "no free number" || why == "no claim" || why == "deadline" || why == "other" {
			w.fig.add("start: "+why, 1)
			return
		}
		h.refused = why
		w.fig.add("refused: "+why, 1)
		return
	}
	var g *snowfence.Generator
	if n != nil {
		g = n.Generator
	} else if g, err = snowfence.New(w.generatorConfig(p, k, sched)); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		k.Close(ctx, lease.UnknownIssued) // no generator
		cancel()
		h.refused = "generator: " + classify(err)
		w.fig.add("refused: "+h.refused, 1)
		w.log.add(w.step, "holder %d (process %d) refused by snowfence.New: %s", h.idx, p.idx, short(err))
		return
	}
	if p.cfg.entry() == entryService {
		svc, err := startIDService(n, sched, p.clk)
		if err != nil {
			n.Close(context.Background())
			w.fail(setupMarker, "the service of holder %d: %v", h.idx, err)
			return
		}
		h.svc = svc
	}
	h.k, h.g, h.node, h.last, h.refused = k, g, n, 0, ""
	h.gen++
	w.holderNames[[2]int{h.idx, h.gen}] = k.Status().Holder
	w.genStarted[[2]int{h.idx, h.gen}] = w.step
	w.fig.add("keepers started", 1)
	w.fig.add("keepers started: "+p.cfg.entry(), 1)
	l := k.Lease()
	if l != nil {
		w.log.add(w.step, "holder %d (process %d, holder %q, %s) started: machine %d region %d token %d start %d", h.idx, p.idx, h.name, p.cfg.entry(), l.Machine, l.Region, l.Token, l.StartMs)
	}
}

// generatorConfig is the generator configuration of a holder of p on k
// (k nil for node.Start, which fills the lease in).
func (w *world) generatorConfig(p *proc, k *lease.Keeper, sched snowfence.Schedule) snowfence.Config {
	c := snowfence.Config{Clock: mintClock{Clock: p.clk.Clock}, ClockPolicy: snowfence.ClockOff, Schedule: sched}
	if k != nil {
		c.Lease = k
	}
	return c
}

// keeperConfig is the KeeperConfig of h.
func (w *world) keeperConfig(p *proc, h *holder, sched snowfence.Schedule) lease.KeeperConfig {
	t := p.cfg.Timing
	rng := p.cfg.Range
	kc := lease.KeeperConfig{
		Store: p.stores[p.cfg.Region], Holder: h.name, Range: &rng, Region: p.cfg.Region, Clock: p.clk.Clock,
		LeaseFor: t.LeaseFor, RenewEvery: t.RenewEvery, SelfFence: t.SelfFence, Reserve: t.Reserve,
		Margin: t.Margin, MaxAhead: t.MaxAhead, RestoreMargin: t.RestoreMargin, Lead: p.cfg.Lead,
	}
	if p.cfg.V2Range != nil {
		kc.LayoutRanges = map[string]lease.Range{"v2": *p.cfg.V2Range}
	}
	kc.Logger = slog.New(&keeperLog{log: &w.log, step: &w.stepNow, holder: h.idx, lastErr: &h.lastErr})
	setKeeperSchedule(&kc, sched)
	return kc
}

// stop closes h's keeper and generators (through its node and service
// when it was started so).
func (w *world) stop(h *holder) {
	if !h.running() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if h.svc != nil {
		h.svc.close()
	}
	var err error
	if h.node != nil {
		for _, x := range h.extras {
			x.g.Close()
		}
		err = h.node.Close(ctx) // the generator, then the keeper; the store is the world's
	} else {
		// The generators first, then the keeper, told the end of the last
		// ID any of them issued (more than one only with the binding
		// undone: revert.Bind).
		h.g.Close()
		last := h.g.LastIssued()
		for _, x := range h.extras {
			x.g.Close()
			last = max(last, x.g.LastIssued())
		}
		err = h.k.Close(ctx, last)
	}
	h.k, h.g, h.node, h.svc, h.extras = nil, nil, nil, nil, nil
	if err != nil {
		w.log.add(w.step, "holder %d closed; release failed: %s", h.idx, short(err))
	}
}

// catchUp moves p's clock to true time, unless it is paused, and waits for
// its keepers.
func (w *world) catchUp(p *proc) {
	if p.paused || p.clk.trueElapsed >= w.trueNow {
		return
	}
	w.pass(p, w.trueNow-p.clk.trueElapsed)
	w.settle(p)
}

// pass lets d of true time pass on p's clock.
func (w *world) pass(p *proc, d time.Duration) {
	if s := p.clk.pass(d); s != 0 {
		w.log.add(w.step, "process %d: clock stepped %s back to true time", p.idx, s)
		w.fig.add("clock corrections", 1)
	}
}

// mint takes a batch from h (and from each generator built on its keeper
// after its own, extras) and checks it; then h's clones mint as much
// (clone_test.go).
func (w *world) mint(h *holder, n int, single bool) {
	if !h.running() || w.failure != "" {
		return
	}
	w.mintOn(h, 0, n, single)
	for i := range h.extras {
		w.mintOn(h, i+1, n, single)
	}
	w.mintClones(h, n, single) // a clone mints when its original does, refused or not
}

// mintOn takes a batch from generator extra of h (0: its own; i: extras[i-1]).
func (w *world) mintOn(h *holder, extra, n int, single bool) {
	if w.failure != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	g, last := h.g, &h.last
	if extra > 0 {
		g, last = h.extras[extra-1].g, &h.extras[extra-1].last
	}
	// A clone's window as the mint begins: the keeper renews beside the
	// mint, and a renewal that ends the window while the batch is taken
	// (the original's, which fences it) leaves its IDs minted inside it.
	window := w.windowTag(h)
	var ids []snowfence.ID
	var err error
	switch {
	case extra == 0 && h.svc != nil:
		ids, err = h.svc.mint(ctx, n, single)
	case single:
		var id snowfence.ID
		if id, err = g.Next(ctx); err == nil {
			ids = []snowfence.ID{id}
		}
	default:
		ids, err = g.NextN(ctx, n)
	}
	if err != nil {
		w.fig.add("mint refused: "+classify(err), 1)
		return
	}
	w.fig.add("batches", 1)
	for i, id := range ids {
		if id <= *last || (i > 0 && id <= ids[i-1]) {
			prev := *last
			if i > 0 {
				prev = ids[i-1]
			}
			w.fail(orderMarker, "holder %d (generator %d, extra %d) minted %d after %d", h.idx, h.gen, extra, id, prev)
			return
		}
	}
	by := minted{holder: h.idx, gen: h.gen, extra: extra, step: w.step, window: window}
	if prev, id, dup := w.led.record(ids, by); dup {
		w.fail(duplicateMarker, "%s", w.describeDuplicate(id, by, prev))
		return
	}
	*last = ids[len(ids)-1]
}

// classify names an error for the figures.
func classify(err error) string {
	known := []struct {
		err  error
		name string
	}{
		{lease.ErrNoFreeNumber, "no free number"},
		// The registry's refusals first: they may wrap ErrSchedule or
		// ErrInvalid too.
		{registry.ErrUnknownRegion, "unknown region"},
		{registry.ErrRegionRetired, "region retired"},
		{registry.ErrWrongHome, "wrong home"},
		{registry.ErrDiverged, "registry diverged"},
		{registry.ErrCopyIdentity, "copy identity"},
		{registry.ErrConflict, "registry conflict"},
		{snowfence.ErrLeaseBound, "lease bound"},
		{lease.ErrSchedule, "schedule"},
		{lease.ErrInvalid, "invalid"},
		{lease.ErrRestored, "restored"},
		{lease.ErrLost, "lost"},
		{snowfence.ErrPlacement, "placement"},
		{snowfence.ErrInvalidConfig, "generator config"},
		{snowfence.ErrFenced, "fenced"},
		{snowfence.ErrClockBackwards, "clock backwards"},
		{snowfence.ErrNoLayout, "layout"},
		{snowfence.ErrLayoutExhausted, "layout"},
		{context.DeadlineExceeded, "deadline"},
	}
	for _, k := range known {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	for _, k := range known {
		if strings.Contains(err.Error(), k.err.Error()) {
			return k.name
		}
	}
	if strings.Contains(err.Error(), "no number claimed before the context ended") {
		return "no claim"
	}
	return "other"
}

func short(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
