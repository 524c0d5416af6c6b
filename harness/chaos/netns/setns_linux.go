//go:build linux

package netns

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// threadNS is the calling thread's network namespace.
const threadNS = "/proc/thread-self/ns/net"

// do runs f on an OS thread switched into the namespace and waits for it.
// f must not start goroutines that create sockets: they run on other
// threads, in the host namespace.
func (n *NS) do(f func() error) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.fd < 0 {
		return fmt.Errorf("%w: namespace %s", ErrClosed, n.Name)
	}
	errc := make(chan error, 1)
	go func() { errc <- enter(n.fd, f) }()
	return <-errc
}

// enter locks the calling goroutine to its thread, switches the thread into
// the namespace target, runs f and switches back. If the thread may not be
// back in its own namespace, enter returns without unlocking it, and since
// it runs on a goroutine of its own, which then ends, the runtime terminates
// the thread rather than run other goroutines on it.
func enter(target int, f func() error) error {
	runtime.LockOSThread()
	origin, err := unix.Open(threadNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: open %s: %w", threadNS, err)
	}
	defer unix.Close(origin)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		// setns changes nothing when it fails.
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: enter namespace: setns: %w", err)
	}
	ferr := f()
	if err := unix.Setns(origin, unix.CLONE_NEWNET); err != nil {
		return errors.Join(ferr, fmt.Errorf("netns: return to the host namespace: setns: %w; thread discarded", err))
	}
	if !sameFile(origin, threadNS) {
		return errors.Join(ferr, errors.New("netns: thread not back in the host namespace after setns; thread discarded"))
	}
	runtime.UnlockOSThread()
	return ferr
}
