package zkstore

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/lease"
)

// DefaultPath is Config.Path when empty.
const DefaultPath = "/snowfence"

// DefaultRestoreWindow is Config.RestoreWindow when zero, and
// MaxRestoreWindow: longer than the table timings' lease (5 min), so it
// covers the Reserve and SelfFence of every keeper on the table timings
// (Timings), with 8 % clock skew — as pgstore's and dynamostore's.
const DefaultRestoreWindow = 6 * time.Minute

// DefaultRequestTimeout is Config.RequestTimeout when zero.
const DefaultRequestTimeout = 5 * time.Second

// Config says where in ZooKeeper a Store keeps its leases.
type Config struct {
	// Path is the znode under which the store keeps everything (the
	// layout is in the package documentation): an absolute ZooKeeper path,
	// not "/", without a trailing slash. Empty means DefaultPath. The
	// store creates it and what is below it as needed.
	Path string
	// Region is the keyspace whose leases this store reads and writes: 0
	// to math.MaxInt32, a znode of its own under Path/leases.
	Region int
	// Logger receives claims, failed renewals, releases and restores
	// noticed. Nil discards them.
	Logger *slog.Logger
	// RestoreWindow is the restore window of claims that give none
	// (lease.ClaimRequest.RestoreWindow zero): once the store noticed that
	// ZooKeeper's data went back in time, claims start at least this long
	// after the claimer's clock at the notice. It can only lengthen the
	// floor: claims always keep at least the store's MaxRestoreWindow. Zero
	// means DefaultRestoreWindow (a test fleet's TestBound with a reserve:
	// its shorter window).
	RestoreWindow time.Duration
	// RequestTimeout bounds the re-read that decides a write of unknown
	// outcome (its caller's context may be the one that ended). Zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// ACL is the ACL of every znode the store creates (the path, its
	// parents, the origin and the lease znodes). Nil means
	// zk.WorldACL(zk.PermAll): anyone who reaches the servers may rewrite
	// the leases. Where others can, give the fleet's credentials, e.g.
	// zk.DigestACL(zk.PermAll, user, password) with the same user in Auth.
	ACL []zk.ACL
	// Auth is the credentials Connect adds to its session, and to every
	// session that replaces it, as zk.Conn.AddAuth takes them. A Store on
	// New's connection uses whatever the caller added to it.
	Auth []Auth
	// TestBound is for the project's own tests (its type is internal: a
	// library user leaves it zero): it shortens MaxNoticeWindow, and with a
	// reserve MaxRestoreWindow, for a test fleet whose every process the
	// test starts with the same bound (internal/testbound).
	TestBound testbound.Bound
}

// Auth is one set of credentials for a ZooKeeper session: a scheme such
// as "digest" and its secret ("user:password" for digest).
type Auth struct {
	Scheme string
	Secret []byte
}

// withDefaults checks cfg and fills in its defaults: lease.ErrInvalid,
// saying what to fix, for a path, region or duration it cannot take.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Path == "" {
		cfg.Path = DefaultPath
	}
	if err := checkPath(cfg.Path); err != nil {
		return cfg, err
	}
	if cfg.Region < 0 || cfg.Region > math.MaxInt32 {
		return cfg, fmt.Errorf("%w: zkstore: region %d: give one from 0 to %d", lease.ErrInvalid, cfg.Region, math.MaxInt32)
	}
	if cfg.RestoreWindow < 0 {
		return cfg, fmt.Errorf("%w: zkstore: RestoreWindow %v is negative: give zero (the default, %v) or more", lease.ErrInvalid, cfg.RestoreWindow, DefaultRestoreWindow)
	}
	if err := cfg.TestBound.Check(); err != nil {
		return cfg, fmt.Errorf("%w: zkstore: %v", lease.ErrInvalid, err)
	}
	if cfg.RestoreWindow == 0 {
		cfg.RestoreWindow = DefaultRestoreWindow
		if w := boundRestoreWindow(cfg.TestBound); w > 0 {
			cfg.RestoreWindow = w
		}
	}
	if cfg.RequestTimeout < 0 {
		return cfg, fmt.Errorf("%w: zkstore: RequestTimeout %v is negative", lease.ErrInvalid, cfg.RequestTimeout)
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	for _, a := range cfg.Auth {
		if a.Scheme == "" {
			return cfg, fmt.Errorf("%w: zkstore: an Auth without a scheme: give one such as \"digest\"", lease.ErrInvalid)
		}
	}
	if cfg.ACL == nil {
		cfg.ACL = zk.WorldACL(zk.PermAll)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return cfg, nil
}

// checkPath refuses a Path ZooKeeper would not take, or "/".
func checkPath(p string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: zkstore: path %q %s: give an absolute znode path such as %q", lease.ErrInvalid, p, why, DefaultPath)
	}
	switch {
	case !strings.HasPrefix(p, "/"):
		return bad("is not absolute")
	case p == "/":
		return bad("is the root, which the store would share with everything else")
	case strings.HasSuffix(p, "/"):
		return bad("ends with a slash")
	}
	for _, el := range strings.Split(p[1:], "/") {
		switch {
		case el == "", el == ".", el == "..":
			return bad("has an empty, . or .. element")
		case el == "zookeeper" && strings.HasPrefix(p, "/zookeeper"):
			return bad("is under /zookeeper, which ZooKeeper reserves")
		case strings.ContainsFunc(el, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return bad("holds a control character")
		}
	}
	return nil
}
