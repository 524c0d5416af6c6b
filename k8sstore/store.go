package k8sstore

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// A Store is a lease.Store on Kubernetes Lease objects: one keyspace
// (region) of the leases under Config.Prefix in Config.Namespace. It is
// safe for concurrent use, and any number of Store values (in any number
// of processes) may share a prefix. What it keeps between requests is what
// it needs to notice that the API server's data went back in time
// (signs.go), shared with the Store values Keyspace opened from it, and
// the renewal values it wrote (lease.Renewals).
type Store struct {
	c      coordv1client.LeaseInterface
	cfg    Config
	region int
	log    *slog.Logger
	closed atomic.Bool
	// root is the closed flag of the Store Open returned (this one's own,
	// or the one Keyspace opened it from): its Close ends the siblings too.
	root *atomic.Bool
	id   *identity
	// renewals are the renewal values this Store value wrote or sent for
	// its leases (lease.Renewals). Unlike id, it is this Store value's own.
	renewals lease.Renewals
}

// identity is what a Store and the Store values Keyspace opened from it
// remember of the objects: the records they saw and the restores noticed
// (tablewatch), the objects' UIDs and resourceVersions, and the origin id.
type identity struct {
	watch tablewatch.Watch
	mu    sync.Mutex
	// origin is the id of the origin object as first seen ("" before).
	origin string
	// metas is the UID and resourceVersion last seen of each lease
	// object, by name, in generation metaGen of the watch (signs.go).
	metas   map[string]objMeta
	metaGen uint64
}

var (
	_ lease.Store    = (*Store)(nil)
	_ lease.RawKeyer = (*Store)(nil)
)

// Open returns a Store whose requests go through a client made from rc
// (the caller chooses it: a kubeconfig's, in-cluster, a test server's),
// after a first read that checks the namespace and the permissions: it
// gets the origin object, which is created by the first claim.
// lease.ErrInvalid for a Config it cannot take (Config.Check);
// ErrForbidden when the credentials may not get leases in the namespace.
// The store creates nothing until its first claim. rc's QPS and Burst
// bound the store's requests (client-go's defaults, 5 a second and bursts
// of 10, suit a few holders: a claim sends four requests, a renewal two).
func Open(ctx context.Context, cfg Config, rc *rest.Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if rc == nil {
		return nil, fmt.Errorf("%w: k8sstore.Open: nil rest.Config: give one from a kubeconfig (clientcmd) or rest.InClusterConfig", lease.ErrInvalid)
	}
	rc = rest.CopyConfig(rc)
	if rc.UserAgent == "" {
		rc.UserAgent = "snowfence-k8sstore"
	}
	cs, err := coordv1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: k8sstore.Open: the rest.Config makes no client: %v", lease.ErrInvalid, err)
	}
	s := newStore(cs.Leases(cfg.Namespace), cfg)
	if _, err := s.c.Get(ctx, s.originName(), metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsForbidden(err) {
			return nil, s.forbidden("get", s.originName(), err)
		}
		return nil, fmt.Errorf("k8sstore: read lease %s in namespace %s: %w; check the API server's address and credentials", s.originName(), cfg.Namespace, err)
	}
	return s, nil
}

// newStore is a Store on leases, the namespace's Lease client, with cfg
// already checked.
func newStore(leases coordv1client.LeaseInterface, cfg Config) *Store {
	s := &Store{c: leases, cfg: cfg, region: cfg.Region, id: &identity{},
		log: cfg.Logger.With("namespace", cfg.Namespace, "prefix", cfg.Prefix, "region", cfg.Region)}
	s.root = &s.closed
	return s
}

// Close marks the store closed, so later calls fail, with those of the
// Store values Keyspace opened from it. The leases are not released: they
// run out at their marks. A Keyspace sibling's Close marks only itself.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

func (s *Store) open() error {
	if s.closed.Load() || s.root.Load() {
		return errClosed
	}
	return nil
}

// Namespace returns the namespace the store keeps its leases in.
func (s *Store) Namespace() string { return s.cfg.Namespace }

// Prefix returns the prefix of the store's object names (Config.Prefix).
func (s *Store) Prefix() string { return s.cfg.Prefix }

// Region implements lease.Store: the keyspace the store's leases live in.
func (s *Store) Region() int { return s.region }

// RegistryReader implements lease.Store: the Store itself, whose
// Registry, RegistryIdentity and FleetSchedule read the prefix's copy of
// the region registry and its fleet schedule record (registry.go,
// schedule.go), which every keyspace of the prefix shares.
func (s *Store) RegistryReader() lease.RegistryReader { return s }

// Keyspace implements lease.Store: a Store on the same client and prefix
// whose leases are those of keyspace index (lease.ErrInvalid for a
// negative one or one above math.MaxInt32). It shares with s what the two
// remember of the objects (the records and versions seen, the restores
// noticed: those fence the leases of both and floor the claims of both),
// but not the renewal values. The origin object is the prefix's: the
// sibling reads and writes the same one as s. Its Close leaves s open;
// s's Close closes it too.
func (s *Store) Keyspace(index int) (lease.Store, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	cfg := s.cfg
	cfg.Region = index
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Store{c: s.c, cfg: cfg, region: index, id: s.id, root: s.root,
		log: cfg.Logger.With("namespace", cfg.Namespace, "prefix", cfg.Prefix, "region", index)}, nil
}

// rereadCtx is a context of its own, bounded by Config.RequestTimeout, for
// deciding after the caller's request failed (its context may be the one
// that ended).
func (s *Store) rereadCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RequestTimeout)
}
