package leasetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// checkCutover runs a fleet across a v1 → v2 cutover at T on one fake clock,
// each keeper holding its v1 number and, from its Lead before T, a v2
// number of the store's region, in the v2 keyspace:
//
//   - keeper A holds v1 machine 600, which v2's 9 machine bits cannot hold:
//     it gets a v2 number, and its IDs strictly increase across T, the v1
//     ones decoding to v1 / machine 600, the v2 ones to v2 / the region /
//     its v2 number; a NextN(1000) that runs out of v1's sequence at T-1 ms
//     goes on at T under v2, split at T and increasing;
//   - after T, A's v1 number is released with the exact end of its last v1
//     ID as its mark (T: the last v1 tick was T-1 ms);
//   - keeper B's only v2 number is held by another claim: it issues v1 IDs up
//     to T, refuses at T with a reason naming v2 (never a v2 ID on a number
//     it does not hold), and recovers once the number is freed;
//   - a machine range that v2 cannot hold, with no range for v2 in
//     LayoutRanges, is refused at start.
//
// No ID repeats across the keepers.
func checkCutover(t *testing.T, s *suite) {
	st := s.adminStore(t)
	// The lead: 2 min, or longer than the store's notice window, which the
	// v2 claims' first grants wait out before T (the tables' 4 min 40 s:
	// 6 min).
	notice := (st.MaxNoticeWindow() + time.Minute - 1).Truncate(time.Minute)
	lead := max(2*time.Minute, notice+time.Minute)
	// The set-up's calls and the keepers' starts: a bound of their own
	// (the sequence's waits have theirs, settle below).
	ctx, cancel := context.WithTimeout(t.Context(), 2*callTimeout)
	defer cancel()
	// T on an even second, whole minutes after the clock's start, so the
	// keepers' 2 s renewals (from the start) wake exactly at T: 5 min, or
	// more when the store's notice window (which the first grants wait out)
	// and a minute's slack do not fit before the lead window (the tables':
	// 12 min).
	T := time.UnixMilli(now()).Truncate(time.Minute).Add(time.Hour)
	t0 := T.Add(-max(5*time.Minute, lead+notice+time.Minute))
	sched, err := snowfence.ParseSchedule("v1,v2@" + T.UTC().Format(time.RFC3339))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetFleetSchedule(ctx, 0, sched.String()); err != nil {
		t.Fatal(err)
	}
	region := 0
	if r, ok := st.(interface{ Region() int }); ok {
		region = r.Region()
	}
	v2space, err := lease.KeyspaceOf(1, region)
	if err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(t0)
	running := 0 // keepers started: one loop each on clk
	start := func(holder string, rng, v2 lease.Range) (*lease.Keeper, *snowfence.Generator) {
		t.Helper()
		stop := driveClock(ctx, clk, func() int { return running + 1 }, 50*time.Millisecond)
		k, err := StartKeeper(ctx, lease.KeeperConfig{
			Store: s.adminReopen(t, st), Holder: holder, Range: &rng, LayoutRanges: map[string]lease.Range{"v2": v2}, Region: region,
			Schedule: sched, Clock: clk, Lead: lead, MaxWait: 2 * time.Second,
		})
		stop()
		running++
		if err != nil {
			t.Fatalf("keeper %s: %v", holder, err)
		}
		t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) }) // after a failure: release every reservation
		g, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
		if err != nil {
			t.Fatal(err)
		}
		return k, g
	}

	// A range v2 cannot hold, with none for v2: refused at start.
	if _, err := StartKeeper(ctx, lease.KeeperConfig{
		Store: st, Holder: "c", Range: &lease.Range{Lo: 700, Hi: 700}, Region: region, Schedule: sched, Clock: clk, Lead: lead,
	}); !errors.Is(err, lease.ErrInvalid) || !errors.Is(err, snowfence.ErrPlacement) || !strings.Contains(err.Error(), "KeeperConfig.LayoutRanges") {
		t.Fatalf("StartKeeper with range 700-700 across the cutover to v2 and none for v2: %v, want ErrInvalid/ErrPlacement naming LayoutRanges", err)
	}

	// The only v2 number B may take is held by another claim.
	sib, err := st.Keyspace(v2space)
	if err != nil {
		t.Fatal(err)
	}
	blocker := MustClaim(t, sib, lease.ClaimRequest{Holder: "blocker", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: t0.UnixMilli(),
		LeaseFor: time.Hour, MaxAhead: time.Hour, Schedule: sched.String()})

	kA, gA := start("a", lease.Range{Lo: 600, Hi: 600}, lease.Range{Lo: 0, Hi: 511})
	kB, gB := start("b", lease.Range{Lo: 601, Hi: 601}, lease.Range{Lo: 5, Hi: 5})
	seen := map[snowfence.ID]string{}
	var lastA snowfence.ID
	take := func(who string, g *snowfence.Generator, n int) []snowfence.ID {
		t.Helper()
		ids, err := g.NextN(context.Background(), n)
		if err != nil {
			t.Fatalf("%s at %s: NextN(%d): %v", who, clk.Time().Format(time.RFC3339Nano), n, err)
		}
		for _, id := range ids {
			if prev, ok := seen[id]; ok {
				t.Fatalf("ID %d issued by %s and %s", id, prev, who)
			}
			seen[id] = who
		}
		return ids
	}
	increasing := func(ids []snowfence.ID) {
		t.Helper()
		for _, id := range ids {
			if id <= lastA {
				t.Fatalf("A issued %d after %d", id, lastA)
			}
			lastA = id
		}
	}
	decodes := func(id snowfence.ID, layout string, region, machine int) {
		t.Helper()
		d, err := sched.Decode(id)
		if err != nil || d.Layout != layout || d.RegionNumber != region || d.Machine != machine {
			t.Fatalf("ID %d decodes to %+v (%v), want layout %s, region %d, machine %d", id, d, err, layout, region, machine)
		}
	}
	// Each keeper is one loop asleep on the clock whatever it holds; a
	// generator waiting for the next tick adds one.
	loops := func() int { return 2 }
	// Each wait has a bound of its own: the sequence takes hundreds of
	// them (13 min of fake time in 1 s steps on the tables), and one
	// context for them all made the whole sequence race a wall clock.
	settle := func(n int) {
		t.Helper()
		wctx, cancel := context.WithTimeout(t.Context(), callTimeout)
		defer cancel()
		if err := clk.BlockUntilWaiters(wctx, n); err != nil {
			t.Fatalf("at %s, %d goroutines asleep on the clock, want %d: %v", clk.Time().Format(time.RFC3339Nano), clk.Waiters(), n, err)
		}
	}
	advanceTo := func(to time.Time) {
		t.Helper()
		for clk.Time().Before(to) {
			settle(loops())
			clk.Advance(min(time.Second, to.Sub(clk.Time())))
		}
		settle(loops())
	}

	// Both claimed at t0: their first grants wait out the store's notice
	// window.
	advanceTo(t0.Add(st.MaxNoticeWindow()))
	first := take("a", gA, 100)
	for _, id := range first {
		decodes(id, "v1", 0, 600)
	}
	increasing(first)
	if st := kA.Status(); st.Next != nil {
		t.Fatalf("status before the lead window: %+v, want no next number", st)
	}
	advanceTo(T.Add(-lead).Add(2 * time.Second))
	next := kA.Status().Next
	if next == nil || next.State != lease.StateHeld || next.Layout != "v2" || next.Machine < 0 || next.Machine > 511 {
		t.Fatalf("A's status inside the lead window: %+v, want a v2 number held", kA.Status())
	}
	v2A := next.Machine
	// Each number's grants stay within its layout's instants, whichever
	// instant they are asked for.
	g1, err1 := kA.GrantAt(T.UnixMilli() - 1)
	g2, err2 := kA.GrantAt(T.UnixMilli())
	if err1 != nil || err2 != nil || g1.Machine != 600 || g1.LimitMs > T.UnixMilli() || g2.Machine != v2A || g2.StartMs < T.UnixMilli() {
		t.Fatalf("A's grants for T-1 ms and T: %+v (%v), %+v (%v); want machine 600 ending by T and machine %d starting at T", g1, err1, g2, err2, v2A)
	}
	if st := kB.Status(); st.Next == nil || st.Next.State != lease.StateClaiming {
		t.Fatalf("B's status inside the lead window, its v2 number taken: %+v, want next claiming", st)
	}

	// Fill tick T-1 ms up to 500 short of v1's 4,096, then a batch of
	// 1,000 across T.
	advanceTo(T.Add(-time.Millisecond))
	increasing(take("a", gA, 1000))
	increasing(take("a", gA, 1000))
	increasing(take("a", gA, 1000))
	increasing(take("a", gA, 596))
	take("b", gB, 10)
	type result struct {
		ids []snowfence.ID
		err error
	}
	done := make(chan result, 1)
	go func() {
		ids, err := gA.NextN(context.Background(), 1000)
		done <- result{ids, err}
	}()
	settle(loops() + 1) // the batch waits for tick T
	clk.Advance(time.Millisecond)
	r := <-done
	if r.err != nil {
		t.Fatalf("NextN(1000) across T: %v (status %+v)", r.err, kA.Status())
	}
	for i, id := range r.ids {
		if seen[id] != "" {
			t.Fatalf("ID %d issued twice", id)
		}
		seen[id] = "a"
		if i < 500 {
			decodes(id, "v1", 0, 600)
			if id.Time().UnixMilli() != T.UnixMilli()-1 {
				t.Fatalf("ID %d of the batch at %s, want T-1 ms", i, id.Time())
			}
		} else {
			decodes(id, "v2", region, v2A)
			if id.Time().UnixMilli() != T.UnixMilli() {
				t.Fatalf("ID %d of the batch at %s, want T", i, id.Time())
			}
		}
	}
	increasing(r.ids)
	settle(loops())

	// B has no v2 number at T: refused with the reason, nothing issued.
	if _, err := gB.Next(context.Background()); !errors.Is(err, snowfence.ErrFenced) || !strings.Contains(err.Error(), "v2") {
		t.Fatalf("B at T without a v2 number: %v, want ErrFenced naming layout v2", err)
	}
	// A goes on under v2; its v1 number was released at T, with T (the
	// cutover, where its grants ended) as its mark.
	advanceTo(T.Add(time.Second))
	after := take("a", gA, 100)
	for _, id := range after {
		decodes(id, "v2", region, v2A)
	}
	increasing(after)
	if rec := MustGet(t, st, 600); rec.Held() || rec.MarkMs != T.UnixMilli() {
		t.Fatalf("v1 machine 600 after T: %+v, want released with mark T (%d)", rec, T.UnixMilli())
	}
	if rec := MustGet(t, sib, v2A); !rec.Held() || rec.Holder != "a" {
		t.Fatalf("v2 machine %d after T: %+v, want held by a", v2A, rec)
	}
	// B recovers once its v2 number is free.
	MustRelease(t, sib, blocker, blocker.StartMs)
	var recovered bool
	for range 10 + int(st.MaxNoticeWindow()/time.Second) { // its claim, then the claim's notice window
		advanceTo(clk.Time().Add(time.Second))
		if ids, err := gB.NextN(context.Background(), 10); err == nil {
			for _, id := range ids {
				if prev := seen[id]; prev != "" {
					t.Fatalf("ID %d issued by %s and b", id, prev)
				}
				seen[id] = "b"
				decodes(id, "v2", region, 5)
			}
			recovered = true
			break
		}
	}
	if !recovered {
		t.Fatalf("B never issued after its v2 number was freed: %+v", kB.Status())
	}
	gA.Close()
	gB.Close()
	if err := kA.Close(ctxFor(t), gA.LastIssued()); err != nil {
		t.Errorf("A: Close: %v", err)
	}
	if err := kB.Close(ctxFor(t), gB.LastIssued()); err != nil {
		t.Errorf("B: Close: %v", err)
	}
	if n := len(seen); n != 100+3596+1000+10+100+10 {
		t.Errorf("%d distinct IDs, want %d", n, 100+3596+1000+10+100+10)
	}
	t.Logf("cutover at %s: A v1 600 → v2 %d, B v1 601 → v2 5 after a refusal at T; %d IDs, none twice", T.Format(time.RFC3339), v2A, len(seen))
}
