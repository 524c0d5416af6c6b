package chaos

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/netns"
	"github.com/snowfence/snowfence/internal/testkit/wire"
	"github.com/snowfence/snowfence/lease"
)

// library is one library-holder process (HolderMain) seen from the
// harness: its generators' IDs arrive as frames and go to the collector.
type library struct {
	env  *Env
	idx  int
	name string
	cfg  libraryConfig
	base int32 // source number of generator 0

	mu     sync.Mutex
	p      *proc
	starts int
	ready  chan struct{} // closed when every generator holds a number
	acks   chan int64
	seq    int64

	refused  []atomic.Int64 // per generator, this incarnation's last report
	refusedB atomic.Int64   // refusals of earlier incarnations
	machine  []atomic.Int64
	// Per generator, this incarnation's last report: when its last
	// acknowledged renewal was sent (ms since the epoch, 0: none) and its
	// renewal failures.
	renewed, renewFailures []atomic.Int64
}

// libraryConfig is what a library holder is started with.
type libraryConfig struct {
	machines                        string
	generators, rate, batch         int
	leaseTTL, renewEvery, selfFence time.Duration
	margin                          time.Duration // --fence-margin, given with leaseTTL
	noFence                         bool
	storeAddrs                      []string  // host:port of the store; default Env.storeTargets
	ns                              *netns.NS // run inside this network namespace
}

// timed returns c with the timings t (every one given to the holder).
func (c libraryConfig) timed(t lease.Timings) libraryConfig {
	c.leaseTTL, c.renewEvery, c.selfFence, c.margin = t.LeaseFor, t.RenewEvery, t.SelfFence, t.Margin
	return c
}

// addLibrary registers and starts a library holder.
func (e *Env) addLibrary(cfg libraryConfig) (*library, error) {
	if cfg.generators == 0 {
		cfg.generators = 1
	}
	if cfg.batch == 0 {
		cfg.batch = 100
	}
	l := &library{env: e, idx: len(e.libraries), name: fmt.Sprintf("lib%d", len(e.libraries)), cfg: cfg,
		base:    int32(1000 + 100*len(e.libraries)),
		refused: make([]atomic.Int64, cfg.generators), machine: make([]atomic.Int64, cfg.generators),
		renewed: make([]atomic.Int64, cfg.generators), renewFailures: make([]atomic.Int64, cfg.generators)}
	e.libraries = append(e.libraries, l)
	return l, l.start()
}

// start launches a new incarnation of the process.
func (l *library) start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	args := append(l.env.holderStoreArgs(l.cfg.storeAddrs), "--machines", l.cfg.machines,
		"--generators", strconv.Itoa(l.cfg.generators), "--rate", strconv.Itoa(l.cfg.rate), "--batch", strconv.Itoa(l.cfg.batch))
	args = append(args, timingFlags(l.cfg.leaseTTL, l.cfg.renewEvery, l.cfg.selfFence, l.cfg.margin)...)
	if l.cfg.noFence {
		args = append(args, "--unsafe-no-fence")
	}
	for i := range l.refused {
		l.refusedB.Add(l.refused[i].Swap(0))
		l.machine[i].Store(-1)
	}
	l.starts++
	name := fmt.Sprintf("%s#%d", l.name, l.starts)
	ready, acks := make(chan struct{}), make(chan int64, 4)
	l.ready, l.acks = ready, acks
	cmd := l.env.opts.Command(RoleHolder, args...)
	if ns := l.cfg.ns; ns != nil {
		inside := ns.Command(cmd.Path, cmd.Args[1:]...)
		inside.Env, inside.Dir = cmd.Env, cmd.Dir
		cmd = inside
	}
	p, err := startProc(name, cmd, func(r io.Reader) {
		err := wire.Read(r, func(f wire.Frame) { l.frame(f, ready, acks) })
		if err != nil {
			l.env.fail("%s: %v", name, err)
		}
	})
	if err != nil {
		return err
	}
	l.p = p
	return nil
}

// frame handles one frame of the current incarnation.
func (l *library) frame(f wire.Frame, ready chan struct{}, acks chan int64) {
	if f.Gen >= l.cfg.generators {
		l.env.fail("%s: frame for generator %d of %d", l.name, f.Gen, l.cfg.generators)
		return
	}
	switch f.Kind {
	case wire.KindIDs:
		l.env.col.record(l.base+int32(f.Gen), -1, f.Vals, 0)
	case wire.KindStats:
		if len(f.Vals) >= 3 {
			l.refused[f.Gen].Store(f.Vals[0])
			l.machine[f.Gen].Store(f.Vals[1])
		}
		if len(f.Vals) >= 5 {
			l.renewed[f.Gen].Store(f.Vals[3])
			l.renewFailures[f.Gen].Store(f.Vals[4])
		}
	case wire.KindReady:
		close(ready)
	case wire.KindAck:
		if len(f.Vals) == 1 {
			acks <- f.Vals[0]
		}
	}
}

// refusals counts the refused calls of every incarnation so far (as of
// each generator's last report).
func (l *library) refusals() int64 {
	n := l.refusedB.Load()
	for i := range l.refused {
		n += l.refused[i].Load()
	}
	return n
}

// waitReady waits until every generator holds a number.
func (l *library) waitReady(ctx context.Context, timeout time.Duration) error {
	l.mu.Lock()
	ready, p := l.ready, l.p
	l.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-p.Done():
		return fmt.Errorf("%s exited before it was ready: %v; stderr: %s", p.Name(), p.Err(), lastLine(p.Tail()))
	case <-t.C:
		return fmt.Errorf("%s not ready after %v", l.name, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// step steps the holder's wall clock by d and waits for the holder to
// acknowledge it.
func (l *library) step(ctx context.Context, d time.Duration) error {
	return l.command(ctx, fmt.Sprintf("step %d", d.Milliseconds()))
}

// command sends a clock command ("step <ms>", "slew <ms> <over-ms>") and
// waits for the holder to acknowledge it.
func (l *library) command(ctx context.Context, cmd string) error {
	l.mu.Lock()
	l.seq++
	seq, p, acks := l.seq, l.p, l.acks
	l.mu.Unlock()
	if _, err := fmt.Fprintf(p.Stdin(), "%s %d\n", cmd, seq); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		select {
		case got := <-acks:
			if got == seq {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("%s: clock command %q not acknowledged: %w", l.name, cmd, ctx.Err())
		}
	}
}

// proc returns the current process.
func (l *library) proc() *proc {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.p
}

// stop ends the holder gracefully: "quit", then SIGTERM if needed.
func (l *library) stop() error {
	p := l.proc()
	if p == nil || p.Exited() {
		return nil
	}
	p.Signal(sigCont) // a frozen holder cannot read "quit"
	fmt.Fprintln(p.Stdin(), "quit")
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-p.Done():
		if p.Err() != nil {
			return fmt.Errorf("%s: %v; stderr: %s", p.Name(), p.Err(), lastLine(p.Tail()))
		}
		return nil
	case <-t.C:
		return p.Stop(5 * time.Second)
	}
}
