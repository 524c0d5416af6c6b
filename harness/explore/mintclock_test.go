package explore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// mintClock is the generators' clock: the process's fake clock, except
// that a wait for a later millisecond (a tick's sequence used up, a small
// step back waited out) moves the fake clock there instead of blocking, as
// time passes while a real process mints. Keepers on the clock may wake;
// the caller settles them after the batch.
//
// While start is set and not over, a wait is the fake clock's own: it
// blocks until the world moves the clock there (see startWait).
type mintClock struct {
	*fakeclock.Clock
	start *startWait
}

var _ snowfence.Clock = mintClock{}

func (c mintClock) WaitUntil(ctx context.Context, wallMs int64) (snowfence.Reading, error) {
	if c.start != nil && !c.start.over.Load() {
		c.start.waiting.add(1)
		defer c.start.waiting.add(-1)
		return c.Clock.WaitUntil(ctx, wallMs)
	}
	for range 10_000 {
		r := c.Now()
		if r.WallMs >= wallMs {
			return r, nil
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
		c.Advance(time.Duration(wallMs-r.WallMs) * time.Millisecond)
	}
	return c.Now(), fmt.Errorf("explore: the fake clock did not reach %d ms", wallMs)
}

// startWait makes node.Start's wait for its first grant true time passing
// for the whole world.
//
// node.Start shares the generator's clock with the keeper
// (Config.Generator.Clock, when set, is the keeper's too when
// Config.Keeper.Clock is nil, and must be, since the generator's
// self-fence compares the
// keeper's monotonic readings with its own), and then waits on it until
// the first grant starts — the store's notice window after the claim (8 s
// on etcd, 36 s on the tables), or a raised mark. Were that wait the
// minting clock's, it would move the starting process's clock ahead in
// one jump, behind the world's back: tens of seconds ahead of true time
// after a few restarts, and its keepers, asleep meanwhile, late by as
// much. A real node.Start blocks while every process — its own other
// holders too — keeps running; so while the start runs, its clock's waits
// block on the fake clock, and startHolders moves true time on for every
// process, a fraction of a renewal period at a time, until the start
// returns (rather than accounting a jump into true time afterwards, which
// would freeze the rest of the fleet for the notice window). Once the
// start returned, over is set and the generator's waits move the clock
// again.
type startWait struct {
	over atomic.Bool
	// waiting counts the starts of one startHolders blocked in WaitUntil:
	// each is one more waiter on the fake clock beside its keeper's sleep.
	waiting *startCount
}

// startCount counts the starts of one startHolders blocked in WaitUntil,
// and tells each change: a start leaves the fake clock before it leaves
// the count, so a count read at that moment is one too high, and
// startHolders, waiting for that many waiters on the clock, recounts when
// it changes (blockUntilStartWaiters) — the start may go on to wait on its
// keeper rather than on the clock (node.Start's wait for a claim).
type startCount struct {
	mu      sync.Mutex
	n       int
	changed chan struct{}
}

func newStartCount() *startCount { return &startCount{changed: make(chan struct{})} }

func (c *startCount) add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += d
	close(c.changed)
	c.changed = make(chan struct{})
}

// load returns the count and a channel closed at its next change.
func (c *startCount) load() (int, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.changed
}

// blockUntilStartWaiters returns once at least base waiters, plus the
// starts counted in WaitUntil, are blocked on clk, recounting at each
// change of the count.
func blockUntilStartWaiters(ctx context.Context, clk *fakeclock.Clock, base int, waiting *startCount) error {
	for {
		n, changed := waiting.load()
		bctx, cancel := context.WithCancel(ctx)
		res := make(chan error, 1)
		go func() { res <- clk.BlockUntilWaiters(bctx, base+n) }()
		select {
		case err := <-res:
			cancel()
			return err
		case <-changed:
			cancel()
			if err := <-res; err == nil || ctx.Err() != nil {
				return err
			}
		}
	}
}
