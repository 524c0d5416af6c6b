package explore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// A registry world (theme registry) runs two or three independent stores
// of its kind and the region registry kept across them, written with
// package lease's own functions the way snowfence regions and snowfence
// schedule set write it, and sends holders to them as operators might: to
// their region's home mostly, to another region's store, in a region
// retired or never added, on their own store's fleet schedule record when
// it differs from the registry's. The IDs of every store are one ID
// space: the ledger checks them all against each other.

// registryConfig is a registry world's stores and registry.
type registryConfig struct {
	// Stores is how many independent stores the world has (2 or 3),
	// named store-a, store-b, store-c (storeName); the copies of the
	// registry are named after them.
	Stores int
	// Copies are the stores that hold a copy of the registry when it is
	// created (store 0 always); the others (late stores) have none until
	// an operator joins them (regions add-copy, an action).
	Copies []int
	// Schedule is the registry's fleet schedule: every copy's record when
	// the registry is created, which records it.
	Schedule string
	// Records are the stores' fleet schedule records when the world
	// starts: a late store's its own; a copy's differs from Schedule when
	// a schedule set on that one store (lease.SetSchedule) followed the
	// registry's creation.
	Records []string
	// Homes are the home stores of regions 0, 1 and 2 (regionName), added
	// in that order (regions add, the first with --create).
	Homes []int
	// Retired: region 2 is retired before the world starts.
	Retired bool
	// EarlyAfter is when the EARLY cutover falls after the start.
	EarlyAfter time.Duration
}

// pastCutover is when the PAST cutover falls, from the start: long enough
// before it that every holder starts on v2, and late enough that a store's
// record can be set to it with lease.SetSchedule's hour of notice on the
// setup's operator clock (two hours before the start).
const pastCutover = -30 * time.Minute

// storeName names store i of a world: the name of its registry copy, and
// a region's home.
func storeName(i int) string { return "store-" + string(rune('a'+i)) }

// regionName is the name of the region an operator adds as number n (the
// registry gives the lowest number never used, so the n-th region added is
// number n).
func regionName(n int) string { return fmt.Sprintf("r%d", n) }

func (rc *registryConfig) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  registry of %d stores: copies %v, schedule %q, early cutover at start+%s, region 2 retired %v\n", rc.Stores, names(rc.Copies), rc.Schedule, rc.EarlyAfter, rc.Retired)
	for i, rec := range rc.Records {
		fmt.Fprintf(&b, "    %s: fleet schedule record %q\n", storeName(i), rec)
	}
	for n, h := range rc.Homes {
		fmt.Fprintf(&b, "    region %d (%s): home %s\n", n, regionName(n), storeName(h))
	}
	return b.String()
}

func names(stores []int) []string {
	out := make([]string, len(stores))
	for i, s := range stores {
		out[i] = storeName(s)
	}
	return out
}

// drawRegistry makes c a registry world: its stores and registry, and
// processes in regions 0 to 2 (now and then 3, the next to be added, or 5
// to 7, never added) on their region's home store mostly, else another.
// Two paths to a duplicate are drawn in on purpose:
//
//   - one region leased in two stores: a holder of region r on a store
//     that is not r's home beside one on r's home, both minting v2 IDs of
//     region r on numbers each store hands out on its own;
//   - two schedules: a store whose record puts v2 in force earlier (PAST,
//     EARLY) than the registry's (CUTOVER), or later, with holders of
//     region r on it minting v2 while region 0's holders on another store
//     still mint v1 on numbers 128r and 128r+1, whose low 22 bits are v2
//     region r's numbers 0 to 7.
//
// No restores: the registry's copies would be taken back with the leases
// (not searched here).
func drawRegistry(c *config, r *rand.Rand) {
	chance := func(p float64) bool { return r.Float64() < p }
	c.Restores, c.SnapshotFirst, c.Focused, c.Fleet = false, false, false, ""
	rc := &registryConfig{Stores: 2 + r.IntN(2), EarlyAfter: time.Duration(1000+r.IntN(3000)) * time.Millisecond}
	c.Registry = rc
	c.CutoverAfter = time.Duration(6000+r.IntN(24000)) * time.Millisecond
	for i := range rc.Stores {
		rc.Copies = append(rc.Copies, i)
	}
	late := -1
	if chance(0.5) {
		late = rc.Stores - 1
		rc.Copies = rc.Copies[:late]
	}
	rc.Schedule = "v1,v2@CUTOVER"
	if chance(0.25) {
		rc.Schedule = "v1,v2@PAST"
	}
	for range rc.Stores {
		rc.Records = append(rc.Records, rc.Schedule)
	}
	if chance(0.65) {
		d := r.IntN(rc.Stores)
		if late >= 0 && chance(0.6) {
			d = late
		}
		switch {
		case rc.Schedule == "v1,v2@PAST":
			rc.Records[d] = "v1,v2@CUTOVER"
		case chance(0.6):
			rc.Records[d] = "v1,v2@PAST"
		default:
			rc.Records[d] = "v1,v2@EARLY"
		}
	}
	perm := r.Perm(len(rc.Copies))
	for n := range 3 {
		home := rc.Copies[0] // region 0's home is store-a, the first copy
		if n > 0 {
			home = rc.Copies[perm[n%len(perm)]]
		}
		rc.Homes = append(rc.Homes, home)
	}
	rc.Retired = chance(0.25)

	// Timings the keeper takes (the search of timings is the other
	// themes'): its defaults, or a serving holder's long ones.
	fleetTiming := timing{}
	if chance(0.3) {
		fleetTiming = timing{LeaseFor: 30 * time.Second, RenewEvery: 5 * time.Second, SelfFence: 20 * time.Second}
	}
	v2Ranges := []lease.Range{{Lo: 0, Hi: 1}, {Lo: 0, Hi: 3}}
	c.Procs = nil
	total := 0
	for range 2 + r.IntN(3) {
		p := procConfig{Rate: 1, Keepers: 1 + r.IntN(2), Timing: fleetTiming, MintBiggest: chance(0.6), Entry: drawEntry(r)}
		// Clocks mostly in step: holders of two stores collide only in
		// one millisecond.
		if chance(0.05) {
			p.Offset = time.Duration(r.IntN(101)-50) * time.Millisecond
		}
		if chance(0.05) {
			p.Rate = 0.92 + 0.16*r.Float64()
		}
		p.HolderMode = []string{holdersUnique, holdersShared, holdersDefault}[r.IntN(3)]
		switch x := r.Float64(); {
		case x < 0.72:
			p.Region = r.IntN(3)
		case x < 0.87:
			p.Region = 3 // unknown until an operator adds a fourth region
		default:
			p.Region = 5 + r.IntN(3) // never added
		}
		home := rc.Copies[r.IntN(len(rc.Copies))]
		switch {
		case p.Region < 3:
			home = rc.Homes[p.Region]
		case p.Region == 3 && late >= 0:
			home = late // regions add-copy, then regions add r3 --home it
		}
		p.Store = home
		if chance(0.4) {
			p.Store = r.IntN(rc.Stores)
		}
		v2 := v2Ranges[r.IntN(len(v2Ranges))]
		p.V2Range, p.Range = &v2, v2
		p.Schedule = rc.Records[p.Store]
		if chance(0.15) {
			p.Schedule = rc.Schedule
		}
		total += p.Keepers
		if total > 8 {
			break
		}
		c.Procs = append(c.Procs, p)
	}
	// v1 ranges of region 0: numbers 128t and 128t+1, t the region of a
	// process on a schedule whose v2 comes earlier (its v2 numbers 0 to 7
	// of region t have the same low bits), else 0 or 1.
	for i := range c.Procs {
		p := &c.Procs[i]
		if p.Region != 0 {
			continue
		}
		var ts []int
		for _, q := range c.Procs {
			if cutoverRank(q.Schedule) < cutoverRank(p.Schedule) {
				ts = append(ts, q.Region)
			}
		}
		t := r.IntN(2)
		if len(ts) > 0 && chance(0.85) {
			t = ts[r.IntN(len(ts))]
		}
		p.Range = lease.Range{Lo: 128 * t, Hi: 128*t + 1}
	}
	if len(c.Procs) >= 2 && chance(0.7) {
		attack(c, r)
	}
}

// attack makes the first two processes of a registry world one of its two
// paths to a duplicate, with clocks in step (two holders collide only in
// one millisecond):
//
//   - one region in two stores: the second in the first's region on
//     another store, both with two keepers on v2 numbers 0-1, so that both
//     stores hand out both numbers;
//   - two schedules, when a store's record differs from the registry's:
//     one keeper of region t (1 or 2) on v2 number 0, on the store whose
//     v2 comes first, and one of region 0 on v1 number 128t (whose first
//     1024 IDs of a millisecond have v2 region t number 0's bits) on a
//     store whose v2 comes later.
func attack(c *config, r *rand.Rand) {
	rc := c.Registry
	a, b := &c.Procs[0], &c.Procs[1]
	a.Offset, b.Offset, a.Rate, b.Rate = 0, 0, 1, 1
	other := func(s int) int { return (s + 1 + r.IntN(rc.Stores-1)) % rc.Stores }
	d := diverging(rc)
	if d < 0 || r.IntN(2) == 0 {
		b.Region, b.Store = a.Region, other(a.Store)
		b.Schedule = rc.Records[b.Store]
		for _, p := range []*procConfig{a, b} {
			v2 := lease.Range{Lo: 0, Hi: 1}
			p.Keepers, p.V2Range = 2, &v2
			if p.Region != 0 {
				p.Range = v2
			}
		}
	} else {
		early, late := d, other(d)
		if cutoverRank(rc.Records[d]) > cutoverRank(rc.Schedule) {
			early, late = late, d
		}
		t := 1 + r.IntN(2)
		v2 := lease.Range{Lo: 0, Hi: 0}
		*a = procConfig{Rate: 1, Keepers: 1, Timing: a.Timing, HolderMode: a.HolderMode, Entry: a.Entry, MintBiggest: true,
			Region: t, Store: early, Schedule: rc.Records[early], Range: v2, V2Range: &v2}
		v2b := lease.Range{Lo: 0, Hi: 3}
		*b = procConfig{Rate: 1, Keepers: 1, Timing: b.Timing, HolderMode: b.HolderMode, Entry: b.Entry, MintBiggest: true,
			Region: 0, Store: late, Schedule: rc.Records[late], Range: lease.Range{Lo: 128 * t, Hi: 128 * t}, V2Range: &v2b}
	}
	total := 0
	for i, p := range c.Procs {
		if total += p.Keepers; total > 8 {
			c.Procs = c.Procs[:i]
			break
		}
	}
}

// diverging returns a store whose record differs from the registry's, or
// -1.
func diverging(rc *registryConfig) int {
	for i, rec := range rc.Records {
		if rec != rc.Schedule {
			return i
		}
	}
	return -1
}

// cutoverRank orders a registry world's schedules by when v2 comes in.
func cutoverRank(s string) int {
	switch {
	case strings.Contains(s, "PAST"):
		return 0
	case strings.Contains(s, "EARLY"):
		return 1
	}
	return 2
}

// registryState is what a registry world's operators have done so far.
type registryState struct {
	// copies are the stores holding a copy of the registry now, in name
	// order.
	copies []int
	// added counts the regions added; retired lists those retired.
	added   int
	retired []int
	// setAlone: a copy's record was set alone during the world (once at
	// most: the copy's holders are refused from then on); retiredDuring: a
	// region was retired during the world (once at most, so that regions
	// stay in service).
	setAlone, retiredDuring bool
	// joinTried: an operator has run regions add-copy.
	joinTried bool
}

func (s *registryState) isCopy(store int) bool { return slices.Contains(s.copies, store) }

// setupRegistry makes a registry world's stores and registry before any
// holder starts, on an operator clock two hours before the start (as
// setFleet does): every store's fleet schedule record (the registry's on
// the copies), the registry created with regions 0 to 2 at their homes
// (snowfence regions add r0 --create --home …, then add r1, add r2),
// region 2 retired if drawn, and a schedule set on one copy alone where
// that copy's record is drawn to differ. The last is an attack: a
// refusal by the product is logged and counted, and the world goes on.
func (w *world) setupRegistry(ctx context.Context) error {
	rc := w.cfg.Registry
	w.reg = &registryState{copies: slices.Clone(rc.Copies)}
	op := w.start.Add(-2 * time.Hour)
	for i := range rc.Stores {
		text := rc.Schedule
		if !w.reg.isCopy(i) {
			text = rc.Records[i]
		}
		if err := w.setRecord(ctx, i, text, op); err != nil {
			return fmt.Errorf("the fleet schedule record of %s: %w", storeName(i), err)
		}
	}
	for n, home := range rc.Homes {
		if err := w.regionsAdd(ctx, home, op, n == 0); err != nil {
			return fmt.Errorf("regions add %s --home %s: %w", regionName(n), storeName(home), err)
		}
	}
	if rc.Retired {
		if err := w.regionsRetire(ctx, 2, op); err != nil {
			return fmt.Errorf("regions retire %s: %w", regionName(2), err)
		}
	}
	for _, i := range rc.Copies {
		if rc.Records[i] == rc.Schedule {
			continue
		}
		err := w.setRecord(ctx, i, rc.Records[i], op.Add(time.Minute))
		w.operatorOutcome("schedule set on one copy (before the start)", fmt.Sprintf("%s to %q", storeName(i), w.scheduleText(rc.Records[i])), err)
	}
	return nil
}

// operatorOutcome logs and counts an operator's command: done, or refused
// by the product (which, for the attacks, is the outcome wanted).
func (w *world) operatorOutcome(what, detail string, err error) {
	if err != nil {
		w.fig.add("operator refused: "+what+": "+classify(err), 1)
		w.log.add(w.step, "operator: %s %s refused: %s", what, detail, short(err))
		return
	}
	w.fig.add("operator: "+what, 1)
	w.log.add(w.step, "operator: %s %s", what, detail)
}

// operatorStores opens the stores of an operator's command, on store
// objects of its own (at region 0: a store's registry copy and fleet
// record are the store's, whatever the region), and returns them with a
// function that closes them.
func (w *world) operatorStores(ctx context.Context, stores []int) ([]lease.Admin, func(), error) {
	var sts []lease.Admin
	closeAll := func() {
		for _, st := range sts {
			st.Close()
		}
	}
	for _, i := range stores {
		st, err := w.sp.open(ctx, i, 0)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		sts = append(sts, st)
	}
	return sts, closeAll, nil
}

// setRecord sets store i's fleet schedule record alone, as snowfence
// schedule set naming that one store does with no registry to keep:
// lease.SetSchedule on the operator's clock now with the minimum notice.
func (w *world) setRecord(ctx context.Context, i int, text string, now time.Time) error {
	sts, closeAll, err := w.operatorStores(ctx, []int{i})
	if err != nil {
		return err
	}
	defer closeAll()
	_, err = lease.SetSchedule(ctx, sts[0], w.scheduleText(text), now, lease.MinScheduleNotice)
	return err
}

// registryCopies names the stores as the copies of a command.
func registryCopies(stores []int, sts []lease.Admin) []registry.Copy {
	cs := make([]registry.Copy, len(stores))
	for i, s := range stores {
		cs[i] = registry.Copy{Name: storeName(s), Store: sts[i]}
	}
	return cs
}

// regionsAdd is snowfence regions add <next name> --home <home> [--create]
// with every copy named, as cmd/snowfence/regions.go runs it: the region
// numbers of the last layout of the first copy's fleet record, and the
// change lease.AddRegionHome makes (the one the command makes).
// A home that is no copy yet is named with --copy beside the copies, as
// the command needs every --home among the copies given.
func (w *world) regionsAdd(ctx context.Context, home int, now time.Time, create bool) error {
	stores := slices.Clone(w.reg.copies)
	if !slices.Contains(stores, home) {
		stores = append(stores, home)
	}
	sts, closeAll, err := w.operatorStores(ctx, stores)
	if err != nil {
		return err
	}
	defer closeAll()
	fleet, err := sts[0].FleetSchedule(ctx)
	if err != nil {
		return err
	}
	sched, err := snowfence.ParseSchedule(fleet.Text)
	if err != nil {
		return err
	}
	steps := sched.Steps()
	last := steps[len(steps)-1].Layout
	if last.RegionBits == 0 {
		return fmt.Errorf("%w: the fleet schedule's last layout, %s, has no region bits", lease.ErrInvalid, last.Name)
	}
	cs := make([]lease.FleetCopy, len(stores))
	for i, st := range stores {
		cs[i] = lease.FleetCopy{Name: storeName(st), Store: sts[i]}
	}
	if _, err := lease.AddRegionHome(ctx, cs, regionName(w.reg.added), storeName(home), create, now.UnixMilli(), 1<<last.RegionBits); err != nil {
		return err
	}
	w.reg.added++
	return nil
}

// regionsRetire is snowfence regions retire r<n> --yes with every copy.
func (w *world) regionsRetire(ctx context.Context, n int, now time.Time) error {
	sts, closeAll, err := w.operatorStores(ctx, w.reg.copies)
	if err != nil {
		return err
	}
	defer closeAll()
	record, err := storesSchedule(ctx, sts)
	if err != nil {
		return err
	}
	_, err = registry.Update(ctx, registryCopies(w.reg.copies, sts), func(reg registry.Registry) (registry.Registry, error) {
		next, _, err := reg.WithRetired(regionName(n), now.UnixMilli())
		if err != nil {
			return next, err
		}
		return record(next)
	})
	if err == nil {
		w.reg.retired = append(w.reg.retired, n)
	}
	return err
}

// regionsAddCopy is snowfence regions add-copy <store> with every copy:
// lease.JoinRegistry.
func (w *world) regionsAddCopy(ctx context.Context, joining int) error {
	stores := append(slices.Clone(w.reg.copies), joining)
	sts, closeAll, err := w.operatorStores(ctx, stores)
	if err != nil {
		return err
	}
	defer closeAll()
	cs := make([]lease.FleetCopy, len(stores))
	for i, s := range stores {
		cs[i] = lease.FleetCopy{Name: storeName(s), Store: sts[i]}
	}
	if _, err := lease.JoinRegistry(ctx, cs[:len(cs)-1], cs[len(cs)-1]); err != nil {
		return err
	}
	w.reg.copies = append(w.reg.copies, joining)
	slices.Sort(w.reg.copies)
	return nil
}

// storesSchedule is what snowfence regions add and retire apply to the
// registry they make (lease.RecordStoresSchedule), over the copies' stores.
func storesSchedule(ctx context.Context, sts []lease.Admin) (func(registry.Registry) (registry.Registry, error), error) {
	cs := make([]lease.FleetCopy, len(sts))
	for i, st := range sts {
		cs[i] = lease.FleetCopy{Name: fmt.Sprintf("copy-%d", i+1), Store: st}
	}
	return lease.RecordStoresSchedule(ctx, cs)
}

// registryActive is weight in a registry world, else zero.
func (w *world) registryActive(weight int) int {
	if w.reg == nil {
		return 0
	}
	return weight
}

// operatorNow is the operator's clock during the world: the latest clock
// of the fleet.
func (w *world) operatorNow() time.Time { return time.UnixMilli(w.latestClock()) }

// maxAdded bounds the regions a registry world's operators add: numbers 5
// to 7 stay never added, for the processes drawn in them.
const maxAdded = 5

// opRegionsAdd adds the next region (number w.reg.added) with a home: the
// store of a process of that region now and then (so that one of them is
// at home and any other is not), a store that joined late, a late store
// that has not joined (the command is then refused: the home must be a
// copy), or any copy.
func (w *world) opRegionsAdd() {
	n := w.reg.added
	if n >= maxAdded {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	var cands []int
	for _, p := range w.procs {
		if p.cfg.Region == n {
			cands = append(cands, p.cfg.Store)
		}
	}
	for i := range w.cfg.Registry.Stores {
		if !slices.Contains(w.cfg.Registry.Copies, i) {
			cands = append(cands, i) // a late store, joined or not
		}
	}
	home := w.reg.copies[w.r.IntN(len(w.reg.copies))]
	if len(cands) > 0 && w.r.IntN(4) != 0 {
		home = cands[w.r.IntN(len(cands))]
	}
	err := w.regionsAdd(ctx, home, w.operatorNow(), false)
	w.operatorOutcome("regions add", fmt.Sprintf("%s --home %s", regionName(n), storeName(home)), err)
	w.startWaiting()
}

// opRegionsAddCopy joins a late store (regions add-copy), and then, most
// times, adds a region at home there (regions add r<n> --home it), as an
// operator bringing a new region's store in does. The late store's record
// may differ from the registry's.
func (w *world) opRegionsAddCopy() {
	var late []int
	for i := range w.cfg.Registry.Stores {
		if !w.reg.isCopy(i) {
			late = append(late, i)
		}
	}
	if len(late) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	s := late[w.r.IntN(len(late))]
	w.reg.joinTried = true
	err := w.regionsAddCopy(ctx, s)
	w.operatorOutcome("regions add-copy", storeName(s), err)
	if n := w.reg.added; n < maxAdded && w.r.IntN(10) < 7 {
		err := w.regionsAdd(ctx, s, w.operatorNow(), false)
		w.operatorOutcome("regions add", fmt.Sprintf("%s --home %s", regionName(n), storeName(s)), err)
	}
	w.startWaiting()
}

// opRegionsRetire retires a region in service other than region 0 (once in
// a world).
func (w *world) opRegionsRetire() {
	var cands []int
	for n := 1; n < w.reg.added; n++ {
		if !slices.Contains(w.reg.retired, n) {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	n := cands[w.r.IntN(len(cands))]
	err := w.regionsRetire(ctx, n, w.operatorNow())
	w.reg.retiredDuring = true
	w.operatorOutcome("regions retire", regionName(n), err)
}

// opScheduleSetAlone sets one copy's fleet record alone (lease.SetSchedule
// on that store, not snowfence schedule set over every copy), on the
// operator's clock now: two more steps appended to the registry's
// schedule, back to v1 an hour and more away (the notice SetSchedule
// demands) and to v2 a minute later (so that the last layout, which
// regions add numbers regions for, keeps its region bits). Within a world
// those instants are never reached; the store's record and its copy of the
// registry differ from then on, and new holders there are refused: so it
// is drawn once at most, in the second half of the world.
func (w *world) opScheduleSetAlone() {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	s := w.reg.copies[w.r.IntN(len(w.reg.copies))]
	now := w.operatorNow()
	at := now.Add(lease.MinScheduleNotice + time.Duration(1+w.r.IntN(60))*time.Minute).Truncate(time.Second)
	text := w.cfg.Registry.Schedule + ",v1@" + at.UTC().Format(time.RFC3339) + ",v2@" + at.Add(time.Minute).UTC().Format(time.RFC3339)
	err := w.setRecord(ctx, s, text, now)
	w.reg.setAlone = true
	w.operatorOutcome("schedule set on one copy", fmt.Sprintf("%s to %q", storeName(s), w.scheduleText(text)), err)
}

// startable returns the holders of hs a world may start now, and marks
// the others waiting: in a registry world a holder starts only on a store
// that holds a copy of the registry (a store outside the registry is
// another fleet, whose IDs no check of this one can keep apart), and a
// holder of a region other than 0 only once its schedule has v2 in force
// on its clock (under v1 the keeper refuses it, as it should).
func (w *world) startable(p *proc, hs []*holder) []*holder {
	if w.reg == nil {
		return hs
	}
	why := ""
	switch {
	case !w.reg.isCopy(p.cfg.Store):
		why = "its store holds no copy of the registry"
	case p.cfg.Region != 0:
		if sched, err := w.schedule(p.cfg.Schedule); err == nil && sched.LayoutAt(time.UnixMilli(p.clk.Now().WallMs)).RegionBits == 0 {
			why = "its region waits for v2"
		}
	}
	if why == "" {
		for _, h := range hs {
			h.waiting = ""
		}
		return hs
	}
	for _, h := range hs {
		if h.waiting == "" {
			w.fig.add("registry: holders waiting", 1)
		}
		h.waiting = why
	}
	return nil
}

// startWaiting starts, in a registry world, the holders waiting (see
// startable) whose reason is over.
func (w *world) startWaiting() {
	if w.reg == nil || w.failure != "" {
		return
	}
	for _, p := range w.procs {
		if p.paused {
			continue
		}
		var hs []*holder
		for _, h := range p.holders {
			if h.waiting != "" && !h.running() {
				hs = append(hs, h)
			}
		}
		if len(hs) == 0 {
			continue
		}
		if hs = w.startable(p, hs); len(hs) > 0 {
			w.catchUp(p)
			w.log.add(w.step, "process %d starts %d holder(s) that waited", p.idx, len(hs))
			w.startHolders(p, hs)
		}
	}
}

// retryable reports whether a registry world may start h again although
// the product refused it: its refusal depends on the registry or the
// schedules, which operators change (a region added, a copy joined).
func (w *world) retryable(h *holder) bool {
	if w.reg == nil {
		return false
	}
	switch h.refused {
	case "unknown region", "region retired", "wrong home", "schedule", "registry diverged", "copy identity", "registry conflict", "placement":
		return true
	}
	return false
}
