package zkstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// A Store is a lease.Store on ZooKeeper: one keyspace (region) of the
// leases under Config.Path. It is safe for concurrent use, and any number
// of Store values (in any number of processes) may share a path. What it
// keeps between requests is what it needs to notice that ZooKeeper's data
// went back in time (signs.go), shared with the Store values Keyspace
// opened from it, and the renewal values it wrote (lease.Renewals).
type Store struct {
	c      client
	sess   *session // the session the store opened (Connect), closed by Close; nil otherwise
	cfg    Config
	region int
	log    *slog.Logger
	closed atomic.Bool
	id     *identity
	// renewals are the renewal values this Store value wrote or sent for
	// its leases (lease.Renewals). Unlike id, it is this Store value's own.
	renewals lease.Renewals
}

// identity is what a Store and the Store values Keyspace opened from it
// remember of the data under the path: the rows they saw and the restores
// noticed (tablewatch), the znode versions they saw, and the origin id.
type identity struct {
	watch tablewatch.Watch
	mu    sync.Mutex
	// origin is the id of the origin znode as first seen ("" before).
	origin string
	// stats is the znode stat last seen of each lease znode, by path, in
	// generation statGen of the watch (signs.go).
	stats   map[string]zstat
	statGen uint64
	// made records the parent znodes known to exist.
	made map[string]bool
}

var _ lease.Store = (*Store)(nil)

// New returns a Store on conn, a session the caller keeps and closes
// (after the Store). It sends nothing: the znodes are created as needed.
func New(conn *zk.Conn, cfg Config) (*Store, error) {
	if conn == nil {
		return nil, fmt.Errorf("%w: zkstore.New: nil ZooKeeper connection", lease.ErrInvalid)
	}
	return newStore(conn, cfg)
}

// newStore is New on any client (tests give a wrapper).
func newStore(c client, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Store{c: c, cfg: cfg, region: cfg.Region, id: &identity{},
		log: cfg.Logger.With("zk_path", cfg.Path, "region", cfg.Region)}, nil
}

// Connect opens a ZooKeeper session on servers (host:port each) with the
// given session timeout (zero: 10 s) and returns a Store on it, which
// Close closes. The session only carries requests: no lease depends on it
// (see the package documentation). When it has had no live connection
// for twice its timeout, the store replaces it with a new one
// (session.go): after a backup restore the servers refuse a session that
// saw later zxids than theirs, and a Store on New's session stays cut off
// until they catch up. With Config.Auth it waits, up to the session
// timeout, for a server to take the credentials, and fails if none does.
func Connect(servers []string, sessionTimeout time.Duration, cfg Config) (*Store, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: zkstore.Connect: no servers: give host:port of at least one ZooKeeper server", lease.ErrInvalid)
	}
	if sessionTimeout == 0 {
		sessionTimeout = 10 * time.Second
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sess, err := openSession(servers, sessionTimeout, cfg.Auth, cfg.Logger.With("zk_path", cfg.Path))
	if err != nil {
		return nil, fmt.Errorf("zkstore: connect to %v: %w; check the addresses", servers, err)
	}
	s, err := newStore(sess, cfg)
	if err != nil {
		sess.close()
		return nil, err
	}
	s.sess = sess
	return s, nil
}

// zkLogger sends go-zookeeper's log to the store's logger.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) { z.l.Debug(fmt.Sprintf("zk: "+format, args...)) }

// Close marks the store closed, so later calls fail, and closes the
// session Connect opened (not one given to New). The leases are not
// released: they run out at their marks.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.sess != nil {
		s.sess.close()
	}
	return nil
}

var errClosed = errors.New("zkstore: store is closed")

func (s *Store) open() error {
	if s.closed.Load() {
		return errClosed
	}
	return nil
}

// Path returns the znode the store keeps everything under (Config.Path).
func (s *Store) Path() string { return s.cfg.Path }

// Region implements lease.Store: the keyspace the store's leases live in.
func (s *Store) Region() int { return s.region }

// RegistryReader implements lease.Store: the store itself, whose copy of
// the region registry (<path>/registry), its identity and the fleet
// schedule record (<path>/schedule) its keepers read at start.
func (s *Store) RegistryReader() lease.RegistryReader { return s }

// Keyspace implements lease.Store: a Store on the same session and path
// whose leases are those of keyspace index (lease.ErrInvalid for a
// negative one or one above math.MaxInt32). It shares with s what the two
// remember of the data (the rows and versions seen, the restores noticed:
// those fence the leases of both and floor the claims of both), but not
// the renewal values. The fleet schedule record, the registry's copy, the
// used marker and the origin are the path's: the sibling reads and writes
// the same ones as s. Its Close leaves the session open; close it before
// s.
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
	return &Store{c: s.c, cfg: cfg, region: index, id: s.id, log: cfg.Logger.With("zk_path", cfg.Path, "region", index)}, nil
}

// reread runs f on a context of its own, bounded by
// Config.RequestTimeout, for deciding after the caller's request failed
// (its context may be the one that ended).
func (s *Store) rereadCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RequestTimeout)
}
