package storeproc

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Dynalite is a dynalite server of the suite's own on 127.0.0.1, with its
// tables on disk (--path), so that a SIGKILL and a start again keep them.
// Its methods are safe for concurrent use.
type Dynalite struct {
	node, script, dir string
	port              int

	oneProc     // its process: Kill, Freeze, Thaw
	copies  int // CopyData's
}

// StartDynalite starts dynalite, under node, from the npm cache that
// scripts/services/dynalite.sh installs (its run.js wrapper, which keeps a
// client's aborted request from taking the server down), with its data in
// a fresh temporary directory. Close stops it and removes the directory.
func StartDynalite(ctx context.Context) (*Dynalite, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: no node in PATH (apt-get install nodejs)", ErrMissing)
	}
	script := filepath.Join(dynaliteCache(), "run.js")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("%w: no %s: run scripts/services/dynalite.sh start once to install dynalite", ErrMissing, script)
	}
	dir, err := os.MkdirTemp("", "snowfence-chaos-dynalite-")
	if err != nil {
		return nil, err
	}
	d := &Dynalite{node: node, script: script, dir: dir, oneProc: oneProc{name: "dynalite"}}
	use := func(port int) error { d.port = port; return nil }
	if err := startOnFreePort(dir, use, func() error { return d.Start(ctx) }); err != nil {
		return nil, err
	}
	return d, nil
}

// dynaliteCache is where scripts/services/dynalite.sh keeps dynalite.
func dynaliteCache() string {
	if c := os.Getenv("SNOWFENCE_CACHE"); c != "" {
		return filepath.Join(c, "dynalite")
	}
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		return filepath.Join(c, "snowfence", "dynalite")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "snowfence", "dynalite")
}

// data is the server's data directory (--path).
func (d *Dynalite) data() string { return filepath.Join(d.dir, "data") }

// URL is the server's endpoint, http://127.0.0.1:port.
func (d *Dynalite) URL() string { return "http://127.0.0.1:" + strconv.Itoa(d.port) }

// Start starts the server (again, after Kill) on its port and data and
// waits until it answers.
func (d *Dynalite) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running() {
		return fmt.Errorf("%w: dynalite runs", ErrNotRunning)
	}
	cmd := exec.Command(d.node, d.script, "--host", "127.0.0.1", "--port", strconv.Itoa(d.port),
		"--path", d.data(), "--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	p, err := d.spawn(cmd)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 500 * time.Millisecond}
	return d.await(ctx, p, d.URL(), 20*time.Millisecond, func() bool {
		// Any HTTP answer means it is up (dynalite answers a bare GET 400).
		resp, err := client.Get(d.URL())
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}, func(tail string) error {
		return fmt.Errorf("storeproc: dynalite exited at start: %v: %s", p.Err(), tail)
	})
}

// Close resumes, kills and removes the server and its data.
func (d *Dynalite) Close() error {
	d.end()
	return os.RemoveAll(d.dir)
}
