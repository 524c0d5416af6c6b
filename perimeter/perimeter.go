package perimeter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
)

// DefaultPollInterval is how often the files are checked for changes when
// Config.PollInterval is zero.
const DefaultPollInterval = 5 * time.Second

// ErrInvalidConfig is wrapped by New's errors about Config itself.
var ErrInvalidConfig = errors.New("perimeter: invalid config")

// ErrCallerDenied is wrapped by the refusal of an identity the callers file
// does not allow, at the handshake and (for a connection made before a
// reload removed it) per request.
var ErrCallerDenied = errors.New("perimeter: caller not allowed")

// Config configures a Perimeter. Every field may be left zero, but a
// Perimeter with neither TLS files nor a callers file does nothing.
type Config struct {
	// CertFile and KeyFile are the server's certificate (chain, PEM) and
	// private key (PEM), and ClientCAFile the bundle of CA certificates
	// (PEM) whose signatures callers' certificates must carry. Set all
	// three for mutual TLS, or none for no TLS.
	CertFile, KeyFile, ClientCAFile string
	// CallersFile is the callers file (see ParseCallers): who may connect
	// and each caller's quota. Empty: any caller with a certificate the
	// client CAs signed may connect, and there are no quotas (Quota
	// returns nil).
	CallersFile string
	// NextProtos are the ALPN protocols the TLS configuration offers, in
	// order of preference. Nil means "h2" then "http/1.1", what an
	// http.Server serving TLS speaks by default; set []string{"http/1.1"}
	// for a server with HTTP/2 turned off (httptest's, for one).
	NextProtos []string
	// PollInterval is how often the files are read for changes (see
	// Reload). Zero means DefaultPollInterval; negative means never (call
	// Reload yourself, e.g. on SIGHUP).
	PollInterval time.Duration
	// Clock paces polling and the quota buckets (its monotonic reading, so
	// wall-clock steps neither refill nor drain a bucket). Nil means
	// snowfence.SystemClock(). Certificate validity is checked against
	// the real wall clock, as crypto/tls does.
	Clock snowfence.Clock
	// Logger receives one line per reload and per refused handshake. Nil
	// discards them.
	Logger *slog.Logger
	// Registerer is where the per-caller metrics are registered. Nil: they
	// are kept but not registered.
	Registerer prometheus.Registerer

	// onReload, if set, is called after every reload attempt of a file
	// (tests).
	onReload func(file string, err error)
}

// Perimeter is the identity perimeter of one server: the mutual-TLS
// configuration that reloads its files, the authorization of each
// connection, and the per-caller quotas. It is safe for concurrent use.
type Perimeter struct {
	cfg     Config
	clock   snowfence.Clock
	log     *slog.Logger
	metrics *metrics

	nextProtos                 []string
	base                       *tls.Config                // handed out by TLSConfig; nil without TLS
	current                    atomic.Pointer[tls.Config] // the configuration of new handshakes
	trust                      atomic.Pointer[trust]      // the client CAs in force; nil without TLS
	callers                    atomic.Pointer[table]      // nil without a callers file
	noneRefused, deniedRefused prometheus.Counter         // at="handshake"
	untrustedRefused           prometheus.Counter         // at="request", for a caller with no counters of its own

	grants sync.Pool // of *grant

	// reloadMu serializes reloads; the files are read under it alone, so
	// a slow read holds up no handshake, request or SetHolders.
	reloadMu sync.Mutex
	tried    map[string]attempt     // the files as last attempted, by unit (reloadMu)
	busy     atomic.Pointer[string] // the file being read, or the unit being loaded, while a reload runs

	mu      sync.Mutex // guards holders, pair and pool, and what is built of them
	holders int        // the fleet's live holders, at least 1 (SetHolders)
	pair    tls.Certificate
	pool    *x509.CertPool
	stop    context.CancelFunc
	done    chan struct{}
	closed  atomic.Bool
}

// attempt is the last load of a unit's files.
type attempt struct {
	digests string // each file's digest, in order
	ok      bool   // it loaded: its configuration is in force
}

// Units of files that reload together.
const (
	unitCert    = "tls-cert" // certificate and key: a pair swaps only whole
	unitCA      = "client-ca"
	unitCallers = "callers"
)

// New loads every file in cfg (any error is returned: a server should not
// start on a bad file) and starts polling them for changes unless
// cfg.PollInterval is negative. Close stops the polling.
func New(cfg Config) (*Perimeter, error) {
	tlsSet := cfg.CertFile != "" || cfg.KeyFile != "" || cfg.ClientCAFile != ""
	if tlsSet && (cfg.CertFile == "" || cfg.KeyFile == "" || cfg.ClientCAFile == "") {
		return nil, fmt.Errorf("%w: CertFile, KeyFile and ClientCAFile go together (got %q, %q, %q)", ErrInvalidConfig, cfg.CertFile, cfg.KeyFile, cfg.ClientCAFile)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = snowfence.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	p := &Perimeter{cfg: cfg, clock: cfg.Clock, log: cfg.Logger, metrics: m, tried: map[string]attempt{},
		nextProtos: cfg.NextProtos, noneRefused: m.refused.WithLabelValues(labelNone, "handshake"), deniedRefused: m.refused.WithLabelValues(labelUnlisted, "handshake"),
		untrustedRefused: m.refused.WithLabelValues(labelUnlisted, "request")}
	p.grants.New = func() any { return new(grant) }
	p.holders = 1
	m.holders.Set(1)
	if p.nextProtos == nil {
		p.nextProtos = []string{"h2", "http/1.1"}
	}
	if tlsSet {
		if err := p.reloadCert(true); err != nil {
			return nil, err
		}
		if err := p.reloadCA(true); err != nil {
			return nil, err
		}
		p.base = &tls.Config{
			MinVersion: tls.VersionTLS13,
			ClientAuth: tls.RequireAndVerifyClientCert,
			NextProtos: p.nextProtos,
			// Every handshake takes the configuration in force now: the
			// last good certificate and CA pool.
			GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return p.current.Load(), nil },
			VerifyConnection:   p.verifyConnection,
		}
	}
	if cfg.CallersFile != "" {
		if err := p.reloadCallers(true); err != nil {
			return nil, err
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	p.stop, p.done = stop, make(chan struct{})
	if cfg.PollInterval > 0 && (tlsSet || cfg.CallersFile != "") {
		go p.poll(ctx)
	} else {
		close(p.done)
	}
	return p, nil
}

// TLSConfig returns the server's mutual-TLS configuration, or nil without
// TLS files. Set it as http.Server.TLSConfig and serve with
// ServeTLS(ln, "", ""). Each handshake uses the certificate and client CAs
// in force at that moment (tls.Config.GetConfigForClient), so a reload
// reaches new connections at once and drops no open one. The minimum
// version is TLS 1.3: in TLS 1.2 the client's certificate, and with it the
// caller's identity, crosses the network in the clear, and 1.3 drops
// renegotiation and the weak key exchanges; every client this service has
// (Go, and anything built this decade) speaks 1.3.
//
// Session tickets keep working across reloads: the per-handshake
// configurations set no ticket keys, so crypto/tls uses those of the
// http.Server's configuration. A resumed session is re-authorized
// (VerifyConnection runs on resumption too) and crypto/tls re-verifies its
// chain against the client CAs in force, so a caller removed from the
// callers file, or whose CA was, cannot resume its way back in. An open
// connection is held to the same rules on every request (see Take), so a
// reload that removes a caller or its CA, and the expiry of a certificate
// in its chain, reach kept-alive and HTTP/2 connections too.
func (p *Perimeter) TLSConfig() *tls.Config { return p.base }

// verifyConnection authorizes a handshake, full or resumed: the verified
// leaf must name a caller the callers file allows.
func (p *Perimeter) verifyConnection(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 { // RequireAndVerifyClientCert already refused it
		p.noneRefused.Inc()
		return ErrNoIdentity
	}
	id, err := identityOf(cs.PeerCertificates[0])
	if err != nil {
		p.noneRefused.Inc()
		p.log.Info("handshake refused: the certificate names no caller", "reason", err.Error(), "subject", cs.PeerCertificates[0].Subject.String(), "resumed", cs.DidResume)
		return ErrNoIdentity
	}
	t := p.callers.Load()
	if t == nil {
		return nil
	}
	if _, _, allowed := t.callers.Lookup(id); !allowed {
		p.deniedRefused.Inc()
		p.log.Info("handshake refused: caller not allowed by the callers file", "caller", id, "resumed", cs.DidResume)
		return fmt.Errorf("%w: %q is not listed and the default is deny", ErrCallerDenied, id)
	}
	return nil
}

// closeWait bounds how long Close waits for a reload under way. A reload
// reads a few small regular files and cannot block on a named pipe or a
// device (readRegular), but a read on a hung network filesystem can.
const closeWait = 2 * time.Second

// ErrReloadStuck is wrapped by Close's error when a reload under way did
// not finish within closeWait: Close returned without it.
var ErrReloadStuck = errors.New("perimeter: a reload is stuck")

// Close stops polling. It does not affect connections or configurations
// already handed out. It waits for a reload under way for at most 2 s (on
// Config.Clock), then returns an error wrapping ErrReloadStuck naming the
// file, so a shutdown never waits on a hung read; the stuck reload's
// goroutine is left behind.
func (p *Perimeter) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.stop()
	select {
	case <-p.done:
		return nil
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waited := make(chan struct{})
	go func() {
		if p.clock.Sleep(ctx, closeWait) == nil {
			close(waited)
		}
	}()
	select {
	case <-p.done:
		return nil
	case <-waited:
	}
	at := "the files"
	if b := p.busy.Load(); b != nil {
		at = *b
	}
	err := fmt.Errorf("%w: a reload, at %s, has not finished after %s; not waiting for it (a read on a hung filesystem?)", ErrReloadStuck, at, closeWait)
	p.log.Error("closing with a reload stuck", "error", err)
	return err
}

func (p *Perimeter) poll(ctx context.Context) {
	defer close(p.done)
	for {
		if err := p.clock.Sleep(ctx, p.cfg.PollInterval); err != nil {
			return
		}
		p.Reload() // errors are logged and counted
	}
}

// Reload reads every file and loads those whose content changed since it
// was last read (SHA-256 of the bytes, see readRegular: an edit that keeps
// the size and modification time is seen too). Only regular files are
// read (symbolic links are followed), each up to its cap (MaxPEMFileSize,
// MaxCallersFileSize): a named pipe, a device or a larger file is an
// error, so a reload cannot block or grow without bound. A file that fails
// to load leaves the last good configuration in force; the failure is
// logged once per change (the same failure again is not logged, nor
// returned), counted, shown by the metrics until a good file loads, and
// returned (joined). The certificate and key load as a pair, so a rotation
// that writes one before the other swaps only once both match. The
// polling calls it; call it yourself for an immediate check.
func (p *Perimeter) Reload() error {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	defer p.busy.Store(nil)
	var errs []error
	if p.base != nil {
		errs = append(errs, p.reloadCertLocked(false), p.reloadCALocked(false))
	}
	if p.cfg.CallersFile != "" {
		errs = append(errs, p.reloadCallersLocked(false))
	}
	return errors.Join(errs...)
}

func (p *Perimeter) reloadCert(initial bool) error {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	return p.reloadCertLocked(initial)
}

func (p *Perimeter) reloadCA(initial bool) error {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	return p.reloadCALocked(initial)
}

func (p *Perimeter) reloadCallers(initial bool) error {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	return p.reloadCallersLocked(initial)
}

// read reads the files of unit, each up to limit bytes. changed reports
// whether they differ from the last attempt (recorded as attempted);
// when they do not, the unit's last success is moved up if that attempt
// loaded. err is the first file's that could not be read.
func (p *Perimeter) read(unit string, limit int64, paths ...string) (contents [][]byte, changed bool, err error) {
	contents = make([][]byte, len(paths))
	var digests strings.Builder
	for i, path := range paths {
		p.busy.Store(&path)
		b, e := readRegular(path, limit)
		digests.WriteString(digest(b, e))
		digests.WriteByte(0)
		contents[i] = b
		if err == nil {
			err = e
		}
	}
	p.busy.Store(&unit)
	last, seen := p.tried[unit]
	if seen && last.digests == digests.String() {
		if last.ok {
			p.metrics.lastSuccess.WithLabelValues(unit).Set(p.wallSeconds())
		}
		return nil, false, nil
	}
	p.tried[unit] = attempt{digests: digests.String()}
	return contents, true, err
}

func (p *Perimeter) reloadCertLocked(initial bool) error {
	b, changed, err := p.read(unitCert, MaxPEMFileSize, p.cfg.CertFile, p.cfg.KeyFile)
	if !changed {
		return nil
	}
	var pair tls.Certificate
	if err == nil {
		pair, err = loadKeyPair(p.cfg.CertFile, b[0], p.cfg.KeyFile, b[1], time.Now())
	}
	if err == nil {
		p.mu.Lock()
		p.pair = pair
		p.publish()
		p.mu.Unlock()
	}
	return p.reloaded(unitCert, initial, err, pair.Leaf)
}

func (p *Perimeter) reloadCALocked(initial bool) error {
	b, changed, err := p.read(unitCA, MaxPEMFileSize, p.cfg.ClientCAFile)
	if !changed {
		return nil
	}
	var pool *x509.CertPool
	if err == nil {
		pool, err = loadCAs(p.cfg.ClientCAFile, b[0])
	}
	if err == nil {
		p.mu.Lock()
		p.pool = pool
		p.publish()
		// After publish: a connection accepted once this generation is in
		// force (ConnContext) handshakes with this pool or a later one.
		var gen uint64
		if prev := p.trust.Load(); prev != nil {
			gen = prev.gen + 1
		}
		p.trust.Store(&trust{gen: gen, pool: pool})
		p.mu.Unlock()
	}
	return p.reloaded(unitCA, initial, err, nil)
}

func (p *Perimeter) reloadCallersLocked(initial bool) error {
	b, changed, err := p.read(unitCallers, MaxCallersFileSize, p.cfg.CallersFile)
	if !changed {
		return nil
	}
	var cs *Callers
	if err == nil {
		cs, err = parseCallersFile(p.cfg.CallersFile, b[0])
	}
	if err == nil {
		p.mu.Lock()
		p.callers.Store(newTable(cs, p.callers.Load(), p.metrics, p.now(), p.holders))
		p.mu.Unlock()
	}
	return p.reloaded(unitCallers, initial, err, nil)
}

// publish swaps in the handshake configuration of the current pair and
// pool; new handshakes see both or neither. p.mu is held.
func (p *Perimeter) publish() {
	if p.pool == nil || p.pair.Certificate == nil {
		return // initial load still under way
	}
	p.current.Store(&tls.Config{
		MinVersion:       tls.VersionTLS13,
		Certificates:     []tls.Certificate{p.pair},
		ClientAuth:       tls.RequireAndVerifyClientCert,
		ClientCAs:        p.pool,
		NextProtos:       p.nextProtos,
		VerifyConnection: p.verifyConnection,
	})
}

// reloaded logs and counts a load of unit, records whether it is in
// force, and returns err with context. reloadMu is held.
func (p *Perimeter) reloaded(unit string, initial bool, err error, leaf *x509.Certificate) error {
	if p.cfg.onReload != nil {
		defer p.cfg.onReload(unit, err)
	}
	a := p.tried[unit]
	a.ok = err == nil
	p.tried[unit] = a
	if err != nil {
		err = fmt.Errorf("perimeter: loading %s: %w", unit, err)
		if !initial {
			p.metrics.reloads.WithLabelValues(unit, "error").Inc()
			p.metrics.failing.WithLabelValues(unit).Set(1)
			p.log.Error("reload failed; the last good configuration stays in force", "file", unit, "error", err)
		}
		return err
	}
	p.metrics.reloads.WithLabelValues(unit, "ok").Inc()
	p.metrics.failing.WithLabelValues(unit).Set(0)
	p.metrics.lastSuccess.WithLabelValues(unit).Set(p.wallSeconds())
	attrs := []any{"file", unit}
	if leaf != nil {
		attrs = append(attrs, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339), "serial", leaf.SerialNumber.String())
	}
	if initial {
		p.log.Info("loaded", attrs...)
	} else {
		p.log.Info("reloaded", attrs...)
	}
	return nil
}

// wallSeconds is the clock's wall time in Unix seconds, for the metrics.
func (p *Perimeter) wallSeconds() float64 {
	return float64(p.clock.Now().WallMs) / 1e3
}

// now is the buckets' time: the clock's monotonic reading as a time.Time.
func (p *Perimeter) now() time.Time {
	return time.Unix(0, 0).Add(p.clock.Now().Mono)
}
