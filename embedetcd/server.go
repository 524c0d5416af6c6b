package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
)

// Defaults for the zero fields of Config.
const (
	// DefaultDir is the data directory.
	DefaultDir = "./snowfence-data"
	// DefaultClientURL is where etcd serves clients.
	DefaultClientURL = "http://127.0.0.1:2379"
	// DefaultName is the member's name.
	DefaultName = "snowfence"
	// DefaultLogLevel is the lowest level of etcd's log lines passed on.
	DefaultLogLevel = "error"
	// ClientURLFile is the file in the data directory that holds the
	// running embedded etcd's client URL, for other local processes.
	ClientURLFile = "client-url"
	// lockFile is the file in the data directory that the running
	// embedded etcd holds locked.
	lockFile = "snowfence.lock"
)

// bindTries is how often Start picks new free ports when a port it picked
// was taken before etcd could bind it.
const bindTries = 5

// Config configures an embedded single-member etcd. The zero value is a
// valid configuration: data in ./snowfence-data, clients on
// 127.0.0.1:2379, peers on 127.0.0.1:2380, etcd's errors to slog.Default().
type Config struct {
	// Dir is the data directory; it is created if missing. Keep it: the
	// marks in it are what keeps a restarted holder from repeating IDs.
	// Zero: DefaultDir.
	Dir string
	// ClientURL is where etcd serves clients. Port 0 picks a free port;
	// Endpoints reports the one picked. Zero: DefaultClientURL.
	ClientURL string
	// PeerURL is where etcd listens for peers (unused by a single member,
	// but etcd needs one). Zero: the client URL's host with the client port
	// plus one, or a free port when the client port is 0.
	PeerURL string
	// Name is the member's name. Zero: DefaultName.
	Name string
	// LogLevel is the level of etcd's own log lines that reach Logger
	// (debug, info, warn, error). Zero: "error". The errors etcd reports
	// about its own listeners closing during Close are dropped.
	LogLevel string
	// Logger receives etcd's log lines, tagged component=etcd. Nil:
	// slog.Default().
	Logger *slog.Logger
	// HighWaterFile is where the holders of this process keep their
	// high-water mark (Server.HighWater): outside the data directory, so
	// that restoring the directory from a backup does not take it back.
	// Zero: beside it, Dir + HighWaterSuffix.
	HighWaterFile string
	// HighWaterAt, if not zero, raises the high-water mark to this instant
	// before etcd starts, writing the file anew if it is missing or
	// corrupt: the operator's answer to a data directory restored or copied
	// without its file (highwater.go). Give an instant at or after the last
	// ID issued from the directory: now, if this host's clock is not behind
	// it.
	HighWaterAt time.Time
}

// A Server is a single-member etcd running in this process.
type Server struct {
	etcd     *embed.Etcd
	endpoint string
	urlFile  string
	lock     *os.File
	quiet    *atomic.Bool // set while closing: etcd logs its closing listeners as errors
	once     sync.Once
	hw       highWater
}

// ErrDirInUse is returned by Start when another embedded etcd runs on the
// data directory.
var ErrDirInUse = errors.New("embedetcd: data directory in use")

// Start starts a single-member etcd in this process and waits until it
// serves clients (or ctx ends). It locks <Dir>/snowfence.lock, so a
// second one on the same directory fails at once with ErrDirInUse, and it
// writes the actual client URL to <Dir>/client-url, so other local
// processes (the CLI) can find it.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedetcd: data directory: %w", err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	hw, err := prepareHighWater(cfg)
	if err != nil {
		lock.Close()
		return nil, err
	}
	quiet := new(atomic.Bool)
	e, err := startEtcd(ctx, cfg, quiet)
	if err != nil {
		lock.Close()
		return nil, err
	}
	em := &Server{
		etcd:     e,
		endpoint: "http://" + e.Clients[0].Addr().String(),
		urlFile:  filepath.Join(cfg.Dir, ClientURLFile),
		lock:     lock,
		quiet:    quiet,
		hw:       hw,
	}
	if err := writeFileAtomic(em.urlFile, em.endpoint+"\n"); err != nil {
		quiet.Store(true)
		e.Close()
		lock.Close()
		return nil, fmt.Errorf("embedetcd: record client URL: %w", err)
	}
	return em, nil
}

// startEtcd starts etcd, on new ports if one it picked was taken meanwhile,
// and waits until it serves. etcd's start does not take a context; if ctx
// ends first, the start is abandoned and its server closed once it returns.
func startEtcd(ctx context.Context, cfg Config, quiet *atomic.Bool) (*embed.Etcd, error) {
	type started struct {
		e   *embed.Etcd
		err error
	}
	done := make(chan started, 1)
	go func() {
		for try := 0; ; try++ {
			ecfg, err := cfg.etcdConfig(quiet)
			if err != nil {
				done <- started{nil, err}
				return
			}
			e, err := embed.StartEtcd(ecfg)
			if err != nil && try+1 < bindTries && isAddrInUse(err) && cfg.picksPorts() {
				continue
			}
			if err == nil {
				select {
				case <-e.Server.ReadyNotify():
				case err = <-e.Err():
					quiet.Store(true)
					e.Close()
					e = nil
				case <-ctx.Done():
					quiet.Store(true)
					e.Close()
					e, err = nil, ctx.Err()
				}
			}
			done <- started{e, err}
			return
		}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("embedetcd: start embedded etcd in %s on %s: %w", cfg.Dir, cfg.ClientURL, r.err)
		}
		return r.e, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.e != nil {
				quiet.Store(true)
				r.e.Close()
			}
		}()
		return nil, fmt.Errorf("embedetcd: start embedded etcd in %s: %w", cfg.Dir, ctx.Err())
	}
}

// Endpoints returns the client URL etcd actually serves on (with the port
// picked, when the configured port was 0).
func (e *Server) Endpoints() []string { return []string{e.endpoint} }

// Client opens a client of the embedded etcd (etcdstore.Open), for
// etcdstore.New; the caller closes it.
func (e *Server) Client(ctx context.Context) (*clientv3.Client, error) {
	return etcdstore.Open(ctx, etcdstore.ClientConfig{Endpoints: e.Endpoints()})
}

// Err delivers an error if the embedded etcd fails while running.
func (e *Server) Err() <-chan error { return e.etcd.Err() }

// Close removes the client-url file, if it still names this etcd, stops
// etcd, waiting until it has, and unlocks the data directory. It is safe to
// call more than once.
func (e *Server) Close() error {
	var err error
	e.once.Do(func() {
		if b, rerr := os.ReadFile(e.urlFile); rerr == nil && strings.TrimSpace(string(b)) == e.endpoint {
			if rerr := os.Remove(e.urlFile); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = fmt.Errorf("embedetcd: remove %s: %w", e.urlFile, rerr)
			}
		}
		e.quiet.Store(true)
		e.etcd.Close()
		e.lock.Close()
	})
	return err
}

// ReadClientURL returns the client URL that a running embedded etcd wrote
// to dir (its data directory), for processes that want to reach it. It
// returns an error wrapping os.ErrNotExist when none is running there (or it
// did not stop cleanly).
func ReadClientURL(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, ClientURLFile))
	if err != nil {
		return "", fmt.Errorf("embedetcd: no embedded etcd recorded in %s: %w", dir, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// withDefaults fills the zero fields of c and checks the others.
func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if c.ClientURL == "" {
		c.ClientURL = DefaultClientURL
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	if _, ok := zapLevel(c.LogLevel); !ok {
		return c, fmt.Errorf("%w: embedded etcd log level %q: use debug, info, warn or error", lease.ErrInvalid, c.LogLevel)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	for _, u := range []string{c.ClientURL, c.PeerURL} {
		if u == "" {
			continue
		}
		if _, err := parseHTTPURL(u); err != nil {
			return c, err
		}
	}
	return c, nil
}

// picksPorts reports whether Start chooses a port itself, so that a
// bind failure is worth retrying with another.
func (c Config) picksPorts() bool {
	cu, _ := parseHTTPURL(c.ClientURL)
	if cu.Port() == "0" || c.PeerURL == "" {
		return true
	}
	pu, _ := parseHTTPURL(c.PeerURL)
	return pu.Port() == "0"
}

// etcdConfig builds etcd's configuration, picking free ports for port 0.
func (c Config) etcdConfig(quiet *atomic.Bool) (*embed.Config, error) {
	cu, _ := parseHTTPURL(c.ClientURL)
	var pick []*url.URL
	if cu.Port() == "0" {
		pick = append(pick, cu)
	}
	var pu *url.URL
	switch {
	case c.PeerURL != "":
		pu, _ = parseHTTPURL(c.PeerURL)
		if pu.Port() == "0" {
			pick = append(pick, pu)
		}
	case cu.Port() == "0":
		pu = &url.URL{Scheme: "http", Host: cu.Host}
		pick = append(pick, pu)
	default:
		p, _ := strconv.Atoi(cu.Port())
		pu = &url.URL{Scheme: "http", Host: net.JoinHostPort(cu.Hostname(), strconv.Itoa(p+1))}
	}
	if err := pickPorts(pick...); err != nil {
		return nil, err
	}
	ec := embed.NewConfig()
	ec.Name = c.Name
	ec.Dir = c.Dir
	ec.ListenClientUrls = []url.URL{*cu}
	ec.AdvertiseClientUrls = []url.URL{*cu}
	ec.ListenPeerUrls = []url.URL{*pu}
	ec.AdvertisePeerUrls = []url.URL{*pu}
	ec.InitialCluster = c.Name + "=" + pu.String()
	ec.InitialClusterToken = "snowfence-embedded"
	level, _ := zapLevel(c.LogLevel)
	ec.LogLevel = c.LogLevel
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newLogger(c.Logger, level, quiet))
	ec.EnableGRPCGateway = false
	// A single member has nobody to lose an election to, so a short
	// election timeout costs nothing and starts it in tens of ms rather
	// than up to a second (etcd's 100 ms tick, 1 s election).
	ec.TickMs = 10
	ec.ElectionMs = 100
	// Every extension writes a revision; keep an hour of history.
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = "1h"
	return ec, nil
}

// parseHTTPURL parses an http URL with a host and port.
func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Hostname() == "" || u.Port() == "" {
		return nil, fmt.Errorf("%w: embedded etcd URL %q: write http://host:port (port 0 picks a free one)", lease.ErrInvalid, s)
	}
	return u, nil
}

// pickPorts replaces the port of each URL with a distinct one that was free
// a moment ago (all are held open together, then closed for etcd to bind).
func pickPorts(us ...*url.URL) error {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for _, u := range us {
		l, err := net.Listen("tcp", net.JoinHostPort(u.Hostname(), "0"))
		if err != nil {
			return fmt.Errorf("embedetcd: find a free port on %s: %w", u.Hostname(), err)
		}
		ls = append(ls, l)
		u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return nil
}

// isAddrInUse reports whether err is a failure to bind a taken port.
func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// writeFileAtomic replaces path with data, so a reader never sees half.
func writeFileAtomic(path, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
