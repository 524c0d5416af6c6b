package storeproc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// A cold copy is the crudest backup there is: the server stopped, its data
// directory copied as files, the copy later put back in its place. Nothing
// in the server restarted on it says it went back in time — PostgreSQL
// keeps its system identifier and timeline, dynalite its tables' TableIds —
// so only what the lease stores remember of the rows can tell.

// copyDir copies directory src to dst (which must not exist) with cp -a,
// keeping owners and modes: under root, PostgreSQL's data directory
// belongs to user postgres and must stay so.
func copyDir(ctx context.Context, src, dst string) error {
	out, err := exec.CommandContext(ctx, "cp", "-a", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("storeproc: cp -a %s %s: %v: %s", src, dst, err, bytes.TrimSpace(out))
	}
	return nil
}

// Stop stops the cluster cleanly: pg_ctl stop -m fast (connections closed,
// a checkpoint written), so that its data directory can be copied as files.
func (p *Postgres) Stop(ctx context.Context) error {
	return p.run(ctx, "pg_ctl", "stop", "-m", "fast", "-w", "-t", "60", "-D", p.data())
}

// CopyData copies the stopped cluster's data directory and returns the
// copy's directory, for Restore (which takes it).
func (p *Postgres) CopyData(ctx context.Context) (string, error) {
	if pm, err := p.postmaster(); err == nil {
		return "", fmt.Errorf("%w: a cold copy needs the cluster stopped (postmaster %d runs)", ErrNotRunning, pm)
	}
	p.mu.Lock()
	p.backups++
	dst := filepath.Join(p.dir, fmt.Sprintf("copy%d", p.backups))
	p.mu.Unlock()
	return dst, copyDir(ctx, p.data(), dst)
}

// CopyData copies the stopped server's data directory (Kill first) and
// returns the copy's directory, for Restore (which takes it).
func (d *Dynalite) CopyData(ctx context.Context) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.p != nil && !d.p.Exited() {
		return "", fmt.Errorf("%w: a cold copy needs dynalite stopped", ErrNotRunning)
	}
	d.copies++
	dst := filepath.Join(d.dir, fmt.Sprintf("copy%d", d.copies))
	return dst, copyDir(ctx, d.data(), dst)
}

// Restore replaces the stopped server's data directory with copy (which it
// takes: the directory moves) and starts the server on it, on its port.
func (d *Dynalite) Restore(ctx context.Context, copy string) error {
	d.mu.Lock()
	running := d.p != nil && !d.p.Exited()
	d.mu.Unlock()
	if running {
		return fmt.Errorf("%w: restore needs dynalite stopped", ErrNotRunning)
	}
	old := d.data() + ".replaced"
	os.RemoveAll(old)
	if err := os.Rename(d.data(), old); err != nil {
		return err
	}
	if err := os.Rename(copy, d.data()); err != nil {
		return err
	}
	return d.Start(ctx)
}
