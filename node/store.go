package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
	"github.com/snowfence/snowfence/zkstore"
)

// An Opener opens the lease store a Node leases its machine number from.
// Start calls it once, with the keeper's region and the Node's logger, which
// an Opener gives to a store configured with a zero region or no logger (and
// a store of another region is refused: the stores lease numbers per
// region). EmbeddedEtcd, EtcdCluster, Postgres, DynamoDB, ZooKeeper and
// Kubernetes make the Opener of each store snowfence has; any function of
// this type will do.
type Opener func(ctx context.Context, region int, log *slog.Logger) (*Opened, error)

// Opened is a lease store an Opener opened.
type Opened struct {
	// Store is the lease store.
	Store lease.Store
	// Close closes Store and stops whatever was started for it. The Node
	// calls it in its own Close, or when Start fails after opening. Nil
	// means Store.Close.
	Close func() error
	// Timings are the keeper timings that suit the store; Start applies
	// them to the keeper's zero timings (lease.Timings.Apply).
	Timings lease.Timings
	// Embedded is the embedded etcd server the store runs on, or nil.
	Embedded *embedetcd.Server
	// HighWater, if not nil, is where the keeper keeps its high-water mark
	// (lease.KeeperConfig.HighWater); Start gives it to a keeper configured
	// with none. The embedded etcd's Openers set it to the file beside its
	// data directory (embedetcd.Server.HighWater).
	HighWater lease.HighWater
}

// EmbeddedEtcd opens an etcd store on an etcd server started in this
// process (embedetcd.Start), which the Node stops in Close. It logs
// EmbeddedWarning: the numbers it leases are unique on this host only. The
// keeper keeps its high-water mark in the file beside the data directory
// (embedetcd.Config.HighWaterFile), so that a restore of the directory
// cannot take its marks back (embedetcd.Server.HighWater).
func EmbeddedEtcd(server embedetcd.Config, store etcdstore.Config) Opener {
	return func(ctx context.Context, region int, log *slog.Logger) (*Opened, error) {
		if err := storeDefaults("etcd", &store.Region, &store.Logger, region, log); err != nil {
			return nil, err
		}
		srv, err := embedetcd.Start(ctx, server)
		if err != nil {
			return nil, err
		}
		log.Warn(EmbeddedWarning, "endpoint", srv.Endpoints()[0], "data_dir", cmp.Or(server.Dir, embedetcd.DefaultDir))
		return connectEmbedded(ctx, srv, store)
	}
}

// OnEmbedded opens an etcd store on srv, an embedded etcd already started
// (EmbeddedEtcd starts its own), which the Node then stops in Close; on an
// error srv is stopped too. The keeper keeps its high-water mark in srv's
// file, as with EmbeddedEtcd.
func OnEmbedded(srv *embedetcd.Server, store etcdstore.Config) Opener {
	return func(ctx context.Context, region int, log *slog.Logger) (*Opened, error) {
		if err := storeDefaults("etcd", &store.Region, &store.Logger, region, log); err != nil {
			srv.Close()
			return nil, err
		}
		return connectEmbedded(ctx, srv, store)
	}
}

// connectEmbedded connects store to the started srv; the Opened stops both.
func connectEmbedded(ctx context.Context, srv *embedetcd.Server, store etcdstore.Config) (*Opened, error) {
	s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: srv.Endpoints()}, store)
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &Opened{
		Store:     s,
		Close:     func() error { return errors.Join(s.Close(), srv.Close()) },
		Timings:   etcdstore.Timings(),
		Embedded:  srv,
		HighWater: srv.HighWater(),
	}, nil
}

// EtcdCluster opens an etcd store on the etcd cluster client says how to
// reach (etcdstore.Connect).
func EtcdCluster(client etcdstore.ClientConfig, store etcdstore.Config) Opener {
	return func(ctx context.Context, region int, log *slog.Logger) (*Opened, error) {
		if err := storeDefaults("etcd", &store.Region, &store.Logger, region, log); err != nil {
			return nil, err
		}
		s, err := etcdstore.Connect(ctx, client, store)
		if err != nil {
			return nil, err
		}
		return &Opened{Store: s, Timings: etcdstore.Timings()}, nil
	}
}

// Postgres opens a store on a PostgreSQL lease table (pgstore.Connect; url
// is a postgres:// URL). The table must exist (pgstore.Store.Migrate, or
// "snowfence leases init").
func Postgres(url string, store pgstore.Config) Opener {
	return func(ctx context.Context, region int, log *slog.Logger) (*Opened, error) {
		if err := storeDefaults("PostgreSQL", &store.Region, &store.Logger, region, log); err != nil {
			return nil, err
		}
		s, err := pgstore.Connect(ctx, url, store)
		if err != nil {
			return nil, err
		}
		return &Opened{Store: s, Timings: pgstore.Timings()}, nil
	}
}

// DynamoDB opens a store on a DynamoDB lease table (dynamostore.Connect).
// The table must exist (dynamostore.Store.CreateTable, or "snowfence leases
// init").
func DynamoDB(client dynamostore.ClientConfig, store dynamostore.Config) Opener {
	return func(ctx context.Context, region int, log *slog.Logger) (*Opened, error) {
		if err := storeDefaults("DynamoDB", &store.Region, &store.Logger, region, log); err != nil {
			return nil, err
		}
		s, err := dynamostore.Connect(ctx, client, store)
		if err != nil {
			return nil, err
		}
		return &Opened{Store: s, Timings: dynamostore.Timings()}, nil
	}
}

// ZooKeeper opens a store on a ZooKeeper ensemble (zkstore.Connect):
// servers are the host:port of its servers, sessionTimeout the session
// timeout (zero: zkstore's default, 10 s). The store creates its znodes
// under store.Path as it needs them; nothing needs setting up first. Its
// timings are the lease tables' (zkstore.Timings): expiry is judged by the
// claimer's clock against a mark, never by a ZooKeeper session.
//
// It refuses (lease.ErrInvalid), before it connects, no server, an empty
// or blank server address and a negative session timeout: each holder of a
// fleet must reach the one ensemble its peers lease from.
func ZooKeeper(servers []string, sessionTimeout time.Duration, store zkstore.Config) Opener {
	return func(ctx context.Context, region int, log *slog.Logger) (*Opened, error) {
		if err := storeDefaults("ZooKeeper", &store.Region, &store.Logger, region, log); err != nil {
			return nil, err
		}
		if err := checkZooKeeper(servers, sessionTimeout); err != nil {
			return nil, err
		}
		s, err := zkstore.Connect(servers, sessionTimeout, store)
		if err != nil {
			return nil, err
		}
		return &Opened{Store: s, Timings: zkstore.Timings()}, nil
	}
}

// Kubernetes opens a store on Kubernetes Lease objects (k8sstore.Open) in
// store.Namespace, through a client made from rc: a kubeconfig's
// (clientcmd), the pod's own (rest.InClusterConfig), or any other. The
// store creates its Lease objects as it needs them; nothing needs setting
// up first but the namespace and the RBAC its credentials need there — get,
// list, create and patch on leases.coordination.k8s.io, nothing else
// (k8sstore's package documentation). Its timings are the lease tables'
// (k8sstore.Timings): expiry is judged by the claimer's clock against a
// mark, never by a Lease object's leaseDurationSeconds.
//
// It refuses (lease.ErrInvalid), before it connects, a nil rc and a
// store.Namespace or store.Prefix that k8sstore cannot take
// (k8sstore.Config.Check): each holder of a fleet must lease in the one
// namespace and prefix its peers lease in. A Kubernetes store is shared
// like any other: a generator that sets no clock policy gets
// snowfence.ClockRequire.
func Kubernetes(store k8sstore.Config, rc *rest.Config) Opener {
	return func(ctx context.Context, region int, log *slog.Logger) (*Opened, error) {
		if err := storeDefaults("Kubernetes", &store.Region, &store.Logger, region, log); err != nil {
			return nil, err
		}
		s, err := k8sstore.Open(ctx, store, rc) // refuses a nil rc and what Config.Check does before any request
		if err != nil {
			return nil, err
		}
		return &Opened{Store: s, Timings: k8sstore.Timings()}, nil
	}
}

// checkZooKeeper refuses servers and a session timeout no ensemble is
// reached with.
func checkZooKeeper(servers []string, sessionTimeout time.Duration) error {
	if len(servers) == 0 {
		return fmt.Errorf("%w: ZooKeeper store: no servers: give host:port of the ensemble's servers", lease.ErrInvalid)
	}
	for _, s := range servers {
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t,") {
			return fmt.Errorf("%w: ZooKeeper store: server %q: give each server as one host:port", lease.ErrInvalid, s)
		}
	}
	if sessionTimeout < 0 {
		return fmt.Errorf("%w: ZooKeeper store: session timeout %v is negative: give zero (10 s) or more", lease.ErrInvalid, sessionTimeout)
	}
	return nil
}

// storeDefaults gives a store configuration with a zero region the keeper's
// and with no logger the Node's, and refuses one of another region than the
// keeper's.
func storeDefaults(kind string, storeRegion *int, storeLog **slog.Logger, region int, log *slog.Logger) error {
	if *storeRegion == 0 {
		*storeRegion = region
	}
	if *storeRegion != region {
		return fmt.Errorf("%w: %s store region %d differs from keeper region %d", lease.ErrInvalid, kind, *storeRegion, region)
	}
	if *storeLog == nil {
		*storeLog = log
	}
	return nil
}
