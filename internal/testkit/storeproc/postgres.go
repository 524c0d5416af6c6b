package storeproc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/freeport"
	"github.com/snowfence/snowfence/internal/testkit/spawn"
)

// Postgres is a PostgreSQL cluster of the suite's own, on 127.0.0.1 and a
// Unix socket in its directory, with one database, "snowfence", that user
// postgres reaches without a password (trust, loopback and socket only).
// Its methods are safe for concurrent use.
type Postgres struct {
	bin  string // the directory of initdb, pg_ctl, …
	dir  string // socket directory; data in dir/data
	port int
	root bool // run the programs as user postgres

	mu      sync.Mutex
	frozen  []int // SIGSTOPped processes, postmaster first
	backups int
}

// StartPostgres creates a cluster in a fresh temporary directory and starts
// it. Close stops it and removes the directory.
func StartPostgres(ctx context.Context) (*Postgres, error) {
	bin := pgBin()
	if bin == "" {
		return nil, fmt.Errorf("%w: no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)", ErrMissing)
	}
	dir, err := os.MkdirTemp("", "snowfence-chaos-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{bin: bin, dir: dir, root: os.Geteuid() == 0}
	if err := p.create(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// pgBin is the newest installed PostgreSQL's program directory, or "".
func pgBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// create runs initdb, configures the cluster and starts it.
func (p *Postgres) create(ctx context.Context) error {
	if err := os.Chmod(p.dir, 0o755); err != nil {
		return err
	}
	if err := p.own(p.dir); err != nil {
		return err
	}
	if err := p.run(ctx, "initdb", "-D", p.data(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"); err != nil {
		return err
	}
	hba := "local all all trust\nlocal replication all trust\nhost all all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(p.data(), "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return err
	}
	var lastErr error
	for range 5 {
		ports, err := freeport.Loopback(1)
		if err != nil {
			return err
		}
		p.port = ports[0]
		conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"+
			"max_connections = 300\nfsync = off\nfull_page_writes = off\n", p.port, p.dir)
		if err := os.WriteFile(filepath.Join(p.data(), "postgresql.auto.conf"), []byte(conf), 0o600); err != nil {
			return err
		}
		if err := p.own(p.data()); err != nil {
			return err
		}
		if lastErr = p.Start(ctx, false); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		return lastErr
	}
	return p.run(ctx, "createdb", "-h", p.dir, "-p", strconv.Itoa(p.port), "-U", "postgres", "snowfence")
}

func (p *Postgres) data() string { return filepath.Join(p.dir, "data") }

// URL is the database's URL on TCP loopback.
func (p *Postgres) URL() string { return p.URLAt(p.Addr()) }

// URLAt is the database's URL at addr (host:port), such as a proxy's.
func (p *Postgres) URLAt(addr string) string {
	return "postgres://postgres@" + addr + "/snowfence?sslmode=disable"
}

// Addr is the server's TCP address, 127.0.0.1:port.
func (p *Postgres) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// SocketURL is the database's URL on the Unix socket, which a cluster
// started with socketOnly still answers.
func (p *Postgres) SocketURL() string {
	return fmt.Sprintf("postgres:///snowfence?host=%s&port=%d&user=postgres&sslmode=disable", p.dir, p.port)
}

// Start starts the stopped cluster and waits until it accepts connections;
// socketOnly listens on the Unix socket only, so that no holder (they all
// use TCP) reaches it.
func (p *Postgres) Start(ctx context.Context, socketOnly bool) error {
	args := []string{"start", "-w", "-t", "60", "-D", p.data(), "-l", filepath.Join(p.dir, "server.log")}
	if socketOnly {
		args = append(args, "-o", "-c listen_addresses=''")
	}
	if err := p.run(ctx, "pg_ctl", args...); err != nil {
		return fmt.Errorf("%w; server log: %s", err, p.logTail())
	}
	return nil
}

// StopImmediate stops the cluster as a crash does: pg_ctl stop -m
// immediate (every process quits at once, no checkpoint; the next start
// recovers from the WAL).
func (p *Postgres) StopImmediate(ctx context.Context) error {
	return p.run(ctx, "pg_ctl", "stop", "-m", "immediate", "-w", "-t", "60", "-D", p.data())
}

// Restart stops the cluster cleanly and starts it listening on TCP again.
func (p *Postgres) Restart(ctx context.Context) error {
	if err := p.run(ctx, "pg_ctl", "stop", "-m", "fast", "-w", "-t", "60", "-D", p.data()); err != nil {
		return err
	}
	return p.Start(ctx, false)
}

// Freeze stops every process of the cluster (SIGSTOP): the postmaster
// first, so that it starts no more, then every process it started —
// backends, checkpointer, WAL writer — and waits until the kernel shows
// each stopped. Connections stay open and nothing answers, as on a paused
// host.
func (p *Postgres) Freeze() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen != nil {
		return fmt.Errorf("%w: already frozen", ErrNotRunning)
	}
	pm, err := p.postmaster()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("storeproc: SIGSTOP postmaster %d: %w", pm, err)
	}
	p.frozen = []int{pm}
	if err := waitState(pm, true); err != nil {
		return err
	}
	for _, c := range children(pm) {
		if syscall.Kill(c, syscall.SIGSTOP) == nil {
			p.frozen = append(p.frozen, c)
		}
	}
	for _, pid := range p.frozen[1:] {
		if err := waitState(pid, true); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// Frozen is how many processes Freeze stopped (0 when not frozen).
func (p *Postgres) Frozen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.frozen)
}

// Thaw resumes what Freeze stopped (SIGCONT), the postmaster last.
func (p *Postgres) Thaw() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first error
	for i := len(p.frozen) - 1; i >= 0; i-- {
		if err := syscall.Kill(p.frozen[i], syscall.SIGCONT); err != nil && first == nil && i == 0 {
			first = fmt.Errorf("storeproc: SIGCONT postmaster %d: %w", p.frozen[i], err)
		}
	}
	p.frozen = nil
	return first
}

// BaseBackup takes a base backup of the running cluster (pg_basebackup,
// WAL streamed with it, fast checkpoint) and returns its directory.
func (p *Postgres) BaseBackup(ctx context.Context) (string, error) {
	p.mu.Lock()
	p.backups++
	dst := filepath.Join(p.dir, fmt.Sprintf("backup%d", p.backups))
	p.mu.Unlock()
	err := p.run(ctx, "pg_basebackup", "-h", p.dir, "-p", strconv.Itoa(p.port), "-U", "postgres",
		"-D", dst, "-X", "stream", "-c", "fast", "--no-sync")
	return dst, err
}

// Restore replaces the stopped cluster's data directory with backup (which
// it takes: the directory moves) and starts the cluster on it, socketOnly
// as Start says. The start replays the WAL the backup carries and goes on
// on the same timeline: nothing in the server says it went back in time.
func (p *Postgres) Restore(ctx context.Context, backup string, socketOnly bool) error {
	if pm, err := p.postmaster(); err == nil {
		return fmt.Errorf("%w: restore needs the cluster stopped (postmaster %d runs)", ErrNotRunning, pm)
	}
	old := p.data() + ".replaced"
	os.RemoveAll(old)
	if err := os.Rename(p.data(), old); err != nil {
		return err
	}
	if err := os.Rename(backup, p.data()); err != nil {
		return err
	}
	return p.Start(ctx, socketOnly)
}

// Close resumes a frozen cluster, stops it and removes its directory.
func (p *Postgres) Close() error {
	p.Thaw()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p.postmaster(); err == nil {
		p.StopImmediate(ctx)
	}
	return os.RemoveAll(p.dir)
}

// postmaster reads the running postmaster's pid from postmaster.pid.
func (p *Postgres) postmaster() (int, error) {
	b, err := os.ReadFile(filepath.Join(p.data(), "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNotRunning, err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(line)))
	if err != nil {
		return 0, fmt.Errorf("storeproc: postmaster.pid: %w", err)
	}
	if syscall.Kill(pid, 0) != nil {
		return 0, fmt.Errorf("%w: postmaster %d is gone", ErrNotRunning, pid)
	}
	return pid, nil
}

// run runs one of the cluster's programs, as user postgres under root.
func (p *Postgres) run(ctx context.Context, prog string, args ...string) error {
	path := filepath.Join(p.bin, prog)
	var cmd *exec.Cmd
	if p.root {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("storeproc: %s %s: %v: %s", prog, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// own gives path to user postgres under root.
func (p *Postgres) own(path string) error {
	if !p.root {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("%w: no user postgres: %v", ErrMissing, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.Walk(path, func(f string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(f, uid, gid)
	})
}

// logTail is the end of the server log, for errors.
func (p *Postgres) logTail() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
	if len(b) > 800 {
		b = b[len(b)-800:]
	}
	return string(bytes.TrimSpace(b))
}

// children lists the processes whose parent is pid (from /proc).
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// waitState waits until the kernel shows pid stopped (or not).
func waitState(pid int, stopped bool) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := spawn.State(pid)
		if err != nil {
			return err
		}
		if (st == 'T') == stopped || st == 'Z' || st == 'X' {
			return nil // a zombie or dead process answers nothing either way
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("storeproc: pid %d in state %c, want stopped=%v", pid, st, stopped)
		}
		time.Sleep(time.Millisecond) // only the kernel can deliver the signal
	}
}
