package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
	"github.com/snowfence/snowfence/zkstore"
)

// Themes bias a world's draws towards one region of the space (see the
// package doc). Every theme can still draw every choice.
const (
	themeAny       = "any"
	themeRegions   = "regions"
	themeShared    = "shared-holders"
	themeRestore   = "restores"
	themeCutoff    = "cut-off"
	themeSchedules = "schedules"
	themeCutovers  = "cutovers"
	themeRegistry  = "registry"
)

var themes = []string{themeAny, themeRegions, themeShared, themeRestore, themeCutoff, themeSchedules, themeCutovers, themeRegistry}

// Entry points: how a process starts its holders (see entry_test.go).
const (
	entryKeeper  = "keeper"  // lease.StartKeeper, then snowfence.New
	entryNode    = "node"    // node.Start with Config.Store
	entryService = "service" // node.Start, and package server's handler in front (minting over HTTP)
)

// timing is one process's keeper timings; zero fields take the keeper's
// defaults.
type timing struct {
	LeaseFor, RenewEvery, SelfFence, Reserve, Margin, MaxAhead, RestoreMargin time.Duration
}

func (t timing) String() string {
	f := func(d time.Duration) string {
		if d == 0 {
			return "default"
		}
		return d.String()
	}
	return fmt.Sprintf("lease %s renew %s self-fence %s reserve %s margin %s max-ahead %s restore-margin %s",
		f(t.LeaseFor), f(t.RenewEvery), f(t.SelfFence), f(t.Reserve), f(t.Margin), f(t.MaxAhead), f(t.RestoreMargin))
}

// resolved returns the timings with the keeper's defaults filled in (for
// the operator's margin; the keeper itself gets the zero values).
func (t timing) resolved() timing {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&t.LeaseFor, 10*time.Second)
	def(&t.RenewEvery, 2*time.Second)
	def(&t.SelfFence, 5*time.Second)
	def(&t.Reserve, t.LeaseFor)
	def(&t.MaxAhead, 2*time.Second)
	def(&t.RestoreMargin, t.Reserve+time.Second)
	return t
}

// holderModes: how the keepers of one process name themselves.
const (
	holdersUnique  = "unique"  // an explicit holder string each
	holdersShared  = "shared"  // one explicit string for the whole process
	holdersDefault = "default" // KeeperConfig.Holder left empty
)

// procConfig is one process: a clock and the keepers on it.
type procConfig struct {
	Offset     time.Duration // of the wall clock from true time at the start
	Rate       float64
	HolderMode string
	Timing     timing
	Schedule   string // "" is the default (v1)
	Keepers    int
	Region     int // of every keeper in the process
	Range      lease.Range
	// V2Range, if not nil, is the keepers' range for layout v2
	// (KeeperConfig.LayoutRanges); Range then is v1's.
	V2Range *lease.Range
	// Lead is the keepers' lead before a cutover (zero: the default).
	Lead        time.Duration
	MintBiggest bool // batches of 1000 more often
	// Store is the store (of the world's space) the process leases from:
	// 0 but in a registry world.
	Store int
	// Entry is how the process starts its holders (entryKeeper when
	// empty).
	Entry string
}

// config is one world, all drawn from the seed.
type config struct {
	Seed  uint64
	Store string
	Theme string
	// Fleet is the schedule written in the store before any holder starts;
	// "" leaves the store's default (v1).
	Fleet string
	// CutoverAfter is when the v2 cutover of the world's schedules falls,
	// after the start (zero: no cutover).
	CutoverAfter time.Duration
	Procs        []procConfig
	Steps        int
	// Restores: the world may snapshot and restore its store. Worlds that
	// do keep every wall clock within ntpThreshold of true time.
	Restores bool
	// SnapshotFirst: the first snapshot is taken before any holder starts,
	// so that a restore takes back every claim made since.
	SnapshotFirst bool
	// Focused: a restores or cut-off world reduced to its bones — two
	// processes of one keeper each on two numbers, clocks in step, no
	// pauses, restarts or lost replies — with the two processes' timings
	// drawn apart (see focus).
	Focused bool
	// Registry, in a registry world, is its stores and their region
	// registry (registry_test.go); nil: one store and no registry.
	Registry *registryConfig
}

// stores is how many independent stores the world's space holds.
func (c *config) stores() int {
	if c.Registry != nil {
		return c.Registry.Stores
	}
	return 1
}

func (c *config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d store %s theme %s steps %d restores %v (snapshot first %v) fleet schedule %q cutover at start+%s focused %v\n",
		c.Seed, c.Store, c.Theme, c.Steps, c.Restores, c.SnapshotFirst, c.Fleet, c.CutoverAfter, c.Focused)
	if c.Registry != nil {
		b.WriteString(c.Registry.String())
	}
	for i, p := range c.Procs {
		v2 := "as v1"
		if p.V2Range != nil {
			v2 = p.V2Range.String()
		}
		fmt.Fprintf(&b, "  process %d: %d keeper(s) started through %s, holders %s, region %d on store %s, range %s (v2 %s, lead %s), schedule %q, clock offset %s rate %.3f\n      %s\n",
			i, p.Keepers, p.entry(), p.HolderMode, p.Region, storeName(p.Store), p.Range, v2, p.Lead, p.Schedule, p.Offset, p.Rate, p.Timing)
	}
	return b.String()
}

// draw builds the world of seed on store. Steps is the step budget.
func draw(seed uint64, store string, steps int) *config {
	r := rand.New(rand.NewPCG(seed, 0x5eedf00d))
	c := &config{Seed: seed, Store: store, Steps: steps}
	c.Theme = drawTheme(r, store)
	if only := themeFilter(); len(only) > 0 && !slices.Contains(only, c.Theme) {
		c.Theme = only[r.IntN(len(only))] // -explore.theme
	}
	chance := func(p float64) bool { return r.Float64() < p }
	bias := func(theme string, yes, no float64) float64 {
		if c.Theme == theme {
			return yes
		}
		return no
	}

	restoring := c.Theme == themeRestore || c.Theme == themeCutoff
	c.Restores = restoring || chance(0.35)
	c.SnapshotFirst = c.Restores && chance(bias(themeRestore, 0.85, bias(themeCutoff, 0.85, 0.25)))

	// Schedules: the fleet's, and whether one process runs another. A
	// cutover falls within the seconds of true time a world runs through;
	// in the schedules theme a few seconds after the start, so that most
	// of the world runs past it.
	c.CutoverAfter = time.Duration(10+r.IntN(50)) * time.Second
	if c.Theme == themeSchedules {
		c.CutoverAfter = time.Duration(2000+r.IntN(10000)) * time.Millisecond
	}
	cut := "v1,v2@CUTOVER"
	switch {
	case c.Theme == themeRegions && chance(0.6):
		// Regions matter under a layout without region bits: v1.
	case c.Theme == themeRegions:
		// A v2 fleet of regions, each region's numbers its own.
		c.Fleet = "v2"
	case chance(bias(themeSchedules, 0.5, 0.12)):
		c.Fleet = cut
	case chance(0.05):
		c.Fleet = "v2"
	}
	mixed := chance(bias(themeSchedules, 0.85, 0.06))

	nProcs := 1 + r.IntN(4)
	switch c.Theme {
	case themeShared, themeRegions, themeSchedules:
		nProcs = 2 + r.IntN(3)
	case themeRestore, themeCutoff:
		nProcs = 2 + r.IntN(2)
	}
	rangeChoices := []lease.Range{{Lo: 0, Hi: 1}, {Lo: 0, Hi: 3}, {Lo: 0, Hi: 3}, {Lo: 1, Hi: 4}, {Lo: 0, Hi: 7}}
	sharedRange := rangeChoices[r.IntN(len(rangeChoices))]
	if c.Theme == themeRegions && chance(0.7) {
		// Few numbers: holders of two regions land on the same one.
		sharedRange = rangeChoices[r.IntN(2)]
	}
	if mixed {
		// v1 machine m and v2 machine 4m+j share their low 22 bits (v1's
		// sequence 1024j to 1024j+1023, v2's 0 to 1023).
		sharedRange = []lease.Range{{Lo: 1, Hi: 4}, {Lo: 1, Hi: 4}, {Lo: 0, Hi: 7}, {Lo: 0, Hi: 3}}[r.IntN(4)]
	}
	// fit: the range holds about as many numbers as the world has
	// holders, so that a holder that loses its number (a restore, a cut
	// off) takes over another's, and every number of a mixed-schedule
	// range is held.
	fit := chance(bias(themeRestore, 0.9, bias(themeCutoff, 0.85, bias(themeSchedules, 0.8, 0.1))))
	// apart: the processes keep timings of their own, so their renewals
	// fall at different instants and one renews (and notices a restore)
	// while another still mints.
	// In the cut-off theme too: a claimer that notices a restore with a
	// shorter reserve than the cut-off holder's is what the store's
	// restore window must cover.
	apart := bias(themeRestore, 0.8, bias(themeCutoff, 0.6, 0.15))
	// Clocks mostly agree, as two holders collide only when they
	// mint in the same millisecond.
	offsetP, rateP := 0.4, 0.3
	if restoring || mixed || c.Theme == themeRegions {
		offsetP, rateP = 0.15, 0.15
	}
	fleetTiming := drawTiming(r, c.Theme, c.Store)
	total := 0
	for i := range nProcs {
		p := procConfig{Rate: 1, Keepers: 1, Range: sharedRange, Timing: fleetTiming, Schedule: c.Fleet}
		if chance(offsetP) {
			p.Offset = time.Duration(r.IntN(101)-50) * time.Millisecond
		}
		if chance(rateP) {
			p.Rate = 0.92 + 0.16*r.Float64()
		}
		if chance(0.2) && !mixed && !fit {
			p.Range = rangeChoices[r.IntN(len(rangeChoices))]
		}
		if chance(apart) {
			p.Timing = drawTiming(r, c.Theme, c.Store)
		}
		if chance(bias(themeShared, 0.85, bias(themeSchedules, 0.6, bias(themeRestore, 0.1, 0.25)))) {
			p.Keepers = 2 + r.IntN(3)
		}
		switch x := r.Float64(); {
		case x < bias(themeShared, 0.5, 0.15):
			p.HolderMode = holdersShared
		case x < bias(themeShared, 0.9, 0.4):
			p.HolderMode = holdersDefault
		default:
			p.HolderMode = holdersUnique
		}
		switch {
		case mixed:
			// Region 0 on every schedule: v1 holds no other.
		case c.Theme == themeRegions && chance(0.8):
			// Regions 1 and 2 in turn, so that both are there.
			p.Region = 1 + i%2
		case chance(0.1):
			p.Region = 1 + r.IntN(2)
		}
		if mixed && i == nProcs-1 && nProcs > 1 {
			// The odd one out: another schedule than the fleet's.
			switch {
			case c.Fleet == "":
				p.Schedule = cut
			case chance(0.5):
				p.Schedule = ""
			default:
				p.Schedule = "v1,v2@CUTOVER2"
			}
		}
		p.MintBiggest = chance(0.5)
		p.Entry = drawEntry(r)
		total += p.Keepers
		if total > 8 {
			p.Keepers -= total - 8
			total = 8
		}
		if p.Keepers <= 0 {
			break
		}
		c.Procs = append(c.Procs, p)
	}
	if mixed && len(c.Procs) == 1 {
		c.Procs = append(c.Procs, c.Procs[0])
		c.Procs[1].Schedule = cut
		if c.Fleet == cut {
			c.Procs[1].Schedule = ""
		}
		total = c.Procs[0].Keepers * 2
	}
	if restoring && chance(0.5) {
		focus(c, r)
		return c
	}
	if c.Theme == themeCutovers {
		cutovers(c, r)
		return c
	}
	if c.Theme == themeRegistry {
		drawRegistry(c, r)
		return c
	}
	if fit {
		// As many numbers as holders, give or take one (in the restores
		// theme mostly exactly as many: a holder that lost its number
		// then can only take another's).
		n := min(max(total+r.IntN(3)-1, 2), 8)
		if c.Theme == themeRestore && chance(0.7) {
			n = min(max(total, 2), 8)
		}
		lo := 0
		if mixed && n <= 4 {
			n, lo = 4, 1 // numbers 1-4: v1's 1 is v2's 4
		}
		for i := range c.Procs {
			c.Procs[i].Range = lease.Range{Lo: lo, Hi: lo + n - 1}
		}
	}
	return c
}

// themeFilter is the themes -explore.theme names (nil: every theme).
func themeFilter() []string {
	if *flagTheme == "" {
		return nil
	}
	return strings.Split(*flagTheme, ",")
}

// drawTheme draws a world's theme. On etcd, which notices a restore by
// itself, restores and cut-off holders come up more often: there the
// claimer that notices a restore must keep clear of what the holders it
// cannot reach still issue.
func drawTheme(r *rand.Rand, store string) string {
	weights := map[string]int{themeAny: 1, themeRegions: 1, themeShared: 1, themeRestore: 1, themeCutoff: 1, themeSchedules: 1, themeCutovers: 1, themeRegistry: 1}
	if store == storeEtcd {
		weights[themeRestore], weights[themeCutoff] = 2, 3
	}
	total := 0
	for _, t := range themes {
		total += weights[t]
	}
	x := r.IntN(total)
	for _, t := range themes {
		if x < weights[t] {
			return t
		}
		x -= weights[t]
	}
	return themeAny
}

// drawEntry draws how a process starts its holders: mostly as the search
// always did (StartKeeper and New), now and then through node.Start, or
// through node.Start with the service in front.
func drawEntry(r *rand.Rand) string {
	switch x := r.Float64(); {
	case x < 0.2:
		return entryNode
	case x < 0.3:
		return entryService
	}
	return entryKeeper
}

func (p procConfig) entry() string {
	if p.Entry == "" {
		return entryKeeper
	}
	return p.Entry
}

// longTiming is a cut-off holder's long timings on store: a 30 s lease
// and the longest self-fence of the store's keepers — 20 s on the tables;
// on etcd 6 s, near the longest its notice window admits (6.36 s, within
// etcdstore.MaxNoticeWindow), renewed every 2 s.
func longTiming(store string) timing {
	if store == storeEtcd {
		return timing{LeaseFor: 30 * time.Second, RenewEvery: 2 * time.Second, SelfFence: 6 * time.Second}
	}
	return timing{LeaseFor: 30 * time.Second, RenewEvery: 5 * time.Second, SelfFence: 20 * time.Second}
}

// noticeWindow is store's MaxNoticeWindow: every claim's first grant
// starts that long after the claim.
func noticeWindow(store string) time.Duration {
	switch store {
	case storePostgres:
		return pgstore.MaxNoticeWindow
	case storeDynamo:
		return dynamostore.MaxNoticeWindow
	case storeZK:
		return zkstore.MaxNoticeWindow
	case storeK8s:
		return k8sstore.MaxNoticeWindow
	}
	return etcdstore.MaxNoticeWindow
}

// maxSelfFence is the longest self-fence a keeper on store is accepted
// with: its notice window (lease.NoticeWindow, × 1.1 + 1 s) within the
// store's MaxNoticeWindow.
func maxSelfFence(store string) time.Duration {
	return (noticeWindow(store) - time.Second) * 10 / 11
}

// drawTiming draws keeper timings on store: the defaults, the long timings
// of a cut-off holder (longTiming), or anything near what KeeperConfig
// accepts, now and then just outside it.
func drawTiming(r *rand.Rand, theme, store string) timing {
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+r.IntN(hi-lo+1)) * time.Millisecond }
	long := 0.15
	if theme == themeCutoff {
		long = 0.7
	}
	switch x := r.Float64(); {
	case x < long:
		t := longTiming(store)
		// The default restore margin mostly (shorter ones are refused at
		// start).
		reserves, margins := 4, 2
		if theme == themeCutoff {
			reserves, margins = 8, 6
		}
		// In the cut-off theme mostly short reservations beside the long
		// self-fence: the cut-off holder then issues past its reserve's
		// worth of time after its last renewal, which is what a claimer's
		// restore floor must cover.
		switch k := r.IntN(reserves); {
		case k == 1 || (theme == themeCutoff && (k == 3 || k == 4)):
			t.Reserve = 5 * time.Second
		case k == 2 || (theme == themeCutoff && k == 6):
			t.Reserve = 10 * time.Second
		case k == 3 || k == 4 || k == 5:
			t.Reserve = 20 * time.Second
		}
		if r.IntN(margins) == 0 {
			t.RestoreMargin = ms(1000, 15000)
		}
		return t
	case x < long+0.3:
		return timing{}
	}
	var t timing
	t.LeaseFor = time.Duration(3+r.IntN(58)) * time.Second
	// The self-fence below what the lease and the store's notice window
	// admit, now and then just above one of them.
	limit := min(float64(t.LeaseFor)*0.92/1.08, float64(maxSelfFence(store)))
	t.SelfFence = time.Duration(limit * (0.3 + 0.69*r.Float64())).Truncate(time.Millisecond)
	if r.IntN(20) == 0 {
		t.SelfFence = time.Duration(limit * 1.02).Truncate(time.Millisecond) // refused
	}
	t.RenewEvery = time.Duration(float64(t.SelfFence) * (0.1 + 0.85*r.Float64())).Truncate(time.Millisecond)
	if r.IntN(25) == 0 {
		t.RenewEvery = t.SelfFence // refused
	}
	if r.IntN(2) == 0 {
		t.Reserve = time.Duration(float64(t.LeaseFor) * (0.2 + 1.8*r.Float64())).Truncate(time.Millisecond)
	}
	if r.IntN(3) == 0 {
		res := t.Reserve
		if res == 0 {
			res = t.LeaseFor
		}
		t.Margin = time.Duration(float64(res) * 0.5 * r.Float64()).Truncate(time.Millisecond)
	}
	if r.IntN(2) == 0 {
		t.MaxAhead = ms(500, 10000)
	}
	if r.IntN(3) == 0 {
		t.RestoreMargin = ms(500, 30000)
	}
	return t
}

// cutovers makes a world of a fleet crossing its v1 → v2 cutover T, every
// process on the fleet's schedule in region 0, its keepers holding v1
// numbers and, from their lead before T, v2 numbers of their own keyspace:
//
//   - v1 ranges beyond v2's machine bits (600-603, 1020-1023), across its
//     edge (510-513) or within it, with v2 ranges small enough (0-1, 0-3,
//     1-4) that some keepers find no v2 number: they must refuse from T
//     on, never issue v2 IDs on their v1 number;
//   - the lead mostly the default (the v2 claims happen at once), else
//     short, so that claims start mid-run: T then falls 25-45 s in;
//   - v1 number m and v2 number m are the same bits' owners-to-be: a
//     keeper going on with v1 number 1 after T writes what v2 number 1's
//     holder writes.
//
// Restarts, pauses, cut-offs, clock steps and restores come from the
// actions as in every world.
func cutovers(c *config, r *rand.Rand) {
	c.Fleet = "v1,v2@CUTOVER"
	// Half the v1 ranges share numbers with the v2 ranges: a keeper going
	// on with its v1 number after T then writes another's v2 IDs.
	v1 := []lease.Range{{Lo: 0, Hi: 3}, {Lo: 1, Hi: 4}, {Lo: 0, Hi: 1}, {Lo: 600, Hi: 603}, {Lo: 510, Hi: 513}, {Lo: 1020, Hi: 1023}}
	v2 := []lease.Range{{Lo: 0, Hi: 1}, {Lo: 0, Hi: 3}, {Lo: 1, Hi: 4}, {Lo: 0, Hi: 2}}
	shortLead := r.IntN(3) == 0
	c.CutoverAfter = time.Duration(2000+r.IntN(10000)) * time.Millisecond
	if shortLead {
		c.CutoverAfter = time.Duration(25000+r.IntN(20000)) * time.Millisecond
	}
	v1r, v2r := v1[r.IntN(len(v1))], v2[r.IntN(len(v2))]
	total := 0
	for i := range c.Procs {
		p := &c.Procs[i]
		p.Schedule, p.Region, p.Range = c.Fleet, 0, v1r
		if r.IntN(5) == 0 {
			p.Range = v1[r.IntN(len(v1))]
		}
		rng := v2r
		if r.IntN(5) == 0 {
			rng = v2[r.IntN(len(v2))]
		}
		p.V2Range = &rng
		if p.Range.Hi < 512 && r.IntN(4) == 0 {
			p.V2Range = nil // v1's range serves v2 too
		}
		if shortLead {
			lf := p.Timing.resolved().LeaseFor
			p.Lead = 2*lf + time.Duration(r.IntN(10000))*time.Millisecond
		}
		total += p.Keepers
	}
	if total < 3 && len(c.Procs) > 0 {
		c.Procs[0].Keepers += 3 - total // more keepers than some v2 ranges hold
	}
}

// focus reduces a restores or cut-off world to two processes of one keeper
// each on numbers 0–1, clocks in step, a snapshot before the first claim,
// and timings apart, where the paths to a duplicate after a restore are:
//
//   - restores: renewals out of phase (2 s and 3 s), so that one keeper
//     renews first after the restore, loses its number and claims the
//     other's, which still mints until its own renewal;
//   - cut-off: both with a 30 s lease and the long self-fence of
//     longTiming (20 s on the tables, 6 s on etcd), one reserving 30 s,
//     the other 5 s: when the one cut off by a restore is the long
//     reserve's, the other notices the restore and claims its number
//     with a floor only as long as its own window.
func focus(c *config, r *rand.Rand) {
	c.Focused, c.SnapshotFirst, c.Restores, c.Fleet = true, true, true, ""
	a := procConfig{Rate: 1, Keepers: 1, Range: lease.Range{Lo: 0, Hi: 1}, HolderMode: holdersUnique, MintBiggest: true}
	b := a
	if c.Theme == themeCutoff {
		a.Timing = longTiming(c.Store)
		b.Timing = a.Timing
		b.Timing.Reserve = 5 * time.Second
	} else {
		b.Timing = timing{LeaseFor: 10 * time.Second, RenewEvery: 3 * time.Second, SelfFence: 5 * time.Second}
	}
	if r.IntN(2) == 0 {
		a, b = b, a
	}
	c.Procs = []procConfig{a, b}
}
