package service

import (
	"sync"
	"time"
)

// rateLog lets a kind of log line through at most once per every; the
// lines held back between are counted, and the next line says how many —
// so that a caller who can make the service log (a failed accept, a failed
// TLS handshake) cannot flood the log.
type rateLog struct {
	every time.Duration
	now   func() time.Time // nil: time.Now

	mu         sync.Mutex
	logged     time.Time // when the last line went through
	suppressed int       // lines since, held back
}

// allow reports whether a line may go through now, and how many were held
// back since the last that did (reset when it may).
func (r *rateLog) allow() (ok bool, held int) {
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := now()
	if !r.logged.IsZero() && t.Sub(r.logged) < r.every {
		r.suppressed++
		return false, 0
	}
	held = r.suppressed
	r.logged, r.suppressed = t, 0
	return true, held
}
