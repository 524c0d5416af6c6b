package lease

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"
)

// A HighWater keeps, where a restore of the store cannot take it back, the
// highest mark a keeper had acknowledged (KeeperConfig.HighWater). It is
// for a store that lives and is restored with the holder's own host — the
// embedded etcd, whose data directory can be copied back from a backup —
// and starts in the same process as the keeper, leaving no moment to raise
// its marks first: a restarted process has no memory of the old marks, and
// with its clock behind the last ID issued, a claim would start below it.
//
// The keeper uses it as the store's mark is used, a reservation written
// before use: every grant it publishes ends at or below the mark recorded
// (raised ahead of the store's mark before the grant is published), and
// every grant starts at or above the mark that was recorded when it
// started. HighWaterFile keeps one in a file.
type HighWater interface {
	// Load returns the mark recorded (Unix ms, exclusive: nothing at or
	// above it was issued), 0 if none is. The keeper calls it once, at its
	// first claim; an error refuses the keeper's start.
	Load() (int64, error)
	// Store records markMs in place of the mark recorded and returns once
	// it would survive a crash of the process or the host. The keeper
	// raises the mark before it issues below it, and lowers it at Close to
	// the end of the last ID issued.
	Store(markMs int64) error
}

// ErrHighWater: a HighWater cannot be used (its mark is missing where one
// must be, unreadable or corrupt, or another keeper of the process uses
// it). The keeper refuses to start on it, wrapping ErrInvalid too.
var ErrHighWater = errors.New("lease: high-water mark unusable")

// highWaterAheadRenewals is how many renewal periods the keeper records the
// mark ahead of the store's mark when it raises it, so that it writes once
// in about that many renewals rather than at every one; a process that
// crashes restarts up to Reserve plus that much above its last renewal.
const highWaterAheadRenewals = 4

// highWater is a keeper's use of its KeeperConfig.HighWater. The zero value
// is ready: load sets it up from the configuration.
type highWater struct {
	mu         sync.Mutex
	hw         HighWater // nil: none (or the fix reverted)
	ahead      time.Duration
	loaded     bool
	floorMs    int64 // recorded when the keeper started: every grant starts at or above it
	recordedMs int64 // recorded now: every grant ends at or below it
	key        any   // this keeper's entry in highWaters.inUse, nil if none
}

// highWaters are the HighWaters keepers of this process use, by key
// (highWaterKey): the keeper lowers its mark at Close, which is safe only if
// no other keeper issues under the same one.
var highWaters = struct {
	sync.Mutex
	inUse map[any]bool
}{inUse: map[any]bool{}}

// highWaterKey is what tells two HighWaters apart: the file's path for one
// that has one (HighWaterFile), the value itself if it is comparable, nil
// (not checked) otherwise.
func highWaterKey(hw HighWater) any {
	if p, ok := hw.(interface{ Path() string }); ok {
		return "path:" + p.Path()
	}
	if reflect.TypeOf(hw).Comparable() {
		return hw
	}
	return nil
}

// load reads the mark c.HighWater recorded, once, and takes it for this
// keeper (none with the fix reverted). nowMs is the keeper's clock, for the
// warning about a mark ahead of it.
func (w *highWater) load(c *KeeperConfig, log *slog.Logger, nowMs int64) error {
	if !c.keepsHighWater() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.loaded {
		return nil
	}
	w.hw, w.ahead = c.HighWater, highWaterAheadRenewals*c.RenewEvery
	key := highWaterKey(w.hw)
	if key != nil {
		highWaters.Lock()
		taken := highWaters.inUse[key]
		if !taken {
			highWaters.inUse[key] = true
		}
		highWaters.Unlock()
		if taken {
			return fmt.Errorf("%w: %w: another keeper of this process keeps its high-water mark in the same place (%v); give each keeper its own",
				ErrInvalid, ErrHighWater, key)
		}
	}
	ms, err := w.hw.Load()
	if err != nil {
		w.releaseLocked(key)
		if !errors.Is(err, ErrHighWater) {
			err = fmt.Errorf("%w: %w", ErrHighWater, err)
		}
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	w.loaded, w.key, w.floorMs, w.recordedMs = true, key, ms, ms
	if ms > nowMs {
		log.Warn("the high-water mark is ahead of this clock: grants start there (this host's clock is behind IDs issued before)",
			"high_water", FormatMs(ms), "ahead_ms", ms-nowMs)
	}
	return nil
}

// releaseLocked gives key back. Called with w.mu held.
func (w *highWater) releaseLocked(key any) {
	if key == nil {
		return
	}
	highWaters.Lock()
	delete(highWaters.inUse, key)
	highWaters.Unlock()
}

// floor is where every grant starts at the earliest: the mark recorded when
// the keeper started (0 with no HighWater).
func (w *highWater) floor() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.floorMs
}

// limit is where every grant ends at the latest: the mark recorded now
// (no bound with no HighWater).
func (w *highWater) limit(def int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.loaded {
		return def
	}
	return min(def, w.recordedMs)
}

// reserve records a mark at or above markMs — the store's mark just
// acknowledged — before a grant up to it is published, markMs plus ahead,
// unless one is recorded already. On a failure the mark recorded stays, and
// grants end there (limit) until a later renewal records one.
func (w *highWater) reserve(markMs int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.loaded || markMs <= w.recordedMs {
		return nil
	}
	to := markMs + w.ahead.Milliseconds()
	if err := w.hw.Store(to); err != nil {
		return fmt.Errorf("%w: recording %s: %w", ErrHighWater, FormatMs(to), err)
	}
	w.recordedMs = to
	return nil
}

// settle lowers the recorded mark to the end of the last ID issued, but
// never below nowMs plus the store's notice window (noticeMs), nor below
// the mark recorded when the keeper started (lastIssued is 0 if nothing
// was), and gives the HighWater back: the keeper has closed, and nothing
// more is issued under it. The notice window covers the other holders of
// the store: another process of the host leasing from the embedded etcd
// (through its client URL) goes on issuing, once the etcd stopped with this
// one, until its self-fence, which the store's notice window outlasts; a
// restart that claims one of its numbers from a restored data directory
// must start above those IDs too, and its claim waits that window anyway.
// known is false when Close was not told what was issued (UnknownIssued),
// and then the mark stays; a keeper that recorded none (it closed before
// its first reservation) records the notice floor all the same.
func (w *highWater) settle(lastIssued, noticeMs int64, known bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.loaded {
		return nil
	}
	defer func() {
		w.releaseLocked(w.key)
		w.loaded, w.key = false, nil
	}()
	if !known && w.recordedMs != 0 {
		return nil
	}
	// With nothing ever recorded (a first start, whose missing file was
	// no mark, and no reservation since: nothing was issued), the file is
	// written all the same: the store it guards may hold data now (the
	// embedded etcd's directory), where a missing file is refused.
	to := max(lastIssued, noticeMs, w.floorMs)
	if w.recordedMs == 0 {
		to = max(to, 1)
	} else if to >= w.recordedMs {
		return nil
	}
	if err := w.hw.Store(to); err != nil {
		return fmt.Errorf("%w: lowering to the last ID issued, %s: %w", ErrHighWater, FormatMs(to), err)
	}
	w.recordedMs = to
	return nil
}
