package service

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/snowfence/snowfence/server"
)

// ReasonTooManyConnections is the "reason" of the 503 a plain-HTTP listener
// answers a connection over its caps with (code "unavailable").
const ReasonTooManyConnections = "too-many-connections"

const (
	// maxLingering is how many refused connections at once wait for their
	// caller to read the 503 (a close with the request unread would reset
	// the connection, and the caller could lose the answer); beyond it a
	// refused connection is closed at once. They are part of the fd
	// reserve (minFDReserve).
	maxLingering = 64
	// lingerFor bounds that wait, and refuseWriteWithin the write of the
	// 503, which fits a fresh socket's buffer.
	lingerFor         = time.Second
	refuseWriteWithin = 100 * time.Millisecond
	// lingerRead bounds what is read and dropped meanwhile.
	lingerRead = 64 << 10
)

// refusals are the 503s a plain listener answers, by reason: minimal
// HTTP/1.1 responses that close the connection, in the server's error shape.
var refusals = map[string][]byte{
	shedTotal:   refusal("too many connections to this server: retry in a second, or on another holder"),
	shedPerPeer: refusal("too many connections from this address: retry in a second, reuse connections, or spread callers over addresses"),
}

func refusal(message string) []byte {
	body := server.ErrorJSON(server.CodeUnavailable, message, ReasonTooManyConnections)
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"+
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// refuse sheds c for reason and returns at once: on TLS it closes c (the
// caller expects a ClientHello answered, not HTTP); on plain HTTP, in the
// background, it waits (bounded) for the request's header, writes the 503
// and closes c once the caller has read it — or closes c without a word if
// nothing came. The wait makes the answer one
// to a request: an HTTP client that finds bytes on a connection before it
// has sent its request — Go's Transport says "unsolicited response" —
// fails the request instead of reading the 503. With too many refusals
// lingering already, it closes c at once, without a word.
func (l *limitListener) refuse(c net.Conn, reason string) {
	if reason == shedPerPeer {
		l.m.perPeer.Inc()
	} else {
		l.m.total.Inc()
	}
	if l.tls {
		c.Close()
		return
	}
	if !l.lim.startLinger() {
		// No room to wait for a request: close without a word. A 503
		// written before the request would be unsolicited to a client
		// whose spare connection this is (see below).
		c.Close()
		return
	}
	go func() {
		defer l.lim.endLinger()
		if !awaitRequest(c) {
			// Nothing asked: a client's spare connection, put in its idle
			// pool. A 503 there would be unsolicited and fail the request
			// that next picks the connection; closed, it is dropped.
			c.Close()
			return
		}
		c.SetWriteDeadline(time.Now().Add(refuseWriteWithin))
		if _, err := c.Write(refusals[reason]); err != nil {
			c.Close()
			return
		}
		lingerClose(c)
	}()
}

// awaitRequest reads from c until the end of a request's header ("\r\n\r\n"),
// lingerRead bytes or lingerFor, whichever comes first, and reports whether
// the caller sent anything.
func awaitRequest(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(lingerFor))
	defer c.SetReadDeadline(time.Time{})
	var seen []byte
	buf := make([]byte, 4096)
	for len(seen) < lingerRead {
		n, err := c.Read(buf)
		seen = append(seen, buf[:n]...)
		if bytes.Contains(seen, []byte("\r\n\r\n")) || err != nil {
			break
		}
	}
	return len(seen) > 0
}

// lingerClose half-closes c, reads what the caller sent until it closes
// its side (having read the answer), within lingerFor, and closes c.
func lingerClose(c net.Conn) {
	defer c.Close()
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(lingerFor))
	io.Copy(io.Discard, io.LimitReader(c, lingerRead))
}

func (cl *connLimits) startLinger() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.lingering >= maxLingering {
		return false
	}
	cl.lingering++
	return true
}

func (cl *connLimits) endLinger() {
	cl.mu.Lock()
	cl.lingering--
	cl.mu.Unlock()
}
