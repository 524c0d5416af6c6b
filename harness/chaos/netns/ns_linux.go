//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// runDir is where `ip netns` keeps a bind mount of each named namespace.
const runDir = "/var/run/netns"

// ipTimeout bounds each run of the ip command.
const ipTimeout = 10 * time.Second

// Available reports whether network namespaces can be used here, or why
// not, with an error matching ErrUnavailable. It does not guess: it creates
// a namespace, listens inside it and deletes it again.
func Available() error {
	n, err := New(fmt.Sprintf("%sprobe-%d", Prefix, os.Getpid()))
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	ln, err := n.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		err = ln.Close()
	}
	if err := errors.Join(err, n.Close()); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// New creates the network namespace name with `ip netns add` and brings its
// loopback interface up. The name must start with Prefix. A namespace of the
// same name, left by a crashed run, is deleted first.
func New(name string) (*NS, error) {
	if err := checkName(name, false); err != nil {
		return nil, err
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return nil, fmt.Errorf("%w: no ip command: %w", ErrUnavailable, err)
	}
	path := filepath.Join(runDir, name)
	if _, err := os.Stat(path); err == nil {
		if err := runIP(ip, "netns", "delete", name); err != nil {
			return nil, fmt.Errorf("netns: delete stale namespace %s: %w", name, err)
		}
	}
	if err := runIP(ip, "netns", "add", name); err != nil {
		return nil, fmt.Errorf("netns: create namespace %s: %w", name, err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		err = fmt.Errorf("netns: open namespace %s: %w", name, &os.PathError{Op: "open", Path: path, Err: err})
		return nil, errors.Join(err, runIP(ip, "netns", "delete", name))
	}
	n := &NS{Name: name, ip: ip, fd: fd}
	if err := runIP(ip, "-n", name, "link", "set", "lo", "up"); err != nil {
		err = fmt.Errorf("netns: bring up loopback in %s: %w", name, err)
		return nil, errors.Join(err, n.Close())
	}
	return n, nil
}

// Close deletes the namespace with `ip netns delete`, after waiting for
// sockets being created inside it; processes and sockets still inside it
// keep running and keep it alive. Close does nothing for the host
// namespace, on a second call, or when the name has meanwhile been deleted
// or taken by another namespace (Cleanup, or a later New of the same name).
func (n *NS) Close() error {
	if n.IsHost() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return nil
	}
	ours := sameFile(n.fd, filepath.Join(runDir, n.Name))
	unix.Close(n.fd)
	n.fd = -1
	if !ours {
		return nil
	}
	if err := runIP(n.ip, "netns", "delete", n.Name); err != nil {
		return fmt.Errorf("netns: delete namespace %s: %w", n.Name, err)
	}
	return nil
}

// Cleanup deletes the namespaces whose names start with prefix, left by
// crashed runs. The prefix must itself start with Prefix; make it specific
// to one suite, since Cleanup also deletes namespaces that a concurrent run
// still uses.
func Cleanup(prefix string) error {
	if err := checkName(prefix, true); err != nil {
		return err
	}
	entries, err := os.ReadDir(runDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("netns: list namespaces: %w", err)
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return fmt.Errorf("%w: no ip command: %w", ErrUnavailable, err)
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := runIP(ip, "netns", "delete", e.Name()); err != nil {
				errs = append(errs, fmt.Errorf("netns: delete namespace %s: %w", e.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// runIP runs the ip (or tc) command at path ip with args and returns its
// output in the error when it fails.
func runIP(ip string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(ip), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// sameFile reports whether the open fd and path are the same file.
func sameFile(fd int, path string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Stat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}
