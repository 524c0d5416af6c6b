package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// DefaultTable is the table Config.Table names when empty.
const DefaultTable = "idgen_leases"

// Config configures a Store. The zero value is a working configuration.
type Config struct {
	// Table is the lease table, optionally schema-qualified ("ids.leases"):
	// lower-case letters, digits and underscores. Empty means
	// "idgen_leases".
	Table string
	// Region is the region whose rows this store reads and writes: 0 to
	// math.MaxInt32, what the region column holds.
	Region int
	// Logger receives claims, failed renewals, releases and quarantines.
	// Nil discards them.
	Logger *slog.Logger
	// RestoreWindow is the restore window of claims that give none
	// (lease.ClaimRequest.RestoreWindow zero): once the store has noticed
	// that the server is another cluster or on another timeline than the
	// one the table recorded (a failover to a standby, a point-in-time
	// recovery, a restore into a new cluster), claims start at least this
	// long after the claimer's clock at the notice. It can only lengthen
	// the floor: claims always keep at least MaxRestoreWindow, and the
	// claimer's own window if longer. Zero means DefaultRestoreWindow.
	RestoreWindow time.Duration
	// TestBound is for the project's own tests (its type is internal: a
	// library user leaves it zero). Every claim's first grant on a table
	// waits MaxNoticeWindow, which covers the longest self-fence any holder
	// of the table may have; nothing in the table records a shorter one, so
	// only a test fleet, whose every process the test starts with the same
	// bound, may shorten it (internal/testbound).
	TestBound testbound.Bound

	// ident replaces the statement that reads the server's identity (tests
	// only; see export_test.go).
	ident string
}

// DefaultRestoreWindow is Config.RestoreWindow when zero: longer than the
// table timings' lease (5 min), so it covers the Reserve and SelfFence of
// every keeper on the default table timings, with 8 % clock skew.
const DefaultRestoreWindow = 6 * time.Minute

// Store is a lease.Store on a PostgreSQL table. It is safe for concurrent
// use.
type Store struct {
	pool    *pgxpool.Pool
	owned   bool
	table   string // quoted, ready for SQL
	name    string // as configured
	region  int
	window  time.Duration // Config.RestoreWindow
	log     *slog.Logger
	closed  atomic.Bool
	queries queries
	cfg     Config // as New completed it, for Keyspace
	// watch is what this Store value and those Keyspace opened from it
	// remember of the rows they saw and of the restores those showed
	// (signs.go).
	watch *tablewatch.Watch
	// renewals are the renewal values this Store value wrote or sent for
	// its leases (lease.Renewals). Unlike watch, it is this Store value's
	// own: a sibling's leases are of another region.
	renewals lease.Renewals
}

// Suffixes of the tables kept beside the lease table: the fleet schedule,
// the origin (the cluster and timeline the table was last on), the region
// registry's copy and the lease journal. registrySuffix is the longest
// (journalSuffix as long): a table name leaves room for it.
const (
	fleetSuffix    = "_fleet"
	originSuffix   = "_origin"
	registrySuffix = "_region"
	journalSuffix  = "_claims"
)

var (
	_ lease.Store    = (*Store)(nil)
	_ lease.Admin    = (*Store)(nil)
	_ registry.Store = (*Store)(nil)
)

// RegistryReader returns s: the store keeps its copy of the region
// registry and its fleet schedule record beside the leases.
func (s *Store) RegistryReader() lease.RegistryReader { return s }

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$`)

// New returns a store on pool, which the caller keeps and closes. It does
// not touch the database; call Migrate to create the table. Name the table
// with its schema (Config.Table "ids.leases") on a pool that other code
// shares: an unqualified name is looked up in each session's search_path,
// temporary tables first, so code that creates a temporary table of the
// same name on a pooled session, or changes its search_path, would send
// this store's statements to another table, whose leases and schedule
// know nothing of these. Other code must not leave a pooled session inside
// a transaction (claims, extensions and releases refuse such a session:
// lease.ErrInvalid), nor put a schema of its own before pg_catalog in a
// session's search_path. Other code must not change the pool's
// sessions' default_transaction_isolation either: a claim that runs at
// another isolation is refused (lease.ErrInvalid, readCommittedClause).
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: pgstore.New: nil pool", lease.ErrInvalid)
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if !tableName.MatchString(cfg.Table) {
		return nil, fmt.Errorf("%w: pgstore: table name %q: use lower-case letters, digits and _, optionally schema.table", lease.ErrInvalid, cfg.Table)
	}
	parts := strings.Split(cfg.Table, ".")
	if base := parts[len(parts)-1]; len(base)+len(registrySuffix) > 63 {
		return nil, fmt.Errorf("%w: pgstore: table name %q: at most %d characters after the schema, so that %s%s fits PostgreSQL's 63",
			lease.ErrInvalid, cfg.Table, 63-len(registrySuffix), base, registrySuffix)
	}
	if cfg.RestoreWindow < 0 {
		return nil, fmt.Errorf("%w: pgstore: RestoreWindow %v is negative", lease.ErrInvalid, cfg.RestoreWindow)
	}
	if cfg.RestoreWindow == 0 {
		cfg.RestoreWindow = DefaultRestoreWindow
	}
	if err := cfg.TestBound.Check(); err != nil {
		return nil, fmt.Errorf("%w: pgstore: %w", lease.ErrInvalid, err)
	}
	if cfg.ident == "" {
		cfg.ident = identitySQL
	}
	if cfg.Region < 0 || cfg.Region > math.MaxInt32 {
		return nil, fmt.Errorf("%w: pgstore: region %d is outside 0 to %d (the region column is an integer)", lease.ErrInvalid, cfg.Region, math.MaxInt32)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	beside := func(suffix string) string {
		p := append([]string(nil), parts...)
		p[len(p)-1] += suffix
		return pgx.Identifier(p).Sanitize()
	}
	quoted := pgx.Identifier(parts).Sanitize()
	s := &Store{pool: pool, table: quoted, name: cfg.Table, region: cfg.Region, window: cfg.RestoreWindow,
		log: cfg.Logger.With("store", "pgstore", "table", cfg.Table), cfg: cfg, watch: new(tablewatch.Watch)}
	s.queries = newQueries(quoted, beside(fleetSuffix), beside(originSuffix), beside(registrySuffix), beside(journalSuffix), cfg.ident)
	return s, nil
}

// Connect opens a pool on url (a postgres:// URL or key=value string; a
// password in a URL with a raw @ in it is refused, checkURL), checks
// that the server answers, and returns a store that owns the pool: Close
// closes it. Its sessions run with synchronous_commit = on whatever the
// server's default or the URL say, so that no write the store was told
// had committed is lost when the server crashes: a mark acknowledged and
// then lost would let the next holder start below timestamps already
// issued. (It does not make a failover to an asynchronous standby safe;
// see the package documentation.)
func Connect(ctx context.Context, url string, cfg Config) (*Store, error) {
	if err := checkURL(url); err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect: %w", err)
	}
	pcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	// The store's statements are written for READ COMMITTED (a statement's
	// snapshot follows its locks: readCommittedClause, countUnused, RaiseMarks' lock
	// then raise), whatever the URL, role or database say.
	pcfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: connect: the server does not answer: %w", err)
	}
	s, err := New(pool, cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// Table returns the table's name as configured.
func (s *Store) Table() string { return s.name }

// Region returns the store's region.
func (s *Store) Region() int { return s.region }

// Migrate creates the lease table (and its schema) if they do not exist,
// adds the columns later versions need to a table created before them
// (claim_nonce, claim_seq, renewal), and creates the four tables beside it:
// <table>_fleet, the fleet schedule (no row until one is set: "v1"),
// <table>_origin, the server's system identifier and WAL timeline as first
// seen (see "Restores" in the package documentation), <table>_region, this
// store's copy of the region registry (no row until a region is added),
// and <table>_claims, the lease journal (see "The journal"; empty until
// the next claim). It is idempotent; run it ("snowfence leases init")
// after every upgrade.
func (s *Store) Migrate(ctx context.Context) error {
	if schema, _, ok := strings.Cut(s.name, "."); ok {
		if _, err := s.pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("pgstore: create schema %s: %w", schema, err)
		}
	}
	for _, stmt := range s.queries.create {
		if _, err := s.pool.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("pgstore: create table %s and the tables beside it: %w", s.name, err)
		}
	}
	return nil
}

// Close closes the pool if Connect opened it. It does not release leases.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.owned {
		s.pool.Close()
	}
	return nil
}

var errClosed = errors.New("pgstore: store is closed")

func (s *Store) open() error {
	if s.closed.Load() {
		return errClosed
	}
	return nil
}

func (s *Store) checkLease(l *lease.Lease) error {
	if err := s.open(); err != nil {
		return err
	}
	switch {
	case l == nil:
		return fmt.Errorf("%w: nil lease", lease.ErrInvalid)
	case l.Region != s.region:
		return fmt.Errorf("%w: lease of region %d given to the store of region %d", lease.ErrInvalid, l.Region, s.region)
	}
	return lease.CheckMachine(l.Machine, lease.Unlimited)
}

// RawKey is the primary key of number n's row in the store's keyspace, as
// a WHERE condition: region = keyspace AND machine_id = n
// (lease.RawKeyer).
func (s *Store) RawKey(n int) (lease.RawKey, error) {
	if n < 0 {
		return lease.RawKey{}, fmt.Errorf("%w: machine number %d is negative", lease.ErrInvalid, n)
	}
	return lease.RawKey{Store: "postgres", Keyspace: s.region, Machine: n, Table: s.table,
		Key: fmt.Sprintf("region = %d AND machine_id = %d", s.region, n)}, nil
}
