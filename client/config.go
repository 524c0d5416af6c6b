package client

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/snowfence/snowfence"
)

// Defaults of the Config fields left zero.
const (
	// DefaultMaxAge is how long a buffered ID may wait to be handed out,
	// counted from the moment the request that fetched it was sent. See
	// Config.MaxAge for why it is one second.
	DefaultMaxAge = time.Second
	// DefaultMinRefill is the smallest refill: a caller taking one ID now
	// and then gets a few more with it, so a short burst needs one round
	// trip, not one per ID.
	DefaultMinRefill = 8
	// DefaultMaxBuffer is the most IDs a Client holds: 512 KiB of int64,
	// enough for a quarter second at the rate one server issues (4,096,000
	// IDs per second is the v1 budget of one generator).
	DefaultMaxBuffer = 1 << 16
	// DefaultRequestTimeout bounds one request to an endpoint.
	DefaultRequestTimeout = 2 * time.Second
	// DefaultMaxAttempts is how many requests one refill sends before it
	// gives up with ErrUnavailable.
	DefaultMaxAttempts = 8
	// DefaultBaseBackoff and DefaultMaxBackoff bound the jittered
	// exponential wait between attempts.
	DefaultBaseBackoff = 50 * time.Millisecond
	DefaultMaxBackoff  = 2 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After the client honours;
	// a longer one is cut to it.
	DefaultMaxRetryAfter = 10 * time.Second
	// DefaultFailureThreshold is how many consecutive failed requests take
	// an endpoint out of service.
	DefaultFailureThreshold = 3
	// DefaultRecoveryProbes is how many consecutive healthy probes put an
	// endpoint back in service.
	DefaultRecoveryProbes = 3
	// DefaultProbeInterval is how often an endpoint out of service is
	// probed.
	DefaultProbeInterval = time.Second
)

// Config configures a Client. Every field but Endpoints may be left zero;
// each field says what zero means. Negative numbers and durations are
// refused.
type Config struct {
	// Endpoints are the base URLs of the servers, in order of preference:
	// the local region first, backups after ("https://ids.eu-west.corp",
	// "https://ids.us-east.corp"). Requests go to the first endpoint in
	// service. Required; each must be an absolute http or https URL
	// without a query; a trailing slash is ignored.
	Endpoints []string
	// HealthURLs are the URLs probed for each endpoint, in the order of
	// Endpoints. Nil means each endpoint's /healthz. Set them when
	// /healthz is served on a separate admin listener.
	HealthURLs []string

	// HTTPClient sends every request. Nil means a client of the Client's
	// own, on a clone of http.DefaultTransport (with TLS as its TLS
	// configuration when TLS is set); Close closes its idle connections.
	// Its Timeout, if any, applies on top of RequestTimeout.
	HTTPClient *http.Client
	// TLS is the TLS configuration of the Client's own transport: for
	// mutual TLS, set Certificates (or GetClientCertificate) and RootCAs.
	// It is cloned. Setting both TLS and HTTPClient is an error: configure
	// the TLS of your own client's transport instead.
	TLS *tls.Config
	// RequestTimeout bounds one request, its body included. Zero means
	// DefaultRequestTimeout. It is measured by the runtime's timers, not by
	// Clock: it guards against real network stalls.
	RequestTimeout time.Duration

	// MaxAge is how long a buffered ID may wait: an ID is handed out only
	// while less than MaxAge has passed since the request that fetched it
	// was sent (the server minted it after that moment, so this overstates
	// its age and never understates it); older IDs are dropped, never
	// handed out. Zero means DefaultMaxAge, one second.
	//
	// An ID's timestamp is the moment the server minted it, so an ID
	// handed out from the buffer is up to MaxAge older than the moment
	// Next returned it. A caller that reads time from an ID (ID.Time) is
	// off by up to MaxAge (plus the clock skew between hosts); a caller
	// that sorts records by ID sees two records created up to MaxAge apart
	// in either order (IDs of two clients, or of one client after a
	// failover, interleave by their minting times, not by when they were
	// handed out). One second keeps that error at the resolution people
	// read timestamps in logs at, and a steady caller still needs only a
	// few requests per second. Uniqueness does not depend on MaxAge: an ID
	// is unique however long it waits.
	MaxAge time.Duration
	// RefillPeriod is the time one refill should last at the caller's
	// observed rate: each refill asks for about rate × RefillPeriod IDs,
	// at most twice and at least half the previous refill (the way Leaf
	// sizes its segments), within MinRefill and the room in the buffer.
	// Zero means MaxAge / 4. It must be less than MaxAge.
	RefillPeriod time.Duration
	// MinRefill is the smallest refill. Zero means DefaultMinRefill.
	MinRefill int
	// MaxBuffer is the most IDs the Client holds. Zero means
	// DefaultMaxBuffer. It must be at least MinRefill.
	MaxBuffer int
	// LowWater is the number of buffered IDs at or below which Next starts
	// a refill in the background. Zero means half the current refill size,
	// so a refill has about half a RefillPeriod to arrive before the buffer
	// runs dry.
	LowWater int

	// MaxAttempts is how many requests a refill sends (retries and
	// failovers included) before it gives up; callers waiting on it then
	// get an error matching ErrUnavailable. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// BaseBackoff and MaxBackoff bound the wait after a failed attempt:
	// between half and all of BaseBackoff·2^k, at most MaxBackoff, where k
	// counts a request's failures since it last failed over from an
	// endpoint it had not failed over from before (after the last endpoint
	// in service is taken out, k keeps growing). Zero means
	// DefaultBaseBackoff and DefaultMaxBackoff.
	BaseBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps the Retry-After the client honours after a 503
	// or 429. Zero means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// FailureThreshold is how many consecutive failed requests (503 and
	// other 5xx, connection errors, timeouts, malformed answers; not 429)
	// take an endpoint out of service. Zero means DefaultFailureThreshold.
	FailureThreshold int
	// RecoveryProbes is how many consecutive 200s from an endpoint's
	// health URL put it back in service. Zero means DefaultRecoveryProbes.
	RecoveryProbes int
	// ProbeInterval is how often endpoints out of service are probed.
	// Zero means DefaultProbeInterval.
	ProbeInterval time.Duration

	// Schedule, if set, makes the client refuse an answer that repeats
	// IDs it received before, such as a response replayed by a proxy or
	// a server that answered the same batch twice. Nil means no such
	// check: the client then trusts the servers, and whatever stands
	// between them and it, never to answer with IDs they answered
	// before; it checks only that each answer's IDs strictly increase.
	// Set it to the schedule the servers mint with
	// (snowfence.DefaultSchedule() for the v1 layout); a zero Schedule is
	// refused.
	//
	// With it, the client decodes each answer's first and last IDs and
	// remembers, for each (layout, region number, machine number), the
	// last ID it received; an answer whose IDs of some (layout, region,
	// machine) do not start above the last one received for it yields
	// no IDs, fails with ErrBadResponse, and counts as a failure of the
	// endpoint. This never refuses a sound answer: one machine number's
	// IDs strictly increase over time, even across holders (a new holder
	// of a number starts above the old holder's mark, and the old holder
	// stopped issuing before the number could be claimed again), and one
	// Client sends one request at a time, each after the answer before,
	// so every later answer for the same (layout, region, machine) starts
	// above the earlier ones. That holds when the endpoints share one ID
	// space, as IDs must for uniqueness across them: no two servers of
	// Endpoints hold the same number of the same region at once. It costs
	// two decodes per answer, none per ID (every ID of an answer is
	// decoded only when its first and last are of different numbers or
	// layouts, as when a batch is minted across a layout change), and
	// memory for at most one ID per (layout, region, machine).
	Schedule *snowfence.Schedule

	// Logger receives the client's few log lines (endpoints taken out and
	// back, refills that failed). Nil discards them.
	Logger *slog.Logger
	// Clock measures the age of buffered IDs, the consumption rate, and
	// times backoff and probing. Nil means the system's clocks.
	Clock snowfence.Clock
}

// settings is a Config with its defaults filled in and its endpoints
// parsed.
type settings struct {
	Config
	mintURLs   []string // base + "/v1/ids?count="
	healthURLs []string
	// schedule is *Schedule, copied; checkRepeats is false without Schedule.
	schedule     snowfence.Schedule
	checkRepeats bool
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: client: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// check validates cfg and fills in its defaults.
func check(cfg Config) (*settings, error) {
	s := &settings{Config: cfg}
	if len(cfg.Endpoints) == 0 {
		return nil, invalid("Config.Endpoints is empty; give the base URL of at least one server, the local region first")
	}
	if cfg.HealthURLs != nil && len(cfg.HealthURLs) != len(cfg.Endpoints) {
		return nil, invalid("Config.HealthURLs has %d URLs for %d endpoints; give one per endpoint, or none for each endpoint's /healthz", len(cfg.HealthURLs), len(cfg.Endpoints))
	}
	for i, e := range cfg.Endpoints {
		base, err := baseURL(e)
		if err != nil {
			return nil, invalid("Config.Endpoints[%d] %q: %v", i, e, err)
		}
		s.mintURLs = append(s.mintURLs, base+"/v1/ids?count=")
		h := base + "/healthz"
		if cfg.HealthURLs != nil {
			if _, err := absURL(cfg.HealthURLs[i]); err != nil {
				return nil, invalid("Config.HealthURLs[%d] %q: %v", i, cfg.HealthURLs[i], err)
			}
			h = cfg.HealthURLs[i]
		}
		s.healthURLs = append(s.healthURLs, h)
	}
	if cfg.HTTPClient != nil && cfg.TLS != nil {
		return nil, invalid("both Config.HTTPClient and Config.TLS are set; set the TLS configuration on your client's transport, or leave HTTPClient nil")
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"RequestTimeout", &s.RequestTimeout, DefaultRequestTimeout},
		{"MaxAge", &s.MaxAge, DefaultMaxAge},
		{"BaseBackoff", &s.BaseBackoff, DefaultBaseBackoff},
		{"MaxBackoff", &s.MaxBackoff, DefaultMaxBackoff},
		{"MaxRetryAfter", &s.MaxRetryAfter, DefaultMaxRetryAfter},
		{"ProbeInterval", &s.ProbeInterval, DefaultProbeInterval},
		{"RefillPeriod", &s.RefillPeriod, 0},
	}
	for _, d := range durations {
		switch {
		case *d.v < 0:
			return nil, invalid("Config.%s is %v; use a positive duration, or zero for the default", d.name, *d.v)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if s.RefillPeriod == 0 {
		s.RefillPeriod = s.MaxAge / 4
	}
	if s.RefillPeriod >= s.MaxAge {
		return nil, invalid("Config.RefillPeriod (%v) is not less than MaxAge (%v); IDs would expire before a refill is used up", s.RefillPeriod, s.MaxAge)
	}
	if s.MaxBackoff < s.BaseBackoff {
		return nil, invalid("Config.MaxBackoff (%v) is less than BaseBackoff (%v)", s.MaxBackoff, s.BaseBackoff)
	}
	counts := []struct {
		name string
		v    *int
		def  int
	}{
		{"MinRefill", &s.MinRefill, DefaultMinRefill},
		{"MaxBuffer", &s.MaxBuffer, DefaultMaxBuffer},
		{"LowWater", &s.LowWater, 0},
		{"MaxAttempts", &s.MaxAttempts, DefaultMaxAttempts},
		{"FailureThreshold", &s.FailureThreshold, DefaultFailureThreshold},
		{"RecoveryProbes", &s.RecoveryProbes, DefaultRecoveryProbes},
	}
	for _, c := range counts {
		switch {
		case *c.v < 0:
			return nil, invalid("Config.%s is %d; use a positive number, or zero for the default", c.name, *c.v)
		case *c.v == 0:
			*c.v = c.def
		}
	}
	if s.MaxBuffer < s.MinRefill {
		return nil, invalid("Config.MaxBuffer (%d) is less than MinRefill (%d)", s.MaxBuffer, s.MinRefill)
	}
	if s.MaxBuffer > 1<<26 {
		return nil, invalid("Config.MaxBuffer (%d) is over %d; a buffer that large holds more than MaxAge lets a caller use", s.MaxBuffer, 1<<26)
	}
	if s.LowWater >= s.MaxBuffer {
		return nil, invalid("Config.LowWater (%d) is not less than MaxBuffer (%d); the client would refill without end", s.LowWater, s.MaxBuffer)
	}
	if cfg.Schedule != nil {
		if cfg.Schedule.IsZero() {
			return nil, invalid("Config.Schedule is the zero Schedule, which decodes nothing; give the servers' schedule (snowfence.DefaultSchedule() for v1), or leave it nil for no check of repeated IDs")
		}
		s.schedule, s.checkRepeats = *cfg.Schedule, true
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// baseURL checks an endpoint and returns it without a trailing slash.
func baseURL(e string) (string, error) {
	u, err := absURL(e)
	if err != nil {
		return "", err
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("a base URL takes no query or fragment")
	}
	return strings.TrimRight(e, "/"), nil
}

func absURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("not an absolute http or https URL (such as https://ids.example:8080)")
	}
	return u, nil
}
