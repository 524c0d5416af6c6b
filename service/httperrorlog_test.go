package service

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A flood of failed TLS handshakes writes one line per handshakeLogEvery,
// and the next line counts those not logged; any other line of net/http's
// goes through every time.
func TestHTTPErrorLogLimitsHandshakeErrors(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1000, 0)
	l := newHTTPErrorLog(slog.New(slog.NewTextHandler(&out, nil)), "api")
	l.Writer().(*httpErrorLog).handshakes.now = func() time.Time { return now }
	for range 1000 {
		l.Printf("http: TLS handshake error from 127.0.0.1:4242: EOF")
	}
	if n := strings.Count(out.String(), "TLS handshake error"); n != 1 {
		t.Errorf("%d lines for 1000 failed handshakes within %s, want 1:\n%s", n, handshakeLogEvery, out.String())
	}
	l.Printf("http: panic serving 127.0.0.1:4243: boom")
	l.Printf("http: panic serving 127.0.0.1:4244: boom")
	if n := strings.Count(out.String(), "panic serving"); n != 2 {
		t.Errorf("%d lines for 2 panics, want both:\n%s", n, out.String())
	}
	now = now.Add(handshakeLogEvery)
	l.Printf("http: TLS handshake error from 127.0.0.1:4242: EOF")
	if !strings.Contains(out.String(), "handshake_errors_not_logged=999") || !strings.Contains(out.String(), "listener=api") {
		t.Errorf("the next line does not count the 999 not logged, or name the listener:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "\n"); n != 4 {
		t.Errorf("%d lines in all, want 4:\n%s", n, out.String())
	}
}
