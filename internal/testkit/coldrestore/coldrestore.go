// Package coldrestore plays, against a lease table's real server, the
// sequence of issue 25 item 5: a server put back on a cold copy of its own
// data (stopped, its data directory copied as files, later the copy put
// back and the server started) while holders run. Nothing in the server
// says it went back in time — PostgreSQL keeps its system identifier and
// timeline, dynalite its TableIds — so only what each store remembers of
// the rows can tell (package tablewatch). Before the stores noticed, the
// sequence minted 19,000 and 5,000 duplicate IDs on PostgreSQL: a holder
// that lost its number to the restore claimed at once a sibling's number
// whose restored expiry had passed, while the sibling went on issuing until
// its next renewal.
//
// Run is the sequence; pgstore's and dynamostore's tests give it their
// server (a private PostgreSQL cluster, a private dynalite with its data
// on disk). Every holder is a lease.Keeper and a snowfence.Generator on
// the system clock, with a Store value of its own — as many processes
// would have — and mints continuously; every ID is kept, and the test fails
// on any ID issued twice.
package coldrestore

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// A Server is a lease table's server of the test's own, which the sequence
// stops, copies and puts back on the copy.
type Server interface {
	// Open returns a Store value of its own on the server's lease table
	// (created before Run), as another process would open one; the test's
	// cleanup closes it.
	Open(t *testing.T) lease.Store
	// Stop stops the server so that its data directory can be copied.
	Stop(ctx context.Context) error
	// CopyData copies the stopped server's data directory and returns the
	// copy, for Restore.
	CopyData(ctx context.Context) (string, error)
	// Start starts the stopped server on its data, on its address.
	Start(ctx context.Context) error
	// Restore puts the stopped server's data back to copy and starts it,
	// on its address.
	Restore(ctx context.Context, copy string) error
}

// Timings of the holders, shortened so that the sequence takes seconds.
// The siblings renew seldom, as holders of a table do (every 10 s by
// default, against a 5 min lease); the others often, so that the holder
// that lost its number to the restore sees it first, as in the issue.
var (
	// Slow is a sibling's: its restored mark, at most LeaseFor after the
	// copy, passes before the restore; it renews once a second. Its
	// self-fence outlasts the server's downtime for the copy and for the
	// restore, slow as they are on a loaded machine (several seconds each
	// under scripts/test): a sibling that had fenced itself before D's
	// claim would hide what the sequence shows.
	Slow = lease.KeeperConfig{LeaseFor: 8 * time.Second, RenewEvery: time.Second, SelfFence: 6500 * time.Millisecond, RequestTimeout: time.Second}
	// Fast is the killed holder's, the re-claimer's and the new holder's.
	Fast = lease.KeeperConfig{LeaseFor: time.Second, RenewEvery: 100 * time.Millisecond, SelfFence: 500 * time.Millisecond, RequestTimeout: time.Second}
)

// MintFor is how long every holder mints after the restore: several
// renewals of the slow siblings.
const MintFor = 3 * time.Second

// A holder is a keeper and a generator minting on their own store.
type holder struct {
	name  string
	store *cutStore // every holder's store can be cut off (Run cuts the siblings, RunFresh A)
	k     *lease.Keeper
	g     *snowfence.Generator
	stop  context.CancelFunc
	done  chan struct{}
	// issuing is closed once the holder has minted its first IDs (its
	// first grant waits out the store's notice window).
	issuing chan struct{}
	ids     []snowfence.ID // read after done
}

// fleet is the holders of one run.
type fleet struct {
	t       *testing.T
	srv     Server
	log     *slog.Logger
	holders []*holder
}

// start starts a holder named name on a store of its own, with timings
// tm, leasing numbers of rng, and starts it minting.
func (f *fleet) start(name string, tm lease.KeeperConfig, rng lease.Range) *holder {
	f.t.Helper()
	h := &holder{name: name, store: &cutStore{Store: f.srv.Open(f.t)}, done: make(chan struct{}), issuing: make(chan struct{})}
	clk := snowfence.SystemClock() // one clock for keeper and generator
	kc := tm
	kc.Store, kc.Holder, kc.Range, kc.Clock, kc.Logger = h.store, name, &rng, clk, f.log.With("holder", name)
	ctx, cancel := context.WithTimeout(f.t.Context(), 20*time.Second)
	defer cancel()
	k, err := leasetest.StartKeeper(ctx, kc)
	if err != nil {
		f.t.Fatalf("StartKeeper(%s): %v", name, err)
	}
	h.k = k
	f.t.Cleanup(func() {
		// The generator first: its LastIssued, the release mark, is
		// final once it is closed.
		var last int64
		if h.g != nil {
			h.g.Close()
			last = h.g.LastIssued()
		}
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		k.Close(cctx, last)
	})
	if h.g, err = snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff}); err != nil {
		f.t.Fatal(err)
	}
	mctx, stop := context.WithCancel(context.Background())
	h.stop = stop
	go h.mint(mctx)
	f.holders = append(f.holders, h)
	f.t.Logf("%s started: machine %d", name, k.Status().Machine)
	return h
}

// mint takes 8 IDs every millisecond until ctx ends, keeping each batch
// issued; refusals (fenced, not started yet) are skipped.
func (h *holder) mint(ctx context.Context) {
	defer close(h.done)
	tick := time.NewTicker(time.Millisecond) // pacing, not synchronisation
	defer tick.Stop()
	buf := make([]snowfence.ID, 0, 8)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ids, err := h.g.AppendN(ctx, buf[:0], 8)
		if err == nil {
			if len(h.ids) == 0 {
				close(h.issuing)
			}
			h.ids = append(h.ids, ids...)
		}
	}
}

// untilIssuing waits until every holder of hs has minted, as a running
// holder of the sequence must have before the copy is taken: every claim's
// first grant waits out the store's notice window.
func (f *fleet) untilIssuing(hs ...*holder) {
	f.t.Helper()
	deadline := time.After(2 * time.Minute) // a bound on the wait, not a figure the test measures
	for _, h := range hs {
		select {
		case <-h.issuing:
		case <-deadline:
			f.t.Fatalf("%s never issued (status %+v)", h.name, h.k.Status())
		}
	}
}

// halt stops the holder's minting and waits for it.
func (h *holder) halt() {
	h.stop()
	<-h.done
}

// sleepUntil waits for real time to reach at: the leases of a table
// expire by the claimers' clocks, so the sequence waits for time itself.
func sleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

// Run plays the sequence on srv, whose lease table exists and is empty,
// and fails t if any ID was issued twice:
//
//  1. siblings A and B and holder K claim the three numbers 0–2 and mint;
//  2. the server is stopped, its data copied, and started again (the cold
//     copy; the holders ride out the gap);
//  3. K dies without releasing (its store closed under its keeper, its
//     minting stopped); once its lease has expired, D claims its number;
//  4. once the marks the copy holds for A and B have passed, the server is
//     stopped and put back on the copy, with every holder running: K's
//     number is K's again at K's epoch, A's and B's marks lower than they
//     wrote and already past; A and B stay cut off from the server (as
//     while it was down) until D, which renews ten times as often, has
//     claimed again;
//  5. N, a new holder, starts at once on numbers 5–6, which the copy never
//     had;
//  6. every holder mints for MintFor.
//
// Every holder is issuing before the copy (untilIssuing: a claim's first
// grant waits out the store's notice window, lease.Store.MaxNoticeWindow).
// That wait covers the sequence a second time: D's and N's claims issue
// nothing before every holder they could overlap has stopped. Built with
// the rows' signs undone alone the test passes; with the notice window
// undone too it mints duplicates (scripts/prove-search builds it so).
//
// D renews first. Taking its loss for an ordinary one, it claimed A's or B's
// number at once, starting at its clock, while that sibling went on issuing
// until its next renewal: the duplicates of the issue. Noticing the restore
// (K's epoch, below D's own), it claims a restore window ahead; the
// siblings notice too, their marks lower than they wrote, and a sibling
// that lost its number to D's claim claims above the floor D's claim wrote
// into the table.
func Run(t *testing.T, srv Server) {
	ctx := t.Context()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	f := &fleet{t: t, srv: srv, log: logger}
	all := lease.Range{Lo: 0, Hi: 2}
	a := f.start("A", Slow, all)
	b := f.start("B", Slow, all)
	k := f.start("K", Fast, all)
	f.untilIssuing(a, b, k)
	// Every sibling renews at least once before the copy.
	sleepUntil(time.Now().Add(Slow.RenewEvery + 200*time.Millisecond))

	// 2. The cold copy.
	copied := time.Now()
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("stop for the copy: %v", err)
	}
	cp, err := srv.CopyData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("start after the copy: %v", err)
	}
	t.Logf("cold copy taken in %s", time.Since(copied).Round(time.Millisecond))

	// 3. K dies; D takes its number once K's lease has run out.
	kn := k.k.Status().Machine
	k.halt()
	k.store.sever() // no renewal of K's in flight can land after the read below
	if err := k.store.Close(); err != nil {
		t.Fatal(err)
	}
	// Until a read shows K's lease run out by the clock: a renewal of K's
	// in flight when its store closed may still have moved it on.
	observer := srv.Open(t)
	for {
		rec, err := observer.Get(ctx, kn)
		if err != nil {
			t.Fatalf("read K's number %d: %v", kn, err)
		}
		if rec.ExpiresMs < time.Now().UnixMilli() {
			break
		}
		sleepUntil(time.UnixMilli(rec.ExpiresMs + 50))
	}
	d := f.start("D", Fast, all)
	if m := d.k.Status().Machine; m != kn {
		t.Fatalf("D claimed %d, want K's number %d", m, kn)
	}

	// 4. The marks the copy holds for the siblings pass, D renews several
	// times, and the server goes back to the copy.
	sleepUntil(copied.Add(Slow.LeaseFor + 300*time.Millisecond))
	// The siblings are cut off from the server, as they are while it is
	// down, until D has claimed again after the restore: D, renewing ten
	// times as often, sees the restore first, as in the issue, however the
	// machine schedules the processes' requests.
	a.store.cut.Store(true)
	b.store.cut.Store(true)
	reclaimed := d.store.nextClaim()
	stopping := time.Now()
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("stop for the restore: %v", err)
	}
	if err := srv.Restore(ctx, cp); err != nil {
		t.Fatalf("restore: %v", err)
	}
	restored := time.Now()
	t.Logf("server back on the copy taken %s before (down %s)", restored.Sub(copied).Round(time.Millisecond), restored.Sub(stopping).Round(time.Millisecond))

	// 5. A new holder at once, on numbers the copy never had.
	n := f.start("N", Fast, lease.Range{Lo: 5, Hi: 6})

	// D claims again (a sibling's number, or a restore window ahead), and
	// the siblings reach the server again.
	select {
	case <-reclaimed:
	case <-time.After(30 * time.Second): // a bound on the wait, not a figure the test measures
		t.Fatalf("D did not claim again within 30s of the restore (status %+v)", d.k.Status())
	}
	a.store.cut.Store(false)
	b.store.cut.Store(false)
	t.Logf("D claimed machine %d again %s after the restore", d.k.Status().Machine, time.Since(restored).Round(time.Millisecond))

	// 6. Everyone mints.
	sleepUntil(restored.Add(MintFor))
	for _, h := range f.holders {
		h.halt()
	}
	for _, h := range []*holder{a, b, d, n} {
		st := h.k.Status()
		t.Logf("%s: machine %d, claims %d, losses %d, last error: %.200s", h.name, st.Machine, st.Claims, st.Losses, st.LastError)
	}
	check(t, f.holders)
	if st := d.k.Status(); st.Losses == 0 {
		t.Errorf("D never lost K's number: the restore did not take it back, so the sequence shows nothing (status %+v)", st)
	}
	noticed := false
	for _, h := range []*holder{a, b, d} {
		noticed = noticed || strings.Contains(h.k.Status().LastError, lease.ErrRestored.Error())
	}
	if !noticed {
		t.Errorf("no holder lost its number to a restore noticed (ErrRestored)")
	}
}

// RunFresh plays, on srv, whose lease table exists and is empty, the
// sequence of issue 25 item 6 on a lease table, and fails t if any ID was
// issued twice:
//
//  1. the server is stopped, its data (no row yet) copied, and started
//     again;
//  2. A claims number 0, the only one of its range, and mints;
//  3. the server is stopped and put back on the copy, with A running but
//     cut off from it (its renewals fail, as while the server was down)
//     until step 4's claim: number 0 has no row;
//  4. N, a process started afresh (a Store value that never read the
//     table), claims number 0 at once, and both mint for MintFor, and then
//     until N has issued (its notice window over) and MintFor more.
//
// N cannot notice the restore: nothing it reads is older than something it
// saw. A notices at its next renewal (its row is gone) and stops; until
// then it issues on number 0. N's first grant therefore waits the store's
// notice window (lease.Store.MaxNoticeWindow), by which time A has
// stopped. Without that wait N issued at once beside A.
func RunFresh(t *testing.T, srv Server) {
	ctx := t.Context()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	f := &fleet{t: t, srv: srv, log: logger}
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("stop for the copy: %v", err)
	}
	cp, err := srv.CopyData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("start after the copy: %v", err)
	}
	one := lease.Range{Lo: 0, Hi: 0}
	a := f.start("A", Slow, one)
	f.untilIssuing(a)
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("stop for the restore: %v", err)
	}
	// A's renewals fail from here, as they do while the server is down,
	// until N has claimed: A does not notice the restore (and claim number
	// 0 again) before N, whatever the machine's scheduling.
	a.store.cut.Store(true)
	if err := srv.Restore(ctx, cp); err != nil {
		t.Fatalf("restore: %v", err)
	}
	restored := time.Now()
	n := f.start("N", Fast, one)
	a.store.cut.Store(false)
	sleepUntil(restored.Add(MintFor))
	// N issues once its notice window has passed (A stopped long before):
	// the sequence must show that too, or a claimer that never issued
	// again would pass it.
	f.untilIssuing(n)
	sleepUntil(time.Now().Add(MintFor))
	for _, h := range f.holders {
		h.halt()
	}
	for _, h := range f.holders {
		st := h.k.Status()
		t.Logf("%s: machine %d, claims %d, losses %d, %d IDs, last error: %.200s", h.name, st.Machine, st.Claims, st.Losses, len(h.ids), st.LastError)
	}
	check(t, f.holders)
	if st := n.k.Status(); st.Machine != 0 {
		t.Errorf("N holds machine %d, want number 0, which the restore freed under A: the sequence shows nothing", st.Machine)
	}
	if st := a.k.Status(); st.Losses == 0 {
		t.Errorf("A never lost number 0 to the restore and N's claim (status %+v)", st)
	}
}

// check fails t for every ID more than one holder (or one holder twice)
// issued, naming the holders and how many.
func check(t *testing.T, hs []*holder) {
	t.Helper()
	by := make(map[snowfence.ID]int)
	pairs := map[string]int{}
	var examples []string
	total := 0
	for i, h := range hs {
		total += len(h.ids)
		for _, id := range h.ids {
			if j, ok := by[id]; ok {
				key := hs[j].name + "+" + h.name
				pairs[key]++
				if len(examples) < 5 {
					p := snowfence.V1().Split(id)
					examples = append(examples, fmt.Sprintf("%d (machine %d, %s) by %s and %s", id, p.Machine,
						time.UnixMilli(snowfence.V1().TimeOf(id).UnixMilli()).UTC().Format("15:04:05.000"), hs[j].name, h.name))
				}
				continue
			}
			by[id] = i
		}
	}
	counts := make([]string, 0, len(hs))
	for _, h := range hs {
		counts = append(counts, fmt.Sprintf("%s %d", h.name, len(h.ids)))
	}
	t.Logf("%d IDs minted (%s)", total, strings.Join(counts, ", "))
	if len(pairs) == 0 {
		return
	}
	keys := slices.Sorted(maps.Keys(pairs))
	var per []string
	dups := 0
	for _, k := range keys {
		per = append(per, fmt.Sprintf("%s: %d", k, pairs[k]))
		dups += pairs[k]
	}
	t.Errorf("%d IDs issued twice (%s); for example %s", dups, strings.Join(per, ", "), strings.Join(examples, "; "))
}
