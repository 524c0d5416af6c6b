package node

import (
	"time"

	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
)

// Config configures a Node. The zero value runs an embedded etcd in
// ./snowfence-data on 127.0.0.1:2379 and leases a v1 machine number in
// 0–1023 from it with etcd's timings, keeping its high-water mark in
// ./snowfence-data.highwater (embedetcd.Server.HighWater).
type Config struct {
	// Store, if not nil, is a lease store the caller opened; the Node does
	// not close it, and the keeper's zero timings are the keeper's
	// defaults (apply the store's own, such as pgstore.Timings, to Keeper).
	Store lease.Store
	// Open opens the lease store when Store is nil; the Node closes it.
	// Nil means EmbeddedEtcd(embedetcd.Config{}, etcdstore.Config{}).
	Open Opener
	// Keeper configures the lease keeper: machine range, region, timings.
	// Its Store and Logger are filled in by Start when zero, its zero
	// timings from the Opener's, and its Schedule and Clock from
	// Generator's when zero: the keeper claims with the schedule and times
	// its grants on the clock, and the generator takes both from it.
	Keeper lease.KeeperConfig
	// TimingsChosen says Keeper's timings are final: Start does not fill
	// their zero fields from the Opener's timings, so a zero keeps the
	// keeper's own meaning (its default, or no margin). serve sets it: its
	// flags have already taken the store's timings for the ones not given,
	// and a timing given as 0 must not become the store's. False: zero
	// timings are the store's.
	TimingsChosen bool
	// Generator configures minting: schedule, clock policy, waits. Its
	// Lease and Logger are filled in by Start. Its zero ClockPolicy is
	// snowfence.ClockRequire, except on the embedded etcd that Start
	// starts, where it is ClockWarn (EmbeddedClockDefault, logged). A Schedule or Clock set both
	// here and in Keeper must be the same (snowfence.New refuses them
	// otherwise, and the keeper, which may have claimed meanwhile, is
	// closed).
	Generator snowfence.Config
	// Logger receives the store's, keeper's and generator's logs. Nil
	// discards them.
	Logger *slog.Logger
}

// EmbeddedWarning is the warning Start logs when it starts the embedded
// etcd (and "snowfence serve" prints on stderr).
const EmbeddedWarning = "the embedded etcd leases machine numbers on this host only: " +
	"another host running its own embedded etcd may hold the same numbers and mint the same IDs; " +
	"for more than one host, point every holder at one shared etcd cluster (--etcd-endpoints) or lease table"

// A Node is a running holder: store, keeper and generator.
type Node struct {
	// Generator mints IDs; it refuses whenever the keeper holds no valid
	// lease.
	Generator *snowfence.Generator
	// Keeper holds the machine number. It feeds Generator and no other:
	// a second generator built on it is refused (snowfence.ErrLeaseBound),
	// because it would not know the first one's last tick and sequence.
	Keeper *lease.Keeper
	// Store is the lease store the keeper uses.
	Store lease.Store
	// Embedded is the embedded etcd, or nil with any other store.
	Embedded *embedetcd.Server

	closeStore func() error // nil for the caller's Config.Store
}

// Start opens the store (starting the embedded etcd if so configured),
// claims a machine number and returns a Node ready to mint: it is Launch,
// then a wait (until ctx ends) for the keeper's first claim
// (lease.Keeper.ClaimedOrFull) and for its first grant to start
// (WaitIssuing). Every claim's first grant waits out the store's notice
// window (lease.Store.MaxNoticeWindow: 8 s on etcd, 4 min 40 s on the lease
// tables), so that a holder still issuing on the number after a restore of
// the store has stopped; a number whose mark is ahead of the clock (after
// raise-marks, say) starts at the mark. When every number of the range is
// held it fails with lease.ErrNoFreeNumber rather than wait as a spare
// (Launch waits) — also when a cutover comes while it waits for the first
// grant and the next layout's range is the full one. On error everything
// started is stopped again.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	n, err := Launch(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err = n.waitIssuing(ctx, n.Keeper.ClaimedOrFull); err != nil {
		n.Close(context.WithoutCancel(ctx)) // nothing was issued: the generator's LastIssued is 0
		return nil, err
	}
	return n, nil
}

// Launch opens the store (starting the embedded etcd if so configured),
// starts the keeper and the generator, and returns at once: the keeper
// claims its number in the background (lease.StartKeeper), as a spare while
// every number of the range is held, and until its first grant starts the
// generator refuses ("no-lease", then "not-started" while the claim's
// notice window runs). WaitIssuing waits for that; Keeper.Failed tells a
// first claim refused for good. ctx bounds opening the store and reading
// its region registry. On error everything started is stopped again.
func Launch(ctx context.Context, cfg Config) (_ *Node, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n := &Node{Store: cfg.Store}
	kc, gc := cfg.Keeper, cfg.Generator
	// The keeper's, which New takes: one schedule and one clock for the
	// node, whichever config gave it.
	if kc.Schedule.IsZero() {
		kc.Schedule = gc.Schedule
	}
	if kc.Clock == nil {
		kc.Clock = gc.Clock
	}
	if n.Store == nil {
		if err := n.open(ctx, cfg, &kc); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				n.closeStore()
			}
		}()
	}
	if n.Embedded != nil {
		EmbeddedClockDefault(&gc, cfg.Logger)
	}
	kc.Store = n.Store
	if kc.Logger == nil {
		kc.Logger = cfg.Logger
	}
	if n.Keeper, err = lease.StartKeeper(ctx, kc); err != nil {
		return nil, err
	}
	gc.Lease = n.Keeper
	if gc.Logger == nil {
		gc.Logger = cfg.Logger
	}
	if n.Generator, err = snowfence.New(gc); err != nil {
		n.Keeper.Close(context.WithoutCancel(ctx), lease.UnknownIssued) // no generator: every reservation kept, as before one was bound
		return nil, err
	}
	return n, nil
}

// WaitIssuing waits until the keeper holds a number (lease.Keeper.Claimed)
// and its grant has started on the keeper's clock: the generator issues
// from then on, unless something else (the clock) stops it. It fails with
// the keeper's error if it stopped (Keeper.Failed), or when ctx ends.
func (n *Node) WaitIssuing(ctx context.Context) error {
	return n.waitIssuing(ctx, n.Keeper.Claimed)
}

// waitIssuing is WaitIssuing, waiting for each claim with claimed:
// Keeper.Claimed, or Keeper.ClaimedOrFull for Start, which fails rather
// than wait as a spare. The layout in force may change while the grant's
// notice window runs (a cutover within it), so the wait for a claim is
// made again for each grant waited on, not only the first.
func (n *Node) waitIssuing(ctx context.Context, claimed func(context.Context) error) error {
	clk := n.Keeper.Clock()
	for {
		if err := claimed(ctx); err != nil {
			return err
		}
		g, err := n.Keeper.Grant()
		if err != nil {
			// Lost at once, or the clock reads before the layout the
			// keeper started under: the generator refuses with the
			// reason, as it would at any later time.
			return nil
		}
		// The grant starts at StartMs on the wall clock and StartMono on
		// the monotonic one (both the claim's notice window); the wall
		// clock's wait is the one there is, so wait for whichever is later.
		r := clk.Now()
		if GrantStarted(g, r) {
			return nil
		}
		until := max(g.StartMs, r.WallMs+int64((g.StartMono-r.Mono+time.Millisecond-1)/time.Millisecond))
		if _, err := clk.WaitUntil(ctx, until); err != nil {
			return fmt.Errorf("node: waiting for machine %d's first grant, which starts at %s (the claim's notice window, or the number's mark): %w",
				g.Machine, lease.FormatMs(g.StartMs), err)
		}
	}
}

// GrantStarted reports whether g has started at reading r: the generator
// may issue on it (if nothing else stops it).
func GrantStarted(g *snowfence.Grant, r snowfence.Reading) bool {
	return r.WallMs >= g.StartMs && r.Mono >= g.StartMono
}

// open opens the store cfg.Open says (the embedded etcd if none) and gives
// kc's zero timings the store's.
func (n *Node) open(ctx context.Context, cfg Config, kc *lease.KeeperConfig) error {
	open := cfg.Open
	if open == nil {
		open = EmbeddedEtcd(embedetcd.Config{}, etcdstore.Config{})
	}
	o, err := open(ctx, kc.Region, cfg.Logger)
	if err != nil {
		return err
	}
	n.Store, n.Embedded, n.closeStore = o.Store, o.Embedded, o.Close
	if n.closeStore == nil {
		n.closeStore = o.Store.Close
	}
	if !cfg.TimingsChosen {
		o.Timings.Apply(kc)
	}
	if kc.HighWater == nil {
		kc.HighWater = o.HighWater
	}
	return nil
}

// Close stops minting, releases the machine number (recording the end of the
// last issued timestamp as its mark) and closes the store it opened.
func (n *Node) Close(ctx context.Context) error {
	// The generator first: its LastIssued is final once it is closed.
	errs := []error{n.Generator.Close()}
	errs = append(errs, n.Keeper.Close(ctx, n.Generator.LastIssued()))
	if n.closeStore != nil {
		errs = append(errs, n.closeStore())
	}
	return errors.Join(errs...)
}
