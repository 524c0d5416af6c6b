package lease_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// TestHighWaterFile: Store replaces the file and Load reads it back; a
// missing file is no mark at a first start and a refusal otherwise; a file
// that is not a high-water file, or whose two forms of the mark disagree
// (a digit damaged in place), is refused, never read as another mark.
func TestHighWaterFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data.highwater")
	first, later := lease.NewHighWaterFile(path, true), lease.NewHighWaterFile(path, false)
	if ms, err := first.Load(); ms != 0 || err != nil {
		t.Fatalf("missing file at a first start: %d, %v; want 0, nil", ms, err)
	}
	if _, err := later.Load(); !errors.Is(err, lease.ErrHighWater) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file after a first start: %v, want ErrHighWater and fs.ErrNotExist", err)
	}
	mark := t0.Add(90 * time.Second).UnixMilli()
	for _, ms := range []int64{mark, mark + 1, mark - 5000} { // it replaces: lower too
		if err := later.Store(ms); err != nil {
			t.Fatal(err)
		}
		if got, err := later.Load(); got != ms || err != nil {
			t.Fatalf("after Store(%d): Load = %d, %v", ms, got, err)
		}
	}
	b, _ := os.ReadFile(path)
	t.Logf("the file:\n%s", b)
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries after the stores, want only the file (no temporary left)", len(ents))
	}
	good := string(b)
	for name, content := range map[string]string{
		"empty":             "",
		"no header":         strings.SplitN(good, "\n", 2)[1],
		"digit damaged":     strings.Replace(good, "1795", "1794", 1),
		"instant damaged":   strings.Replace(good, "T09", "T08", 1),
		"trailing garbage":  good + "x\n",
		"negative":          "snowfence high-water mark v1\n-1 1969-12-31T23:59:59.999Z\n",
		"not a number pair": "snowfence high-water mark v1\n1795942890000\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, f := range []lease.HighWaterFile{first, later} {
			if ms, err := f.Load(); !errors.Is(err, lease.ErrHighWater) {
				t.Errorf("%s: Load = %d, %v; want ErrHighWater", name, ms, err)
			}
		}
	}
}

// hwHolder starts a keeper on s with hw as its HighWater, and its
// generator, on clk, and lets the clock run until it issues.
func hwHolder(t *testing.T, s lease.Store, clk *fakeclock.Clock, name string, hw lease.HighWater) *holder {
	t.Helper()
	return mustHolder(t, s, clk, name, lease.Range{Lo: 7, Hi: 7}, func(kc *lease.KeeperConfig) { kc.HighWater = hw })
}

// TestHighWaterKeepsARestartAboveARestore is issue 25's item 7 on the
// keeper: a process issues on a store that lives and is restored with its
// host (the embedded etcd), and stops; the store is restored to an empty
// copy taken before, and the process restarts with its clock a minute
// behind the last ID it issued (a VM restored with its disk, a clock reset
// at boot). The claim sees no mark; only the high-water file, kept beside
// the store, remembers. The restarted holder issues above everything
// issued before. Fails with snowfence_revert_highwater: it issues a minute
// of IDs again.
func TestHighWaterKeepsARestartAboveARestore(t *testing.T) {
	for _, stop := range []string{"Close", "crash"} {
		t.Run(stop, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "data.highwater")
			s := &stubStore{machine: 7}
			clk := fakeclock.New(t0)
			a := hwHolder(t, s, clk, "a", lease.NewHighWaterFile(path, true))
			for range 30 { // a minute of IDs, renewing
				a.mint(100)
				a.step(2 * time.Second)
			}
			a.mint(100)
			lastMs := a.g.LastIssued()
			rec, err := lease.NewHighWaterFile(path, false).Load()
			if err != nil || rec < lastMs {
				t.Errorf("high-water file holds %d (%v), want at least the end of the last ID issued %d", rec, err, lastMs)
			}
			if stop == "Close" {
				a.g.Close()
				if err := a.k.Close(testCtx(t), a.g.LastIssued()); err != nil {
					t.Fatal(err)
				}
				// Lowered to the end of the last ID issued, but not below
				// the clock plus the store's notice window: another process
				// of the host may go on issuing that long after this one
				// stopped the embedded etcd.
				want := max(lastMs, clk.Now().WallMs+s.MaxNoticeWindow().Milliseconds())
				if rec, _ = lease.NewHighWaterFile(path, false).Load(); rec != want {
					t.Errorf("after Close the file holds %s, want max(the end of the last ID issued %s, now + the notice window) = %s",
						lease.FormatMs(rec), lease.FormatMs(lastMs), lease.FormatMs(want))
				}
			} else {
				// A crash: nothing more runs; its keeper is closed without
				// a release, not knowing what was issued, under a fresh
				// HighWater of the same file kept from lowering it (the
				// process is gone).
				a.g.Close()
				s.mu.Lock()
				s.holder = ""
				s.mu.Unlock()
				a.k.Close(testCtx(t), lease.UnknownIssued)
			}
			s.restore()
			// A minute behind the last ID, to the millisecond (so that the
			// reverted keeper meets IDs it issued then).
			behind := fakeclock.New(time.UnixMilli(lastMs - 1).Add(-time.Minute))
			b := hwHolder(t, s, behind, "b", lease.NewHighWaterFile(path, false))
			ids := b.mint(100)
			if first := snowfence.V1().TimeOf(ids[0]).UnixMilli(); first < lastMs {
				t.Errorf("the restarted holder's first ID is stamped %s, below the end of the last ID issued before, %s",
					lease.FormatMs(first), lease.FormatMs(lastMs))
			}
			checkUnique(t, a.ids, b.ids)
		})
	}
}

// failingHW is a HighWater that records into mark until fail is set, then
// fails every Store.
type failingHW struct {
	mark, stores int64
	fail         bool
}

func (f *failingHW) Load() (int64, error) { return f.mark, nil }

func (f *failingHW) Store(ms int64) error {
	if f.fail {
		return errors.New("disk full")
	}
	f.mark, f.stores = ms, f.stores+1
	return nil
}

// TestHighWaterReservedBeforeUse: the keeper records the mark ahead of the
// store's before it publishes a grant up to it — writing once in several
// renewals, not at each — and when it cannot record it, the grant ends at
// the mark recorded: the generator stops there rather than issue past what
// the file holds. A later renewal that records it lets issuing resume.
func TestHighWaterReservedBeforeUse(t *testing.T) {
	hw := &failingHW{}
	s := &stubStore{machine: 7}
	clk := fakeclock.New(t0)
	h := hwHolder(t, s, clk, "a", hw)
	const renewals = 20
	stores := hw.stores
	for range renewals {
		h.step(2 * time.Second)
		g, err := h.k.Grant()
		if err != nil || g.LimitMs > hw.mark {
			t.Fatalf("grant %+v (%v) ends past the recorded high-water mark %s", g, err, lease.FormatMs(hw.mark))
		}
		h.mint(10)
	}
	if n := hw.stores - stores; n == 0 || n > renewals/2 {
		t.Errorf("%d high-water writes in %d renewals, want some, and at most one in two", n, renewals)
	}
	hw.fail = true
	recorded := hw.mark
	var refusal error
	for i := 0; i < 30 && refusal == nil; i++ {
		h.step(2 * time.Second)
		if g, err := h.k.Grant(); err == nil && g.LimitMs > recorded {
			t.Fatalf("with the high-water mark unrecorded, a grant ends at %s, past the recorded %s", lease.FormatMs(g.LimitMs), lease.FormatMs(recorded))
		}
		if _, err := h.g.NextN(context.Background(), 10); err != nil {
			refusal = err
		}
	}
	var fe *snowfence.FencedError
	if !errors.As(refusal, &fe) || fe.Reason != "mark-reached" {
		t.Fatalf("past the recorded high-water mark: %v, want fenced (mark-reached)", refusal)
	}
	if st := h.k.Status(); !strings.Contains(st.LastError, "disk full") {
		t.Errorf("status %+v, want the failed write as the last error", st)
	}
	hw.fail = false
	h.step(2 * time.Second)
	h.mint(10)
}

// TestHighWaterRefusals: a keeper does not start on a high-water file that
// is corrupt, or missing after a first start, nor on one another keeper of
// the process uses (Close lowers the mark, which is safe only with one
// keeper per file).
func TestHighWaterRefusals(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.highwater")
	os.WriteFile(corrupt, []byte("snowfence high-water mark v1\n1795942890000 2026-11-29T09:01:31.000Z\n"), 0o600)
	for name, hw := range map[string]lease.HighWater{
		"corrupt": lease.NewHighWaterFile(corrupt, true),
		"missing": lease.NewHighWaterFile(filepath.Join(dir, "missing.highwater"), false),
	} {
		_, err := startHolder(t, &stubStore{machine: 7}, fakeclock.New(t0), "a", lease.Range{Lo: 7, Hi: 7},
			func(kc *lease.KeeperConfig) { kc.HighWater = hw })
		if !errors.Is(err, lease.ErrInvalid) || !errors.Is(err, lease.ErrHighWater) {
			t.Errorf("%s high-water file: %v, want ErrInvalid and ErrHighWater", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	shared := filepath.Join(dir, "shared.highwater")
	a := hwHolder(t, &stubStore{machine: 7}, fakeclock.New(t0), "a", lease.NewHighWaterFile(shared, true))
	_, err := startHolder(t, &stubStore{machine: 7}, fakeclock.New(t0), "b", lease.Range{Lo: 7, Hi: 7},
		func(kc *lease.KeeperConfig) { kc.HighWater = lease.NewHighWaterFile(shared, true) })
	if !errors.Is(err, lease.ErrInvalid) || !errors.Is(err, lease.ErrHighWater) {
		t.Errorf("a second keeper on the same high-water file: %v, want ErrInvalid and ErrHighWater", err)
	}
	a.g.Close()
	if err := a.k.Close(testCtx(t), a.g.LastIssued()); err != nil {
		t.Fatal(err)
	}
	// Once the first has closed, the file is free again.
	hwHolder(t, &stubStore{machine: 7}, fakeclock.New(t0), "c", lease.NewHighWaterFile(shared, false))
}

// BenchmarkHighWaterFileStore measures one durable replacement of the
// high-water file (temporary file, fsync, rename, directory fsync): what a
// renewal that raises the mark spends, once in about four renewals, on the
// keeper's loop (never on the generator's path).
func BenchmarkHighWaterFileStore(b *testing.B) {
	f := lease.NewHighWaterFile(filepath.Join(b.TempDir(), "data.highwater"), true)
	ms := t0.UnixMilli()
	for b.Loop() {
		ms++
		if err := f.Store(ms); err != nil {
			b.Fatal(err)
		}
	}
}
