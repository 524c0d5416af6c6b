package service

import (
	"log"
	"log/slog"
	"strings"
	"time"
)

// handshakeLogEvery is how often a listener logs a failed TLS handshake:
// any caller can fail one (a bare TCP connection, a port scan, a client
// without a certificate), and net/http logs every one — 185,000 lines in
// 45 s from one client.
const handshakeLogEvery = 10 * time.Second

// httpErrorLog is an http.Server's ErrorLog: its lines at WARN, naming
// the listener, with failed TLS handshakes at most one per
// handshakeLogEvery (the next says how many were not logged). Every other
// line (a handler's panic, a response that could not be written) goes
// through: they are rare, and each is worth reading.
type httpErrorLog struct {
	log        *slog.Logger
	listener   string
	handshakes rateLog
}

// newHTTPErrorLog returns the ErrorLog of listener's http.Server.
func newHTTPErrorLog(l *slog.Logger, listener string) *log.Logger {
	return log.New(&httpErrorLog{log: l, listener: listener, handshakes: rateLog{every: handshakeLogEvery}}, "", 0)
}

// Write logs one line of net/http's.
func (h *httpErrorLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		ok, held := h.handshakes.allow()
		if !ok {
			return len(p), nil
		}
		h.log.Warn(msg, "listener", h.listener, "handshake_errors_not_logged", held)
		return len(p), nil
	}
	h.log.Warn(msg, "listener", h.listener)
	return len(p), nil
}
