package etcdstore

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// Defaults for the zero fields of Config.
const (
	DefaultPrefix         = "/snowfence"
	DefaultRequestTimeout = 5 * time.Second
	DefaultRestoreMargin  = 10 * time.Second
)

// Config configures a Store. The zero value is a valid configuration: keys
// under /snowfence/0/, no logging, 5 s for the store's own requests, and a
// 10 s margin after a restore.
type Config struct {
	// Prefix is where the store's keys live: <Prefix>/<Region>/owner/<n>
	// and so on (docs/etcd-keys.md). A trailing slash is dropped. Zero:
	// "/snowfence".
	Prefix string
	// Region is the region whose machine numbers this store leases. Each
	// region has its own keys, so the same machine number may be held once
	// per region. Zero is region 0; negative is invalid.
	Region int
	// Logger receives a line for every claim, failed renewal, release,
	// quarantine, raised mark and detected restore, with the machine,
	// holder, token and mark. Nil discards them.
	Logger *slog.Logger
	// RequestTimeout bounds the requests the store makes on its own after
	// the caller's request failed or its context ended: re-reading a claim
	// whose outcome is unknown, undoing a claim, revoking an etcd lease.
	// Zero: 5 s.
	RequestTimeout time.Duration
	// RestoreMargin: once this store has seen etcd restored from an earlier
	// state, every claim starts at least this long after the moment it
	// noticed, so that no timestamp reserved before the restore — and lost
	// with it — is issued again. It must cover the longest reservation any
	// holder makes ahead of its clock (the keeper's Reserve) plus clock
	// skew. Zero: 10 s.
	RestoreMargin time.Duration
}

// withDefaults returns c with its zero fields filled in, or an error for a
// field that cannot be used.
func (c Config) withDefaults() (Config, error) {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	c.Prefix = strings.TrimRight(c.Prefix, "/")
	if c.Region < 0 {
		return c, fmt.Errorf("%w: etcdstore: region %d is negative", lease.ErrInvalid, c.Region)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RestoreMargin <= 0 {
		c.RestoreMargin = DefaultRestoreMargin
	}
	return c, nil
}
