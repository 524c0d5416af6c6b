package pgstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/pgstore"
)

// stepHolder is one process of TestTableHolderClockStepAfterRestore: a
// keeper on number 37 and its generator, on a fake clock.
type stepHolder struct {
	t   *testing.T
	k   *lease.Keeper
	g   *snowfence.Generator
	clk *fakeclock.Clock
	ids []snowfence.ID
}

func startStepHolder(t *testing.T, s lease.Store, clk *fakeclock.Clock, name string, boot func() time.Duration) *stepHolder {
	t.Helper()
	kc := lease.KeeperConfig{Store: s, Holder: name, Range: &lease.Range{Lo: 37, Hi: 37}, Clock: clk, Boottime: boot}
	pgstore.Timings().Apply(&kc)
	k, err := leasetest.StartKeeper(t.Context(), kc)
	if err != nil {
		t.Fatalf("%s: StartKeeper: %v", name, err)
	}
	var g *snowfence.Generator
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
	g, err = snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, clk)
	return &stepHolder{t: t, k: k, g: g, clk: clk}
}

func (h *stepHolder) step(d time.Duration) {
	settle(h.t, h.clk)
	h.clk.Advance(d)
	settle(h.t, h.clk)
}

func (h *stepHolder) try(n int) int {
	ids, err := h.g.NextN(context.Background(), n)
	if err != nil {
		return 0
	}
	h.ids = append(h.ids, ids...)
	return len(ids)
}

// issuingJustRenewed steps h until its grant has started and its keeper
// renewed at the clock's present reading.
func (h *stepHolder) issuingJustRenewed() {
	for range 2000 { // up to 500 s: a claim's first grant waits the tables' 4 min 40 s
		h.step(250 * time.Millisecond)
		g, err := h.k.Grant()
		if err == nil && h.clk.Now().WallMs >= g.StartMs && h.k.Status().LastRenewal.Equal(h.clk.Time().Truncate(time.Millisecond)) {
			return
		}
	}
	h.t.Fatalf("not issuing: %+v", h.k.Status())
}

// snapshotRows copies the lease table's and journal's rows beside them;
// the returned func puts them back.
func snapshotRows(t *testing.T, pool *pgxpool.Pool, table string) func() {
	t.Helper()
	var tables []string
	for _, n := range []string{table, table + "_claims"} {
		var ok bool
		if err := pool.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", n).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		tables = append(tables, n)
		id, snap := pgx.Identifier{n}.Sanitize(), pgx.Identifier{n + "_snap"}.Sanitize()
		if _, err := pool.Exec(t.Context(), "CREATE TABLE "+snap+" AS SELECT * FROM "+id); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+snap) })
	}
	return func() {
		tx, err := pool.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tables {
			id, snap := pgx.Identifier{n}.Sanitize(), pgx.Identifier{n + "_snap"}.Sanitize()
			if _, err := tx.Exec(t.Context(), "DELETE FROM "+id); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(t.Context(), "INSERT INTO "+id+" SELECT * FROM "+snap); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTableHolderClockStepAfterRestore: a running holder whose clock
// misbehaves after the store went back never mints a claimer's IDs, on
// PostgreSQL with the production table timings (5 min lease and reserve,
// 5 s renewals, 4 min 10 s self-fence, 5 s margin; a claim waits 4 min
// 40 s): the lease table and its journal are put back to their rows from
// before A's claim (as a restore of the data would) while A runs; B, a
// process started at once, claims A's number, free again, and issues from
// its claim + 4 min 40 s. A's timestamps are its wall clock, bounded
// by its mark, 4 min 55 s ahead; its self-fence reads the monotonic clock.
//
// The clocks move by the notice window and 10 s (4 min 50 s): past B's
// first grant, within A's limit.
//
//   - "suspend/watchdog": A's host sleeps 4 min 50 s right after a renewal
//     (monotonic clock stopped; wall and boot clocks count the sleep) and
//     wakes with a correct wall clock. Its keeper's CLOCK_BOOTTIME watchdog
//     (a 200 ms real-time ticker) fences it at its next tick; A mints one
//     batch at once on waking.
//   - "suspend/no watchdog": the same, A's keeper given a clock of its own
//     (KeeperConfig.Clock set: no watchdog), so A issues until its next
//     renewal, 5 s of monotonic time after waking, fails.
//   - "forward step": A is not suspended; its wall clock steps 4 min 50 s
//     forward right after B's claim. It issues on the jumped clock until
//     its next renewal, 5 s later.
//
// The stories are lease's TestSuspendedHolderResumesAfterRestore and
// TestForwardStepOfRunningHolderAfterRestore (found by an adversarial
// review), on a real lease table.
func TestTableHolderClockStepAfterRestore(t *testing.T) {
	for _, c := range []struct {
		name     string
		suspend  bool
		watchdog bool
	}{
		{"suspend/watchdog", true, true},
		{"suspend/no watchdog", true, false},
		{"forward step", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			const by = pgstore.MaxNoticeWindow + 10*time.Second
			pool := testPool(t, 8)
			table := newTable(t, pool)
			sA := openStore(t, pool, table)
			restore := snapshotRows(t, pool, table)

			t0 := time.Now().Truncate(time.Second)
			clkA := fakeclock.New(t0)
			var slept atomic.Int64
			var boot func() time.Duration
			if c.watchdog {
				boot = func() time.Duration { return clkA.Now().Mono + time.Duration(slept.Load()) }
			}
			a := startStepHolder(t, sA, clkA, "A", boot)
			a.issuingJustRenewed()
			a.try(100)
			ga, _ := a.k.Grant()

			restore()
			clkB := fakeclock.New(clkA.Time())
			b := startStepHolder(t, openStore(t, pool, table), clkB, "B", nil)
			claimed := clkB.Now().WallMs
			if l := b.k.Lease(); l == nil || l.Machine != 37 {
				t.Fatalf("B holds %+v, want 37", l)
			}
			var aN, bN int
			if c.suspend {
				for clkB.Now().WallMs < claimed+by.Milliseconds() {
					bN += b.try(10)
					b.step(250 * time.Millisecond)
				}
				slept.Add(int64(by))
				clkA.Step(by)
				if clkA.Now().WallMs >= ga.LimitMs {
					t.Fatalf("A woke past its limit")
				}
				aN += a.try(1000)
				bN += b.try(1000)
				if c.watchdog {
					var fe *snowfence.FencedError
					deadline := time.Now().Add(5 * time.Second)
					for time.Now().Before(deadline) {
						if _, err := a.g.Next(context.Background()); errors.As(err, &fe) {
							break
						}
						time.Sleep(10 * time.Millisecond)
					}
					t.Logf("watchdog fenced A: %v", fe)
				} else {
					for range 60 {
						aN += a.try(100)
						bN += b.try(100)
						a.step(250 * time.Millisecond)
						b.step(250 * time.Millisecond)
					}
				}
			} else {
				clkA.Step(by)
				for range int((by + 20*time.Second) / (250 * time.Millisecond)) {
					aN += a.try(100)
					bN += b.try(100)
					a.step(250 * time.Millisecond)
					b.step(250 * time.Millisecond)
				}
			}
			first := int64(-1)
			if len(b.ids) > 0 {
				first = snowfence.V1().TimeOf(b.ids[0]).UnixMilli() - claimed
			}
			t.Logf("A minted %d after the restore (status %+v); B minted %d, first at claim + %d ms", aN, a.k.Status(), bN, first)
			seen := map[snowfence.ID]bool{}
			for _, id := range a.ids {
				seen[id] = true
			}
			dups := 0
			for _, id := range b.ids {
				if seen[id] {
					dups++
				}
			}
			if dups > 0 {
				t.Errorf("%d of B's %d IDs were A's too", dups, len(b.ids))
			}
		})
	}
}
