package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/pgstore"
	"github.com/snowfence/snowfence/zkstore"
)

// Varied configurations.
//
// Every scenario draws the configuration its story leaves open from the
// run's seed (Options.Seed, the -seed flag), so that a run is replayable and
// two seeds run the same story on different configurations:
//
//   - the holders' timings (serve's --lease-ttl, --renew-every,
//     --self-fence and --fence-margin, the library holder's same flags),
//     drawn in a timingBox the scenario picks (the boxes below) and kept
//     only if the product's own checks accept them (accepts: the keeper's
//     validation that lease.StartKeeper runs, against the store's restore
//     window); a refused draw is drawn again, and the refusals are counted
//     in the report, so that the sampler cannot silently shrink to one
//     corner (or to the defaults);
//   - the machine-number ranges of each holder class: where in 0–1023 they
//     sit and how wide they are, within what the scenario needs (a number
//     per holder, spares for the ones that restart);
//   - the number of services and library generators, where the story does
//     not fix them.
//
// What a story needs stays fixed, and the report says so: scenario 1's 32
// generators and rates, worker 17 of scenario 2, the pair of holders on one
// number of scenario 4, the WAN timings of 5f, the long mode's table
// timings (the stores' own, lease.TableTimings). The bounds of each box are
// the product's checks (SelfFence×1.08 < LeaseFor×0.92, RenewEvery <
// SelfFence, 0 ≤ Margin < Reserve, the restore window within the store's
// MaxRestoreWindow, the notice window within its MaxNoticeWindow) intersected with what the scenario's story and the CI
// budget allow; see each box.
//
// The draws come from a random stream of their own (seeded with the run's
// seed and the scenario id), apart from Env.rng, so that drawing a
// configuration does not move a scenario's other random choices.

// A timingBox is the range a scenario draws its holders' timings in. The
// lease TTL and the self-fence are drawn independently, each uniformly in
// its interval (on a 100 ms grid), and the product's checks then refuse the
// pairs it refuses (a self-fence too close to the TTL). The renewal period
// is drawn as a fraction of the self-fence: the product accepts any period
// below it, but a period above half of it would let one slow renewal (the
// keeper's request timeout is half the period) fence a healthy holder, and
// the scenarios' "no refusal" checks would then measure the draw, not the
// product; and it is at least renewMin, which keeps the keeper's request
// timeout (half the period) above the store's latency under the
// scenario's load and faults. The margin is drawn in [0, LeaseFor − SelfFence]: the product
// accepts any margin below the reservation (LeaseFor), but above
// LeaseFor − SelfFence the margin, not the self-fence, would stop a cut-off
// holder first (and above LeaseFor − RenewEvery a healthy one between
// renewals), which the scenarios' self-fence expectations do not model.
type timingBox struct {
	name               string
	leaseLo, leaseHi   time.Duration
	fenceLo, fenceHi   time.Duration
	renewLo, renewHi   float64       // RenewEvery as a fraction of SelfFence
	renewMin           time.Duration // and at least this
	noMargin           bool          // keep Margin 0
	tablesOnly         bool          // for lease tables: etcd refuses its restore window
	whyLease, whyFence string        // the story's reason for the bounds, for the report
}

var (
	// fastBox: scenarios that wait for a lease to expire (4, 6). The TTL
	// stays within a second of the former fixed 3 s, so that waiting it out
	// costs about what it did; the self-fence is refused by the product
	// above LeaseFor × 0.92 / 1.08.
	fastBox = timingBox{name: "fast", leaseLo: 2 * time.Second, leaseHi: 4 * time.Second,
		fenceLo: 800 * time.Millisecond, fenceHi: 3500 * time.Millisecond, renewLo: 0.15, renewHi: 0.5, renewMin: 250 * time.Millisecond}
	// steadyBox: scenarios whose story is not about timings (1–3b, 5a–5e,
	// 5g, 5h, 7), around the etcd defaults (10 s, 2 s, 5 s). The self-fence
	// stays at 5 s or more, so that a holder outlasts an etcd election
	// (5a checks that nobody refuses meanwhile), and at 8 s or less, so that
	// every holder has fenced 10 s into 5c's outage; the product refuses
	// the draws above 6.36 s (the notice window within etcd's
	// MaxNoticeWindow), and the sampler counts them; a TTL up to 12 s keeps
	// 5d's wait for the restore window (TTL × 1.1 + 1 s) within 2.2 s of the
	// default's.
	steadyBox = timingBox{name: "steady", leaseLo: 6 * time.Second, leaseHi: 12 * time.Second,
		fenceLo: 5 * time.Second, fenceHi: 8 * time.Second, renewLo: 0.15, renewHi: 0.5, renewMin: 500 * time.Millisecond}
	// tableSteadyBox is steadyBox on a lease table in the long mode
	// (Env.drawTimings swaps it in; the short mode draws tableBox), around the
	// tables' own lease (lease.TableTimings: 5 min, 5 s, 4 min 10 s, 5 s):
	// none of these scenarios waits for a lease, so a long one costs
	// nothing. The TTL (the keeper's Reserve) stays at or below 5 min,
	// dynamostore's default Config.MaxReserve, which that store assumes no
	// holder reserves past but which no check of the product enforces (the
	// keeper would accept up to 5 min 26 s, where the restore window,
	// TTL × 1.1 + 1 s, reaches the tables' 6 min). Its self-fences are
	// above the short mode's bound on the tables (shortTableMaxSelfFence),
	// so it runs in the long mode, where the tables' notice window (4 min
	// 40 s) admits them.
	tableSteadyBox = timingBox{name: "table-steady", leaseLo: time.Minute, leaseHi: 5 * time.Minute,
		fenceLo: 15 * time.Second, fenceHi: time.Minute, renewLo: 0.1, renewHi: 0.5, renewMin: time.Second, tablesOnly: true}
	// netBox: the network scenarios (8a–8c), around their former 10 s, 1 s,
	// 5 s. 8b's cut must fit R + 2d + 200 ms + R/4 + 500 ms < S with d > 0
	// (shortCut), hence a renewal of at most a quarter of the self-fence;
	// 8a's cut lasts S + 2R, hence S ≤ 6 s; 8c delays the link by
	// 200 ms ± 50 ms each way, hence a renewal of at least 1 s (a request
	// timeout of 500 ms, as before).
	netBox = timingBox{name: "network", leaseLo: 7 * time.Second, leaseHi: 12 * time.Second,
		fenceLo: 4 * time.Second, fenceHi: 6 * time.Second, renewLo: 0.1, renewHi: 0.25, renewMin: time.Second}
	// tableBox: the short mode of the table scenarios (9a–10c), around the
	// former 10 s, 1 s, 5 s, under the short mode's bound on the tables'
	// self-fence (shortTableMaxSelfFence, 6 s). freeze-short freezes the server for
	// S − 2R − 1 s, hence R ≤ S/4 and S ≥ 4 s; the faults last S + 2R,
	// hence S ≤ 6 s; a renewal of at least 800 ms keeps a request timeout
	// of 400 ms or more for dynalite under load (it was 1 s).
	tableBox = timingBox{name: "table", leaseLo: 7 * time.Second, leaseHi: 12 * time.Second,
		fenceLo: 4 * time.Second, fenceHi: 6 * time.Second, renewLo: 0.1, renewHi: 0.25, renewMin: 800 * time.Millisecond}
)

// maxDraws bounds the draws of one configuration item; when every one is
// refused the scenario fails rather than run on anything else.
const maxDraws = 200

// errChecksPassed is what checkStore's Claim answers: StartKeeper asks the
// store for a number only after every check of its configuration passed.
var errChecksPassed = errors.New("chaos: the keeper's checks passed")

// checkStore is a lease store that answers only what StartKeeper asks before
// and at its first claim: its restore and notice windows (the store's
// MaxRestoreWindow and MaxNoticeWindow, which the keeper checks its own
// against), its region registry (none: a fleet of one region, as the
// scenarios' stores are) and the claim itself, which it refuses with
// errChecksPassed (wrapping lease.ErrNoFreeNumber, on which leasetest.StartKeeper
// gives up at once).
type checkStore struct {
	lease.Store
	window, notice time.Duration
}

func (s checkStore) MaxRestoreWindow() time.Duration { return s.window }
func (s checkStore) MaxNoticeWindow() time.Duration  { return s.notice }

// RegistryReader: none, a store that keeps no registry (a fleet of one
// region).
func (s checkStore) RegistryReader() lease.RegistryReader { return nil }

// Region: region 0's store, as the keepers accepts starts are.
func (s checkStore) Region() int { return 0 }

func (s checkStore) Claim(context.Context, lease.ClaimRequest) (*lease.Lease, error) {
	return nil, fmt.Errorf("%w (%w)", errChecksPassed, lease.ErrNoFreeNumber)
}

// maxRestoreWindow is the store's lease.Store.MaxRestoreWindow.
func maxRestoreWindow(kind string) time.Duration {
	switch kind {
	case StorePostgres:
		return pgstore.MaxRestoreWindow
	case StoreDynamoDB:
		return dynamostore.MaxRestoreWindow
	case StoreZooKeeper:
		return zkstore.MaxRestoreWindow
	case StoreKubernetes:
		return k8sstore.MaxRestoreWindow
	}
	return etcdstore.MaxRestoreWindow
}

// maxNoticeWindow is the store's lease.Store.MaxNoticeWindow.
func maxNoticeWindow(kind string) time.Duration {
	switch kind {
	case StorePostgres:
		return pgstore.MaxNoticeWindow
	case StoreDynamoDB:
		return dynamostore.MaxNoticeWindow
	case StoreZooKeeper:
		return zkstore.MaxNoticeWindow
	case StoreKubernetes:
		return k8sstore.MaxNoticeWindow
	}
	return etcdstore.MaxNoticeWindow
}

// accepts runs the product's own checks on a holder configured with t and
// --machines machines on a store of kind: serve's parse of --machines
// (lease.ParseRanges) and the keeper's validation, by starting a keeper on
// checkStore. nil: a holder so configured starts; otherwise the product's
// refusal.
func accepts(kind string, t lease.Timings, machines string) error {
	return acceptsWithin(maxRestoreWindow(kind), maxNoticeWindow(kind), t, machines)
}

// acceptsWithin is accepts on a store whose restore and notice windows are
// window and notice (a table given a test bound: Env.tableMaxSelfFence,
// and on ZooKeeper Env.tableMaxReserve).
func acceptsWithin(window, notice time.Duration, t lease.Timings, machines string) error {
	rng, layoutRanges, err := lease.ParseRanges(machines)
	if err != nil {
		return err
	}
	kc := lease.KeeperConfig{Store: checkStore{window: window, notice: notice}, Holder: "chaos-config-check",
		Range: rng, LayoutRanges: layoutRanges,
		LeaseFor: t.LeaseFor, RenewEvery: t.RenewEvery, SelfFence: t.SelfFence, Margin: t.Margin}
	k, err := leasetest.StartKeeper(context.Background(), kc)
	if k != nil { // cannot happen: checkStore never grants
		k.Close(context.Background(), lease.UnknownIssued) // no generator
		return errors.New("chaos: a keeper started on checkStore")
	}
	if errors.Is(err, errChecksPassed) {
		return nil
	}
	return err
}

// drawer draws one scenario's configuration and records it for the row.
type drawer struct {
	kind string
	// notice is the store's notice window the draws are checked against
	// (zero: maxNoticeWindow of kind).
	notice time.Duration
	// window is the store's restore window the draws are checked against
	// (zero: maxRestoreWindow of kind).
	window time.Duration
	rng    *rand.Rand
	cfg    Config
	// timings memoises each box's draw: the scenario's holders share it.
	timings map[string]lease.Timings
	// taken are the machine ranges drawn so far, [lo, hi] pairs.
	taken [][2]int
}

// newDrawer seeds a scenario's draws with the run's seed and the scenario
// id.
func newDrawer(kind, id string, seed uint64) *drawer {
	h := fnv.New64a()
	h.Write([]byte("config/" + id))
	return &drawer{kind: kind, rng: rand.New(rand.NewPCG(seed, h.Sum64())), cfg: Config{Seed: seed}, timings: map[string]lease.Timings{}}
}

// accepts is accepts on the drawer's store and its restore and notice
// windows.
func (d *drawer) accepts(t lease.Timings, machines string) error {
	notice, window := d.notice, d.window
	if notice == 0 {
		notice = maxNoticeWindow(d.kind)
	}
	if window == 0 {
		window = maxRestoreWindow(d.kind)
	}
	return acceptsWithin(window, notice, t, machines)
}

// between is a uniform draw in [lo, hi] on a grid of step.
func (d *drawer) between(lo, hi, step time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(d.rng.Int64N(int64((hi-lo)/step)+1))*step
}

// draw draws timings in b until the product accepts them (with a range
// every store holds, so that only the timings are judged).
func (d *drawer) draw(b timingBox) (lease.Timings, int, error) {
	var last error
	for i := range maxDraws {
		var t lease.Timings
		t.LeaseFor = d.between(b.leaseLo, b.leaseHi, 100*time.Millisecond)
		t.SelfFence = d.between(b.fenceLo, b.fenceHi, 100*time.Millisecond)
		frac := b.renewLo + d.rng.Float64()*(b.renewHi-b.renewLo)
		t.RenewEvery = max(b.renewMin, time.Duration(frac*float64(t.SelfFence)).Round(50*time.Millisecond))
		if !b.noMargin && t.LeaseFor > t.SelfFence {
			t.Margin = d.between(0, t.LeaseFor-t.SelfFence, 100*time.Millisecond)
		}
		if last = d.accepts(t, "0-0"); last == nil {
			return t, i, nil
		}
	}
	return lease.Timings{}, maxDraws, fmt.Errorf("configuration: no draw of the %s timings accepted in %d (the last refused: %v)", b.name, maxDraws, last)
}

// timingsFor is the scenario's timings of box b, drawn once (every holder
// the scenario starts with them shares them) and recorded.
func (d *drawer) timingsFor(b timingBox, who string) (lease.Timings, error) {
	if t, ok := d.timings[b.name]; ok {
		return t, nil
	}
	t, refused, err := d.draw(b)
	if err != nil {
		return t, err
	}
	d.timings[b.name] = t
	d.cfg.Refused += refused
	d.cfg.Timings = append(d.cfg.Timings, ConfigTimings{Who: who, Drawn: true, Box: b.name,
		LeaseTTL: t.LeaseFor.String(), RenewEvery: t.RenewEvery.String(), SelfFence: t.SelfFence.String(), Margin: t.Margin.String(), Refused: refused})
	return t, nil
}

// fixedTimings records timings the story keeps.
func (d *drawer) fixedTimings(who string, t lease.Timings, why string) {
	d.cfg.Timings = append(d.cfg.Timings, ConfigTimings{Who: who, Why: why,
		LeaseTTL: t.LeaseFor.String(), RenewEvery: t.RenewEvery.String(), SelfFence: t.SelfFence.String(), Margin: t.Margin.String()})
}

// machines draws a range of between lo and hi numbers for the holders
// who, apart from every range drawn before in the scenario, and records
// it.
func (d *drawer) machines(who string, lo, hi int) (string, error) {
	n := lo
	if hi > lo {
		n += d.rng.IntN(hi - lo + 1)
	}
	var last error
	for range maxDraws {
		start := d.rng.IntN(1024 - n + 1)
		r := [2]int{start, start + n - 1}
		if d.overlaps(r) {
			continue
		}
		s := fmt.Sprintf("%d-%d", r[0], r[1])
		if last = d.accepts(lease.Timings{}, s); last != nil {
			d.cfg.Refused++
			continue
		}
		d.taken = append(d.taken, r)
		d.cfg.Machines = append(d.cfg.Machines, ConfigItem{Who: who, Value: s})
		return s, nil
	}
	return "", fmt.Errorf("configuration: no range of %d numbers for %s in %d draws (last refusal: %v)", n, who, maxDraws, last)
}

// fixedMachines records a range the story keeps, and keeps later draws
// off it.
func (d *drawer) fixedMachines(who, s string) {
	if r, err := lease.ParseRange(s); err == nil {
		d.taken = append(d.taken, [2]int{r.Lo, r.Hi})
	}
	d.cfg.Machines = append(d.cfg.Machines, ConfigItem{Who: who, Value: s, Fixed: true})
}

// firstNumber is the lowest number of the range s ("lo-hi"), −1 if s is
// none.
func firstNumber(s string) int {
	r, err := lease.ParseRange(s)
	if err != nil {
		return -1
	}
	return r.Lo
}

// overlaps says whether r shares a number with a range drawn or fixed
// before (a redraw for overlap is the harness's, not a refusal).
func (d *drawer) overlaps(r [2]int) bool {
	for _, t := range d.taken {
		if r[0] <= t[1] && t[0] <= r[1] {
			return true
		}
	}
	return false
}

// count draws a holder count in [lo, hi] and records it.
func (d *drawer) count(who string, lo, hi int) int {
	n := lo
	if hi > lo {
		n += d.rng.IntN(hi - lo + 1)
	}
	d.cfg.Counts = append(d.cfg.Counts, ConfigItem{Who: who, Value: fmt.Sprint(n)})
	return n
}

// fixedCount records a count the story keeps.
func (d *drawer) fixedCount(who string, n int) {
	d.cfg.Counts = append(d.cfg.Counts, ConfigItem{Who: who, Value: fmt.Sprint(n), Fixed: true})
}

// A Config is the configuration a scenario ran with: what it drew from the
// seed and what its story kept (see config.go's comment).
type Config struct {
	// Seed is the run's seed (Options.Seed); with the scenario id it
	// determines every draw, so -seed replays the configuration.
	Seed    uint64          `json:"seed"`
	Timings []ConfigTimings `json:"timings,omitempty"`
	// Machines are the holder classes' machine ranges (--machines).
	Machines []ConfigItem `json:"machines,omitempty"`
	// Counts are the numbers of services and library generators.
	Counts []ConfigItem `json:"counts,omitempty"`
	// Refused counts the draws the product's checks refused (drawn
	// again).
	Refused int `json:"draws_refused"`
}

// ConfigTimings are the timings one class of holders ran with.
type ConfigTimings struct {
	Who        string `json:"who"`
	Drawn      bool   `json:"drawn"`
	Box        string `json:"box,omitempty"` // the timingBox drawn in
	Why        string `json:"why,omitempty"` // why the story keeps them (not drawn)
	LeaseTTL   string `json:"lease_ttl"`
	RenewEvery string `json:"renew_every"`
	SelfFence  string `json:"self_fence"`
	Margin     string `json:"fence_margin"`
	Refused    int    `json:"draws_refused,omitempty"`
}

// A ConfigItem is one drawn (or fixed) value: a range or a count.
type ConfigItem struct {
	Who   string `json:"who"`
	Value string `json:"value"`
	Fixed bool   `json:"fixed,omitempty"`
}

// String is the configuration on one line, for report.md.
func (c Config) String() string {
	var parts []string
	for _, t := range c.Timings {
		how := "drawn (" + t.Box + ")"
		if !t.Drawn {
			how = "fixed: " + t.Why
		}
		parts = append(parts, fmt.Sprintf("%s: lease %s, renew %s, self-fence %s, margin %s [%s]", t.Who, t.LeaseTTL, t.RenewEvery, t.SelfFence, t.Margin, how))
	}
	items := func(label string, xs []ConfigItem) {
		if len(xs) == 0 {
			return
		}
		var s []string
		for _, x := range xs {
			v := x.Who + " " + x.Value
			if x.Fixed {
				v += " (fixed)"
			}
			s = append(s, v)
		}
		parts = append(parts, label+" "+strings.Join(s, ", "))
	}
	items("machines", c.Machines)
	items("counts", c.Counts)
	parts = append(parts, fmt.Sprintf("seed %d, %d draws refused by the product's checks", c.Seed, c.Refused))
	return strings.Join(parts, "; ")
}
