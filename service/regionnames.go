package service

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence/lease/registry"
)

// How often serve's region names are read again from the holder's own
// store: in the background, and at most this often when a decode meets a
// region number the names do not know (a region added since).
const (
	regionNamesEvery  = 30 * time.Second
	regionNamesOnMiss = 5 * time.Second
	// regionNamesTimeout bounds one read of the registry.
	regionNamesTimeout = 2 * time.Second
)

// regionNames names region numbers for serve's decode endpoint from the
// region registry of the holder's own lease store, kept in memory. It is
// read again every regionNamesEvery in the background and, at most every
// regionNamesOnMiss, when a number is not found. Only decode calls it,
// never the mint path, and it reads no store but the holder's own. Safe
// for concurrent use.
type regionNames struct {
	store registry.Reader // nil: a store that keeps no registry
	log   *slog.Logger
	now   func() time.Time

	reg atomic.Pointer[registry.Registry]
	// mu makes one read at a time and guards lastRead.
	mu       sync.Mutex
	lastRead time.Time

	stop, done chan struct{}
	stopOnce   sync.Once
}

// newRegionNames returns the names of reg, read from store at now().
func newRegionNames(store registry.Reader, reg registry.Registry, log *slog.Logger, now func() time.Time) *regionNames {
	c := &regionNames{store: store, log: log, now: now, lastRead: now(), stop: make(chan struct{}), done: make(chan struct{})}
	c.reg.Store(&reg)
	return c
}

// Name returns the name of region number n (registry.Registry.NameOf), false
// if the registry does not have it even after a fresh read. While the
// store has no registry it returns the number in decimal; the background
// read finds a registry once one is written.
func (c *regionNames) Name(n int) (string, bool) {
	if name, ok := c.reg.Load().NameOf(n); ok {
		return name, true
	}
	// Read again unless another decode just did; either way look again,
	// since that other read may have brought the number.
	c.refresh(regionNamesOnMiss)
	return c.reg.Load().NameOf(n)
}

// refresh reads the registry again unless it was read less than minAge
// ago.
func (c *regionNames) refresh(minAge time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if now.Sub(c.lastRead) < minAge {
		return
	}
	c.lastRead = now
	if c.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), regionNamesTimeout)
	defer cancel()
	reg, err := c.store.Registry(ctx)
	if err != nil {
		c.log.Warn("cannot read the region registry for decode's region names; keeping the last one read", "error", err)
		return
	}
	if reg.Version < c.reg.Load().Version {
		return // never go back to an older registry
	}
	c.reg.Store(&reg)
}

// run reads the registry again on every tick until close; start runs it,
// and a test may run it with its own ticks. close must follow.
func (c *regionNames) run(tick <-chan time.Time) {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-tick:
			c.refresh(0)
		}
	}
}

// start reads the registry again every regionNamesEvery until close.
func (c *regionNames) start() {
	t := time.NewTicker(regionNamesEvery)
	go func() {
		defer t.Stop()
		c.run(t.C)
	}()
}

// close stops the background reads and waits for them to end.
func (c *regionNames) close() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
}
