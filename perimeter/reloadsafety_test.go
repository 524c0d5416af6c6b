package perimeter

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/testpki"
)

// What a reload reads, and how it reports a failure: only regular files,
// each up to its cap, compared by content; a failure logged once, shown by
// the metrics until a good file loads; Close bounded.

// errorLog records the messages logged at Error.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelError }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	l.msgs = append(l.msgs, msg)
	return nil
}
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

func (l *errorLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// callersRig is a perimeter with only a callers file, polling off (tests
// call Reload), on a fake clock, its metrics on reg and its errors in log.
type callersRig struct {
	p     *Perimeter
	path  string
	clock *fakeclock.Clock
	log   *errorLog
	reg   *prometheus.Registry
}

func newCallersRig(t *testing.T, body string) *callersRig {
	t.Helper()
	r := &callersRig{path: filepath.Join(t.TempDir(), "callers.json"), clock: fakeclock.New(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC)),
		log: &errorLog{}, reg: prometheus.NewRegistry()}
	writeAtomic(t, r.path, []byte(body))
	p, err := New(Config{CallersFile: r.path, PollInterval: -1, Clock: r.clock, Logger: slog.New(r.log), Registerer: r.reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r.p = p
	return r
}

// allows reports whether the callers file in force lets id connect.
func (r *callersRig) allows(id string) bool {
	_, _, ok := r.p.callers.Load().callers.Lookup(id)
	return ok
}

// reloadWithin runs Reload and fails the test if it has not returned
// within 10 s: a hang becomes a failure, not a stuck test.
func reloadWithin(t *testing.T, p *Perimeter) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Reload() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Reload has not returned after 10 s: it blocks")
		return nil
	}
}

// replace puts what make creates at path in place of the file there.
func replace(t *testing.T, path string, make func(string) error) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := make(path); err != nil {
		t.Fatal(err)
	}
}

const allowOrders = `{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 1, "burst": 1000}}}`

// TestReloadRefusesAnOversizeFile: a callers file or CA bundle one byte
// over its cap is refused, although it is valid (padded with space), and
// the last good configuration stays; one at the cap loads.
func TestReloadRefusesAnOversizeFile(t *testing.T) {
	r := newCallersRig(t, allowOrders)
	deny := []byte(`{"default": "deny", "callers": {}}`)
	pad := func(b []byte, n int) []byte {
		return append(append([]byte{}, b...), bytes.Repeat([]byte(" "), n-len(b))...)
	}
	writeAtomic(t, r.path, pad(deny, MaxCallersFileSize+1))
	err := r.p.Reload()
	if !errors.Is(err, ErrFileTooLarge) || !strings.Contains(err.Error(), r.path) {
		t.Fatalf("Reload of a callers file over the cap: %v; want ErrFileTooLarge naming %s", err, r.path)
	}
	if !r.allows(orders) {
		t.Fatal("the oversize callers file took effect")
	}
	writeAtomic(t, r.path, pad(deny, MaxCallersFileSize))
	if err := r.p.Reload(); err != nil {
		t.Fatalf("Reload of a callers file at the cap: %v", err)
	}
	if r.allows(orders) {
		t.Fatal("the callers file at the cap did not take effect")
	}

	tr := newRig(t, defaultCallers, nil)
	next := testpki.NewCA(t, "next callers CA")
	writeAtomic(t, tr.caFile, pad(next.CertPEM, MaxPEMFileSize+1))
	if err := tr.p.Reload(); !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("Reload of a CA bundle over the cap: %v; want ErrFileTooLarge", err)
	}
	if _, _, err := tr.post(tr.client(tr.caller(orders), nil), "/v1/ids"); err != nil {
		t.Fatalf("the oversize CA bundle took effect: the old CA's caller is refused: %v", err)
	}
}

// endless is a reader that never ends, counting the bytes it gave.
type endless struct{ n atomic.Int64 }

func (e *endless) Read(b []byte) (int, error) {
	clear(b)
	e.n.Add(int64(len(b)))
	return len(b), nil
}

// TestReadLimitedStopsAtTheCap: a source that never ends (a file that
// grows, or reports no size) is read up to one byte past the cap, then
// refused.
func TestReadLimitedStopsAtTheCap(t *testing.T) {
	var src endless
	_, err := readLimited(&src, "callers.json", MaxCallersFileSize)
	if !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("readLimited of an endless source: %v; want ErrFileTooLarge", err)
	}
	if n := src.n.Load(); n > MaxCallersFileSize+1 {
		t.Fatalf("read %d bytes of an endless source; want at most the cap + 1 (%d)", n, MaxCallersFileSize+1)
	}
}

// TestInPlaceEditKeepingSizeAndModTime: an edit that keeps the file's
// size, modification time and inode is still reloaded: the content is
// what is compared.
func TestInPlaceEditKeepingSizeAndModTime(t *testing.T) {
	r := newCallersRig(t, allowOrders)
	before, err := os.Stat(r.path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(allowOrders, `"rate": 1,`, `"rate": 2,`, 1)
	if len(edited) != len(allowOrders) || edited == allowOrders {
		t.Fatal("the edit must keep the size")
	}
	if err := os.WriteFile(r.path, []byte(edited), 0o600); err != nil { // in place: same inode
		t.Fatal(err)
	}
	if err := os.Chtimes(r.path, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
		t.Fatal("the edit changed the size, modification time or inode")
	}
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	if pol, _, _ := r.p.callers.Load().callers.Lookup(orders); pol.Rate != 2 {
		t.Fatalf("orders' rate %v after the edit, want 2: an edit keeping size and modification time was not reloaded", pol.Rate)
	}
}

// TestFailedReloadReportedOnce: a bad file keeps the last good callers,
// is logged and counted once however many periods it stays, is shown by
// snowfence_perimeter_reload_failing and a last-success time that stops,
// and a different failure is reported again; a good file clears it.
func TestFailedReloadReportedOnce(t *testing.T) {
	r := newCallersRig(t, allowOrders)
	failing := func() float64 { return counter(t, r.p.metrics.failing.WithLabelValues(unitCallers)) }
	errorsCounted := func() float64 { return counter(t, r.p.metrics.reloads.WithLabelValues(unitCallers, "error")) }
	lastSuccess := func() float64 { return counter(t, r.p.metrics.lastSuccess.WithLabelValues(unitCallers)) }
	now := func() float64 { return float64(r.clock.Now().WallMs) / 1e3 }

	if got := lastSuccess(); got != now() {
		t.Fatalf("last success %v after the initial load, want %v", got, now())
	}
	r.clock.Advance(5 * time.Second)
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := lastSuccess(); got != now() {
		t.Fatalf("last success %v after an unchanged good file was read, want %v", got, now())
	}
	good := now()

	writeAtomic(t, r.path, []byte(`{"default": "deny", "callers": {`))
	for i := range 4 {
		r.clock.Advance(5 * time.Second)
		err := r.p.Reload()
		if i == 0 && !errors.Is(err, ErrInvalidCallers) {
			t.Fatalf("Reload of a bad file: %v; want ErrInvalidCallers", err)
		}
		if i > 0 && err != nil {
			t.Fatalf("Reload %d of the same bad file: %v; want it reported once", i+1, err)
		}
	}
	if n := len(r.log.lines()); n != 1 {
		t.Fatalf("%d error lines over 4 periods of one bad file, want 1: %q", n, r.log.lines())
	}
	if failing() != 1 || errorsCounted() != 1 || lastSuccess() != good {
		t.Fatalf("failing %v, errors counted %v, last success %v; want 1, 1 and %v (unchanged)", failing(), errorsCounted(), lastSuccess(), good)
	}
	if !r.allows(orders) {
		t.Fatal("the bad file replaced the last good callers")
	}

	replace(t, r.path, func(p string) error { return os.Mkdir(p, 0o700) }) // another failure
	if err := r.p.Reload(); !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), "a directory") {
		t.Fatalf("Reload of a directory: %v; want ErrNotRegularFile naming a directory", err)
	}
	if err := r.p.Reload(); err != nil {
		t.Fatalf("second Reload of the directory: %v; want it reported once", err)
	}
	if n := len(r.log.lines()); n != 2 || !strings.Contains(r.log.lines()[1], r.path) {
		t.Fatalf("error lines %q; want a second one, naming %s", r.log.lines(), r.path)
	}

	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, r.path, []byte(`{"default": "deny", "callers": {}}`))
	r.clock.Advance(5 * time.Second)
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	if failing() != 0 || lastSuccess() != now() || r.allows(orders) {
		t.Fatalf("after a good file: failing %v, last success %v (want 0, %v), orders allowed %v", failing(), lastSuccess(), now(), r.allows(orders))
	}
	if _, err := r.reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseDoesNotWaitForAStuckReload: while a reload is stuck (here in
// the test's hook; in life a read on a hung filesystem), SetHolders still
// returns, and Close returns ErrReloadStuck once closeWait has passed on
// the perimeter's clock instead of waiting for ever.
func TestCloseDoesNotWaitForAStuckReload(t *testing.T) {
	r := newCallersRig(t, allowOrders)
	var armed atomic.Bool
	stuck, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	p, err := New(Config{CallersFile: r.path, PollInterval: time.Second, Clock: r.clock, onReload: func(string, error) {
		if armed.CompareAndSwap(true, false) {
			close(stuck)
			<-release
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	writeAtomic(t, r.path, []byte(`{"default": "deny", "callers": {}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	select {
	case <-stuck:
	case <-ctx.Done():
		t.Fatal("the poll did not reload within 10 s")
	}

	set := make(chan struct{})
	go func() { p.SetHolders(3); close(set) }()
	select {
	case <-set:
	case <-ctx.Done():
		t.Fatal("SetHolders blocked behind the stuck reload")
	}

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	if err := r.clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal("Close is not waiting on the clock for its bound: ", err)
	}
	r.clock.Advance(closeWait)
	select {
	case err := <-closed:
		if !errors.Is(err, ErrReloadStuck) || !strings.Contains(err.Error(), unitCallers) {
			t.Fatalf("Close: %v; want ErrReloadStuck naming %q", err, unitCallers)
		}
	case <-ctx.Done():
		t.Fatal("Close waited on the stuck reload")
	}
}
