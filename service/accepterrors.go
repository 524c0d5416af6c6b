package service

import (
	"errors"
	"log/slog"
	"syscall"
	"time"
)

// Accept failing for want of descriptors or memory (EMFILE, ENFILE,
// ENOBUFS, ENOMEM) does not stop serving: limitListener.Accept waits and
// tries again, as net/http does with a temporary error, and logs the
// failures at most once per acceptLogEvery (net/http would log every one).

const (
	acceptLogEvery   = 10 * time.Second
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// resourceShortage reports whether err is an accept failing for want of
// descriptors or memory, which passes.
func resourceShortage(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// acceptBackoff is the wait between failed accepts: from acceptBackoffMin,
// doubling up to acceptBackoffMax.
type acceptBackoff struct{ d time.Duration }

// wait waits the next backoff; false if closed was closed meanwhile.
func (b *acceptBackoff) wait(closed <-chan struct{}) bool {
	b.d = min(max(2*b.d, acceptBackoffMin), acceptBackoffMax)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-closed:
		return false
	case <-t.C:
		return true
	}
}

// acceptErrors logs a listener's accept failures, rate-limited.
type acceptErrors struct {
	log      *slog.Logger
	listener string
	rate     rateLog // every acceptLogEvery
}

// note logs err, unless a failure was logged less than acceptLogEvery ago:
// it is then counted, and the next line says how many were not logged.
func (a *acceptErrors) note(err error) {
	ok, n := a.rate.allow()
	if !ok {
		return
	}
	a.log.Warn("cannot accept connections: the process is short of file descriptors or memory; retrying with a backoff (raise ulimit -n, or lower --max-conns)",
		"listener", a.listener, "error", err, "failures_not_logged", n)
}
