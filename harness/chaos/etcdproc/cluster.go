//go:build linux

package etcdproc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSize is the number of members when Config.Size is zero.
const DefaultSize = 3

// DefaultTimeout bounds each wait of a Cluster when Config.Timeout is zero.
const DefaultTimeout = time.Minute

// Config describes a cluster to Start. Dir and Command are required; the
// zero value of every other field is a valid choice.
type Config struct {
	// Dir is the parent directory of the members' data: member i keeps
	// its data in Dir/m<i>, which must not exist yet. Dir is created if
	// missing.
	Dir string
	// Size is the number of members; zero means DefaultSize (3).
	Size int
	// Command returns a command that runs MemberMain with args in a new
	// process: the harness binary re-executing itself with a member role,
	// or a test binary whose TestMain calls MemberMain. It is called for
	// every start of a member. Start sets the command's Stdout and
	// Stderr, and a Pdeathsig of SIGKILL unless SysProcAttr has one.
	Command func(args ...string) *exec.Cmd
	// Stderr receives the members' stderr (etcd's errors and MemberMain's
	// failures) and any stray stdout line; nil discards it. Writes to it
	// are serialised.
	Stderr io.Writer
	// Timeout bounds every wait of the cluster's methods (for members to
	// be ready, a leader, a write) on top of their context; zero means
	// DefaultTimeout (1 minute).
	Timeout time.Duration
	// Heartbeat and Election are the members' raft heartbeat interval
	// and election timeout (etcd's --heartbeat-interval and
	// --election-timeout, whole milliseconds); zero means the package's
	// Timing (50 ms and 500 ms). etcd wants Election at least five
	// heartbeats, and raises every lease's TTL to at least 1.5 elections.
	Heartbeat, Election time.Duration
}

// A Cluster is an etcd cluster of member processes, numbered 0..Size()-1,
// each on its own loopback client and peer ports.
type Cluster struct {
	cfg     Config
	out     io.Writer // cfg.Stderr behind a lock
	members []*member

	mu    sync.Mutex
	token string // --initial-cluster-token, new on RestoreAll with NewClusterToken
}

// member is one member of a Cluster. Its fields other than proc and
// paused never change.
type member struct {
	name, dir    string
	client, peer string // URLs

	// Guarded by Cluster.mu.
	proc   *proc // nil before the first start
	paused bool
}

// Start starts the members of a new cluster in Config.Dir, waits until
// every member is ready and a write commits, and returns the running
// cluster; Close stops it. When a member cannot bind a port another
// process took, Start retries on fresh ports (5 attempts). Start reports
// an incomplete Config, an existing member directory, a member process
// that exits (*ExitError) and ctx or Config.Timeout running out.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	return start(ctx, cfg, freePorts)
}

// start is Start with the source of free ports as a parameter, so tests can
// hand out a taken port.
func start(ctx context.Context, cfg Config, ports func(n int) ([]int, error)) (*Cluster, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	for i := range cfg.Size {
		dir := memberDir(cfg.Dir, i)
		if _, err := os.Lstat(dir); err == nil {
			return nil, fmt.Errorf("etcdproc: Start: member directory %s: %w", dir, fs.ErrExist)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("etcdproc: Start: %w", err)
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("etcdproc: Start: %w", err)
	}
	for try := 1; ; try++ {
		var ps []int
		if ps, err = ports(2 * cfg.Size); err != nil {
			return nil, err
		}
		c := newCluster(cfg, ps)
		if err = c.startAll(ctx); err == nil {
			return c, nil
		}
		if cerr := c.Close(); cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		for _, m := range c.members {
			os.RemoveAll(m.dir)
		}
		if !addrInUse(err) || try == attempts {
			return nil, fmt.Errorf("etcdproc: Start (attempt %d of %d): %w", try, attempts, err)
		}
	}
}

// withDefaults checks cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	switch {
	case cfg.Dir == "":
		return cfg, errors.New("etcdproc: Config.Dir is empty")
	case cfg.Command == nil:
		return cfg, errors.New("etcdproc: Config.Command is nil")
	case cfg.Size < 0:
		return cfg, fmt.Errorf("etcdproc: Config.Size is %d, want at least 1 (or 0 for %d)", cfg.Size, DefaultSize)
	case cfg.Timeout < 0:
		return cfg, fmt.Errorf("etcdproc: Config.Timeout is %v, want positive (or 0 for %v)", cfg.Timeout, DefaultTimeout)
	case cfg.Heartbeat < 0 || cfg.Election < 0:
		return cfg, fmt.Errorf("etcdproc: Config.Heartbeat %v and Election %v, want positive (or 0 for the package's timing)", cfg.Heartbeat, cfg.Election)
	}
	if cfg.Size == 0 {
		cfg.Size = DefaultSize
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	return cfg, nil
}

// memberDir is member i's data directory.
func memberDir(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("m%d", i)) }

// newCluster lays out a cluster on ports (client and peer port of member i
// at 2i and 2i+1); it starts nothing.
func newCluster(cfg Config, ports []int) *Cluster {
	c := &Cluster{cfg: cfg, out: &lockedWriter{w: cfg.Stderr}, token: newToken()}
	for i := range cfg.Size {
		c.members = append(c.members, &member{
			name:   fmt.Sprintf("m%d", i),
			dir:    memberDir(cfg.Dir, i),
			client: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			peer:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
		})
	}
	return c
}

// startAll starts every member (as a new cluster, or on the data already
// in their directories), waits until all are ready, then until a write
// commits. On failure members may be left running; the caller closes them.
func (c *Cluster) startAll(ctx context.Context) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	for i := range c.members {
		if _, err := c.launch(i, "new"); err != nil {
			return err
		}
	}
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	var wg sync.WaitGroup
	for i := range c.members {
		p := c.proc(i)
		wg.Go(func() {
			if err := p.waitReady(ctx); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return c.WaitWritable(ctx)
}

// launch starts member i's process (if it is not running) with the given
// --initial-cluster-state and returns it without waiting.
func (c *Cluster) launch(i int, state string) (*proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	if m.proc != nil && m.proc.running() {
		return nil, fmt.Errorf("etcdproc: start member %d: %w", i, ErrRunning)
	}
	cmd := c.cfg.Command(
		"--name", m.name,
		"--dir", m.dir,
		"--client-url", m.client,
		"--peer-url", m.peer,
		"--initial-cluster", c.initialCluster(),
		"--initial-cluster-token", c.token,
		"--initial-cluster-state", state,
		"--heartbeat-interval", strconv.FormatInt(c.cfg.Heartbeat.Milliseconds(), 10),
		"--election-timeout", strconv.FormatInt(c.cfg.Election.Milliseconds(), 10),
	)
	if cmd == nil {
		return nil, errors.New("etcdproc: Config.Command returned nil")
	}
	p, err := spawnMember(m.name, cmd, ReadyPrefix+m.client, c.out)
	if err != nil {
		return nil, err
	}
	m.proc, m.paused = p, false
	return p, nil
}

// initialCluster is the --initial-cluster value naming every member.
func (c *Cluster) initialCluster() string {
	parts := make([]string, len(c.members))
	for i, m := range c.members {
		parts[i] = m.name + "=" + m.peer
	}
	return strings.Join(parts, ",")
}

// bound limits ctx to the cluster's Timeout.
func (c *Cluster) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.Timeout)
}

// proc is member i's latest process, or nil.
func (c *Cluster) proc(i int) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i].proc
}

// check reports ErrNoMember for an index outside [0, Size).
func (c *Cluster) check(i int) error {
	if i < 0 || i >= len(c.members) {
		return fmt.Errorf("etcdproc: member %d of %d: %w", i, len(c.members), ErrNoMember)
	}
	return nil
}

// Size is the number of members, running or not.
func (c *Cluster) Size() int { return len(c.members) }

// Endpoints returns the client URLs of every member, running or not, in
// member order.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.client
	}
	return eps
}

// Endpoint returns member i's client URL; i must be in [0, Size).
func (c *Cluster) Endpoint(i int) string { return c.members[i].client }

// Running reports whether member i's process runs (paused or not): it was
// started and has been neither killed nor exited on its own.
func (c *Cluster) Running(i int) bool {
	if c.check(i) != nil {
		return false
	}
	p := c.proc(i)
	return p != nil && p.running()
}

// Paused reports whether member i runs but is paused.
func (c *Cluster) Paused(i int) bool {
	if c.check(i) != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	return m.paused && m.proc != nil && m.proc.running()
}

// Pid is the process ID of member i, or 0 if it is not running.
func (c *Cluster) Pid(i int) int {
	if !c.Running(i) {
		return 0
	}
	return c.proc(i).pid()
}

// Close kills every running member (paused ones too) and reaps
// its process; the data directories stay. It is safe to call more than
// once and reports members that could not be reaped.
func (c *Cluster) Close() error {
	var errs []error
	for i := range c.members {
		c.mu.Lock()
		p := c.members[i].proc
		c.members[i].paused = false
		c.mu.Unlock()
		if p != nil {
			errs = append(errs, p.kill())
		}
	}
	return errors.Join(errs...)
}

// newToken returns a random cluster token, so cluster IDs differ between
// clusters.
func newToken() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "etcdproc-" + hex.EncodeToString(b)
}
