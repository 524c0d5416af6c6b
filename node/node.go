// Package node starts a complete snowfence holder in one call: a lease store
// (an embedded single-member etcd by default, or an external etcd cluster),
// a lease.Keeper that claims a machine number from it, and a
// snowfence.Generator that mints on that number. It is the library's
// zero-configuration start, and what "snowfence serve" runs.
//
//	n, err := node.Start(ctx, node.Config{}) // embedded etcd in ./snowfence-data
//	id, err := n.Generator.Next(ctx)
//	defer n.Close(ctx)                     // releases the number, recording its mark
//
// # The embedded etcd is unique only on its host
//
// The zero-configuration store is a single-member etcd in a directory of
// this host. Two hosts that each run the default share nothing: each leases
// machine numbers from its own etcd, both may hold number 5, and they mint
// the same IDs. Use it for one host only; a fleet on several hosts must
// point every holder at one store (Config.Etcd.Endpoints of a shared etcd
// cluster, or Config.Store). Start logs a warning saying so whenever it
// starts the embedded etcd.
//
// # Schedule, range and region
//
// Keeper.Schedule and Generator.Schedule must agree (either may be left
// zero to take the other's). Start refuses, before it claims anything, a
// machine range or region that a layout of the schedule in force from now
// on cannot hold — a region other than 0 under v1, which has no region
// bits, among them (snowfence.Schedule.CheckPlacement).
package node

import (
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
// 0–1023 from it with etcd's default timings.
type Config struct {
	// Store, if not nil, is the lease store to use (a table store, say);
	// the Node does not close it. Nil means etcd, as Etcd and Embedded say.
	Store lease.Store
	// Etcd says how to reach an external etcd cluster. With no Endpoints,
	// an embedded etcd is started instead.
	Etcd etcdstore.ClientConfig
	// Embedded configures the embedded etcd (used when Etcd.Endpoints is
	// empty and Store is nil).
	Embedded embedetcd.Config
	// EtcdStore configures the etcd store: key prefix and region.
	EtcdStore etcdstore.Config
	// Keeper configures the lease keeper: machine range, region, timings.
	// Its Store, Clock and Logger are filled in by Start when zero, and
	// its Schedule from Generator.Schedule.
	Keeper lease.KeeperConfig
	// Generator configures minting: schedule, clock policy, waits. Its
	// Lease, Clock and Logger are filled in by Start when zero. A non-zero
	// Schedule must equal Keeper.Schedule when that is set too.
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
	// Keeper holds the machine number.
	Keeper *lease.Keeper
	// Store is the lease store the keeper uses.
	Store lease.Store
	// Embedded is the embedded etcd, or nil with an external store.
	Embedded *embedetcd.Server

	ownsStore bool
}

// Start starts the store (embedded etcd if so configured), claims a machine
// number and returns a Node ready to mint. On error everything started is
// stopped again.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch ks, gs := cfg.Keeper.Schedule, cfg.Generator.Schedule; {
	case ks.IsZero():
		cfg.Keeper.Schedule = gs // zero too: the keeper's default, which New takes
	case !gs.IsZero() && ks.String() != gs.String():
		return nil, fmt.Errorf("%w: Keeper.Schedule %q differs from Generator.Schedule %q; give both the same, or set one", lease.ErrInvalid, ks, gs)
	}
	n := &Node{Store: cfg.Store}
	defer func() {
		if err != nil {
			n.stopStore()
		}
	}()
	if n.Store == nil {
		if len(cfg.Etcd.Endpoints) == 0 {
			if n.Embedded, err = embedetcd.Start(ctx, cfg.Embedded); err != nil {
				return nil, err
			}
			cfg.Etcd.Endpoints = n.Embedded.Endpoints()
			dir := cfg.Embedded.Dir
			if dir == "" {
				dir = embedetcd.DefaultDir
			}
			cfg.Logger.Warn(EmbeddedWarning, "endpoint", cfg.Etcd.Endpoints[0], "data_dir", dir)
		}
		if cfg.EtcdStore.Logger == nil {
			cfg.EtcdStore.Logger = cfg.Logger
		}
		if cfg.EtcdStore.Region == 0 {
			cfg.EtcdStore.Region = cfg.Keeper.Region
		}
		if cfg.EtcdStore.Region != cfg.Keeper.Region {
			return nil, fmt.Errorf("%w: etcd store region %d differs from keeper region %d", lease.ErrInvalid, cfg.EtcdStore.Region, cfg.Keeper.Region)
		}
		var s *etcdstore.Store
		if s, err = etcdstore.Connect(ctx, cfg.Etcd, cfg.EtcdStore); err != nil {
			return nil, err
		}
		n.Store, n.ownsStore = s, true
	}
	// One clock for keeper and generator: the self-fence compares their
	// monotonic readings.
	kc := cfg.Keeper
	clock := cfg.Generator.Clock
	if clock == nil {
		clock = kc.Clock
	}
	if clock == nil {
		clock = snowfence.SystemClock()
		if kc.Boottime == nil {
			kc.Boottime = lease.Boottime
		}
	}
	kc.Store = n.Store
	kc.Clock = clock
	if kc.Logger == nil {
		kc.Logger = cfg.Logger
	}
	if n.Keeper, err = lease.StartKeeper(ctx, kc); err != nil {
		return nil, err
	}
	gc := cfg.Generator
	gc.Lease = n.Keeper
	gc.Clock = clock
	if gc.Logger == nil {
		gc.Logger = cfg.Logger
	}
	if n.Generator, err = snowfence.New(gc); err != nil {
		n.Keeper.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	n.Keeper.SetLastIssued(n.Generator.LastIssued)
	return n, nil
}

// Close stops minting, releases the machine number (recording the end of the
// last issued timestamp as its mark) and stops the store it started.
func (n *Node) Close(ctx context.Context) error {
	errs := []error{n.Generator.Close(), n.Keeper.Close(ctx)}
	errs = append(errs, n.stopStore())
	return errors.Join(errs...)
}

func (n *Node) stopStore() error {
	var errs []error
	if n.ownsStore && n.Store != nil {
		errs = append(errs, n.Store.Close())
	}
	if n.Embedded != nil {
		errs = append(errs, n.Embedded.Close())
	}
	return errors.Join(errs...)
}
