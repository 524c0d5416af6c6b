package etcdstore

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// Defaults for the zero fields of Config.
const (
	DefaultPrefix         = "/snowfence"
	DefaultRequestTimeout = 5 * time.Second
	DefaultRestoreMargin  = 10 * time.Second
)

// Config configures a Store. The zero value is a valid configuration: keys
// under /snowfence/0/, no logging, 5 s for the store's own requests, a 10 s
// margin after a restore for claims that bring no window of their own, and
// the system clock.
type Config struct {
	// Prefix is where the store's keys live: <Prefix>/<Region>/owner/<n>,
	// <Prefix>/journal/<Region>/<n>/… and so on (docs/etcd-keys.md). A trailing slash is dropped. Zero:
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
	// RestoreMargin: once this store has seen etcd go back in time (a
	// restore from an earlier state), every claim starts at least this
	// long after the moment it noticed, so that no timestamp a holder cut
	// off by the restore may still issue — or reserved before the restore
	// and lost with it — is issued again. It is the fallback for claims
	// that bring no ClaimRequest.RestoreWindow (the keeper's own window);
	// when both are set the longer counts. It must cover the longest any
	// holder may issue after its last acknowledged renewal (the keeper's
	// max of Reserve and SelfFence) plus clock skew. Zero: 10 s.
	RestoreMargin time.Duration
	// Clock is the clock on which the store notes the moment it noticed a
	// restore, and measures the time since: the restore floor of a claim
	// is the claimer's clock (ClaimRequest.NowMs) plus the restore window
	// minus the time elapsed since then, on this clock's monotonic
	// reading. Give it the keepers' clock. Nil: snowfence.SystemClock().
	Clock snowfence.Clock
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
	if c.Clock == nil {
		c.Clock = snowfence.SystemClock()
	}
	if c.RestoreMargin <= 0 {
		c.RestoreMargin = DefaultRestoreMargin
	}
	return c, nil
}
