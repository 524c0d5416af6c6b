package k8sstore

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/lease"
)

// DefaultPrefix is Config.Prefix when empty.
const DefaultPrefix = "snowfence"

// MaxPrefixLen bounds Config.Prefix: with "-r", a region of up to 10
// digits, "-" and a machine number of up to 19, an object's name stays a
// valid DNS-1123 subdomain (253 characters), and the prefix a valid label
// value (63), with room to spare.
const MaxPrefixLen = 40

// DefaultRestoreWindow is Config.RestoreWindow when zero, and
// MaxRestoreWindow: longer than the table timings' lease (5 min), so it
// covers the Reserve and SelfFence of every keeper on the table timings
// (Timings), with 8 % clock skew — as zkstore's and the lease tables'.
const DefaultRestoreWindow = 6 * time.Minute

// DefaultRequestTimeout is Config.RequestTimeout when zero.
const DefaultRequestTimeout = 5 * time.Second

// Config says where in Kubernetes a Store keeps its leases. Only
// Namespace is required; every other field's zero value is a default.
type Config struct {
	// Namespace is the namespace of every object the store reads and
	// writes. Required: the store touches nothing cluster-scoped, and its
	// service account needs get, list, create and patch on
	// leases.coordination.k8s.io there, nothing more (doc.go).
	Namespace string
	// Prefix begins the name of every object (<prefix>-origin,
	// <prefix>-r<region>-<n>) and is the value of its snowfence.io/prefix
	// label: a DNS-1123 label (lower-case letters, digits and '-',
	// starting and ending with a letter or digit) of at most MaxPrefixLen
	// characters. Empty means DefaultPrefix. Fleets that share a
	// namespace need prefixes of their own.
	Prefix string
	// Region is the keyspace whose leases this store reads and writes: 0
	// to math.MaxInt32.
	Region int
	// Clock fills in the Lease objects' spec.renewTime and acquireTime,
	// which are for kubectl's eyes only: no decision of the store reads
	// them. Nil means snowfence.SystemClock().
	Clock snowfence.Clock
	// Logger receives claims, failed renewals, releases and restores
	// noticed. Nil discards them.
	Logger *slog.Logger
	// RestoreWindow is the restore window of claims that give none
	// (lease.ClaimRequest.RestoreWindow zero): once the store noticed that
	// the API server's data went back in time, claims start at least this
	// long after the claimer's clock at the notice. It can only lengthen
	// the floor: claims always keep at least MaxRestoreWindow. Zero means
	// DefaultRestoreWindow (a test fleet's TestBound with a reserve: its
	// shorter window).
	RestoreWindow time.Duration
	// RequestTimeout bounds the re-read that decides a write of unknown
	// outcome (its caller's context may be the one that ended). Zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// TestBound is for the project's own tests (its type is internal: a
	// library user leaves it zero): it shortens MaxNoticeWindow, and with a
	// reserve MaxRestoreWindow, for a test fleet whose every process the
	// test starts with the same bound (internal/testbound).
	TestBound testbound.Bound
}

// withDefaults checks cfg and fills in its defaults: lease.ErrInvalid,
// saying what to fix, for a field it cannot take.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Namespace == "" {
		return cfg, fmt.Errorf("%w: k8sstore: no Namespace: give the namespace the leases live in (the service account needs get, list, "+
			"create and patch on leases.coordination.k8s.io there)", lease.ErrInvalid)
	}
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return cfg, fmt.Errorf("%w: k8sstore: Namespace %q is not a namespace name: %s", lease.ErrInvalid, cfg.Namespace, errs[0])
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if err := checkPrefix(cfg.Prefix); err != nil {
		return cfg, err
	}
	if cfg.Region < 0 || cfg.Region > math.MaxInt32 {
		return cfg, fmt.Errorf("%w: k8sstore: region %d: give one from 0 to %d", lease.ErrInvalid, cfg.Region, math.MaxInt32)
	}
	if cfg.RestoreWindow < 0 {
		return cfg, fmt.Errorf("%w: k8sstore: RestoreWindow %v is negative: give zero (the default, %v) or more", lease.ErrInvalid, cfg.RestoreWindow, DefaultRestoreWindow)
	}
	if err := cfg.TestBound.Check(); err != nil {
		return cfg, fmt.Errorf("%w: k8sstore: %v", lease.ErrInvalid, err)
	}
	if cfg.RestoreWindow == 0 {
		cfg.RestoreWindow = DefaultRestoreWindow
		if w := boundRestoreWindow(cfg.TestBound); w > 0 {
			cfg.RestoreWindow = w
		}
	}
	if cfg.RequestTimeout < 0 {
		return cfg, fmt.Errorf("%w: k8sstore: RequestTimeout %v is negative: give zero (the default, %v) or more", lease.ErrInvalid, cfg.RequestTimeout, DefaultRequestTimeout)
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = snowfence.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return cfg, nil
}

// checkPrefix refuses a Prefix that is no DNS-1123 label of at most
// MaxPrefixLen characters.
func checkPrefix(p string) error {
	if len(p) > MaxPrefixLen {
		return fmt.Errorf("%w: k8sstore: Prefix %q has %d characters: give at most %d, so that object names and labels stay within "+
			"Kubernetes' limits", lease.ErrInvalid, p, len(p), MaxPrefixLen)
	}
	if errs := validation.IsDNS1123Label(p); len(errs) > 0 {
		return fmt.Errorf("%w: k8sstore: Prefix %q: %s; give one such as %q", lease.ErrInvalid, p, errs[0], DefaultPrefix)
	}
	return nil
}

// Check reports what Open would refuse in cfg (lease.ErrInvalid, saying
// what to fix), without a connection: for a caller that checks its
// configuration before it connects.
func (cfg Config) Check() error {
	_, err := cfg.withDefaults()
	return err
}
