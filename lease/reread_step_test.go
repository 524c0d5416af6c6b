package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// The re-read of an extension of unknown outcome
// (hold.reread) with A's wall clock stepped while the outcome is unknown.
// A holds 7 and mints; one renewal's reply is lost (the write applied, or
// not); its wall clock is stepped in flight or during the re-read, and the
// store is restored (7 free, no mark) at one of three moments; B, started
// at once on a correct clock, claims 7 and waits its notice floor. Both
// mint; no ID may be issued twice. (The second of two paths an adversarial
// review found; the first is cutover_keeper_test.go's
// TestClockStepAcrossCutover.)

// errLostReply is an extension whose outcome the keeper cannot know.
var errLostReply = errors.New("connection reset by peer (the reply was lost)")

// rereadStepStub is A's view of a stub store: its next armed Extend applies
// (or not) and answers errLostReply, letting the timeout's second pass and
// stepping the wall clock; the Get that follows steps the clock again and
// may find the store restored meanwhile.
type rereadStepStub struct {
	*cutStub
	clk             *fakeclock.Clock
	armed           atomic.Bool
	applied         bool          // the lost extension was written
	inFlight, inGet time.Duration // wall steps: after the write, before the read
	// restoreAt: "flight" restores the store after the write, "get" just
	// before the re-read, "" after the re-read decided.
	restoreAt string
	restored  atomic.Bool
}

func (s *rereadStepStub) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if !s.armed.Load() {
		return s.cutStub.Extend(ctx, l, markMs, leaseFor)
	}
	if s.applied {
		if _, err := s.cutStub.Extend(ctx, l, markMs, leaseFor); err != nil {
			return nil, err
		}
	}
	s.clk.Advance(time.Second) // the request timeout passes
	s.clk.Step(s.inFlight)
	if s.restoreAt == "flight" {
		s.stubStore.restore()
		s.restored.Store(true)
	}
	return nil, errLostReply
}

func (s *rereadStepStub) Get(ctx context.Context, n int) (lease.Record, error) {
	if s.armed.Swap(false) {
		s.clk.Step(s.inGet)
		if s.restoreAt == "get" {
			s.stubStore.restore()
			s.restored.Store(true)
		}
	}
	return s.cutStub.Get(ctx, n)
}

// TestJumpFenceStepDuringReread: a step while an extension's outcome is
// unknown (hold.reread) counts against the grant the re-read publishes, and
// no ID is issued twice. The interleavings, each on etcd's windows (2 s
// renewals, 5 s self-fence, 8 s notice floor). B's clock is correct: A's
// minus the net of its steps. jumped: A's grant must be refused as
// clock-jumped right after the re-read decided.
//
//   - applied, +7 s in flight, A then cut off: the re-read takes the write
//     as A's (same holder, token, claim, a mark at least the one asked)
//     and must publish it with the send's readings, so that the step
//     counts; with the re-read's or the reply's, A would stamp 7 s ahead
//     until its self-fence, past B's floor.
//   - applied, +150 ms in flight; applied, +60 ms in flight and +60 ms
//     during the re-read: over the fence, alone or added up.
//   - applied, −150 ms in flight; applied, +90 ms in flight: no fence (a
//     step back; a gain under 100 ms); A issues until its self-fence or
//     its next renewal, which loses it once the store is restored.
//   - not applied, −30 s before the send, +37 s during the re-read: the
//     mark asked for is the old one (the clock reads 30 s back), so the
//     record, unchanged, is taken as the extension (rec.MarkMs ≥ mark) with
//     the send's readings, and the 37 s gained since count; A's clock ends
//     7 s ahead of B's.
//   - applied, +7 s in flight, the store restored in flight; not applied,
//     +7 s during the re-read, restored just before it: the re-read finds
//     the number free and loses it (ErrLost).
func TestJumpFenceStepDuringReread(t *testing.T) {
	for _, c := range []struct {
		name            string
		applied         bool
		before          time.Duration // wall step before the send
		inFlight, inGet time.Duration
		restoreAt       string
		cut             bool // A cut off after the re-read decided
		jumped          bool
	}{
		{"applied, +7 s in flight", true, 0, 7 * time.Second, 0, "", true, true},
		{"applied, +150 ms in flight", true, 0, 150 * time.Millisecond, 0, "", true, true},
		{"applied, +60 ms in flight, +60 ms in the re-read", true, 0, 60 * time.Millisecond, 60 * time.Millisecond, "", true, true},
		{"applied, −150 ms in flight", true, 0, -150 * time.Millisecond, 0, "", true, false},
		{"applied, +90 ms in flight, restored after", true, 0, 90 * time.Millisecond, 0, "", false, false},
		{"not applied, −30 s before, +37 s in the re-read", false, -30 * time.Second, 0, 37 * time.Second, "", true, true},
		{"applied, +7 s in flight, restored in flight", true, 0, 7 * time.Second, 0, "flight", false, false},
		{"not applied, +7 s in the re-read, restored before it", false, 0, 0, 7 * time.Second, "get", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &stubStore{machine: 7}
			clkA := fakeclock.New(t0)
			sa := &rereadStepStub{cutStub: &cutStub{stubStore: s}, clk: clkA, applied: c.applied,
				inFlight: c.inFlight, inGet: c.inGet, restoreAt: c.restoreAt}
			a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(false))
			untilRenewed(a, clkA, a.step)
			a.mint(10)
			clkA.Step(c.before)
			sa.armed.Store(true)
			for range 40 {
				a.step(250 * time.Millisecond)
				if !sa.armed.Load() {
					break
				}
			}
			if sa.armed.Load() {
				t.Fatal("no renewal in 10 s")
			}
			a.step(time.Millisecond) // the keeper publishes what it decided
			st := a.k.Status()
			_, err := a.g.Next(context.Background())
			t.Logf("after the re-read: state %s, losses %d, last error %q; Next: %v", st.State, st.Losses, st.LastError, err)
			switch {
			case c.restoreAt != "" && st.Losses == 0:
				t.Errorf("the re-read found the store restored but A kept the lease: %+v", st)
			case c.jumped && !isJumped(err):
				t.Errorf("A's first call after the re-read: %v, want refused as clock-jumped", err)
			}
			if c.cut {
				sa.cut.Store(true)
			}
			offset := c.before + c.inFlight + c.inGet
			b, _, claimed := restoreAndClaimB(t, s, s, clkA.Time().Add(-offset), false)
			aN, bN := mintBoth(a, b, 120, nil) // 30 s
			t.Logf("a minted %d after the restore (refusals %v); b minted %d, first at claim+%d ms; a's last at claim+%d ms",
				aN, a.g.Stats().Refused, bN, firstAfter(b.ids, claimed), lastAfter(a, claimed))
			if bN == 0 {
				t.Errorf("b minted nothing in 30 s")
			}
			checkUnique(t, a.ids, b.ids)
		})
	}
}

// isJumped reports whether err is the generator's clock-jumped refusal.
func isJumped(err error) bool {
	var fe *snowfence.FencedError
	return errors.As(err, &fe) && fe.Reason == "clock-jumped"
}
