// Command rate is a small open-loop HTTP/1.1 load generator for loopback: it
// sends requests at a fixed rate for a fixed time over a few keep-alive
// connections and reports latency percentiles. It stands in for wrk2, which
// Debian does not package.
//
// Open loop: request i is due at start + i/rate whatever happened to the
// requests before it. A request held up behind a slow answer on its
// connection is timed from when it was due, not from when the connection
// became free, so a server that stalls shows its stall in the percentiles
// (no coordinated omission).
//
// Every loop is bounded: at most -duration (≤ 2 minutes) of sending, at most
// 20 million requests, and a grace period of 10 s for the answers.
//
//	rate -addr 127.0.0.1:8080 -path /v1/ids -rate 20000 -duration 10s
//
// With -closed it measures the most the server answers instead: each
// connection sends its next request as soon as the answer to the last one
// is read, for -duration (the rate is then what was achieved, and latency is
// timed from each send).
//
// With -ca (and -cert, -key for a client certificate) it speaks TLS on every
// connection, each handshake once per connection (keep-alive), so a
// comparison with plain HTTP in the same run shows what TLS costs per
// request, not per handshake.
//
// The last line of output is machine-readable:
//
//	RESULT sent=… ok=… errors=… late=… p50_us=… p99_us=… p999_us=… max_us=…
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"github.com/snowfence/snowfence/bench/load/internal/loopback"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	maxDuration = 2 * time.Minute
	maxRequests = 20_000_000
	grace       = 10 * time.Second
	ioTimeout   = 5 * time.Second
)

type config struct {
	addr, method, path, body, contentType string
	rate                                  float64
	duration                              time.Duration
	conns                                 int
	closed                                bool
	caFile, certFile, keyFile             string
	tls                                   *tls.Config // nil: plain HTTP
}

func main() {
	var c config
	flag.StringVar(&c.addr, "addr", "127.0.0.1:8080", "loopback host:port of the server")
	flag.StringVar(&c.method, "method", "POST", "request method")
	flag.StringVar(&c.path, "path", "/v1/ids", "request path and query")
	flag.StringVar(&c.body, "body", "", "request body")
	flag.StringVar(&c.contentType, "content-type", "application/json", "Content-Type of a body")
	flag.Float64Var(&c.rate, "rate", 1000, "requests per second")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "how long to send (at most 2m)")
	flag.IntVar(&c.conns, "conns", 32, "keep-alive connections (1..1024)")
	flag.BoolVar(&c.closed, "closed", false, "closed loop: send each request when the last answer is read (-rate is ignored)")
	flag.StringVar(&c.caFile, "ca", "", "PEM CA bundle that signed the server's certificate: speak TLS")
	flag.StringVar(&c.certFile, "cert", "", "PEM client certificate, for mutual TLS (with -key and -ca)")
	flag.StringVar(&c.keyFile, "key", "", "PEM key of -cert")
	flag.Parse()
	if err := run(c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rate:", err)
		os.Exit(1)
	}
}

func run(c config, out io.Writer) error {
	if err := loopback.Check("rate", c.addr); err != nil {
		return err
	}
	switch {
	case c.rate <= 0:
		return errors.New("-rate must be positive")
	case c.duration <= 0 || c.duration > maxDuration:
		return fmt.Errorf("-duration must be in (0, %s]", maxDuration)
	case c.conns < 1 || c.conns > 1024:
		return errors.New("-conns must be 1..1024")
	}
	if err := c.loadTLS(); err != nil {
		return err
	}
	if c.closed {
		c.rate = maxRequests / c.duration.Seconds()
	}
	total := int(c.rate * c.duration.Seconds())
	if total < 1 || total > maxRequests {
		return fmt.Errorf("rate × duration = %d requests; want 1..%d", total, maxRequests)
	}
	request := buildRequest(c)
	interval := float64(time.Second) / c.rate

	// latency[i] is request i's latency in ns, -1 if it failed, 0 if it was
	// never sent or answered.
	latency := make([]int64, total)
	var errs, sent, behind atomic.Int64
	start := time.Now().Add(100 * time.Millisecond) // let the workers connect
	deadline := start.Add(c.duration + grace)
	due := func(i int) time.Time { return start.Add(time.Duration(float64(i) * interval)) }
	sendUntil := deadline
	if c.closed {
		// Every request is due as soon as its connection is free, and none
		// is sent after -duration (answers still have the grace period).
		sendUntil = start.Add(c.duration)
		due = func(int) time.Time { return start }
	}

	// Connection k sends requests k, k+conns, k+2·conns, … each when it is
	// due (as wrk2 does). A request whose connection is still busy with the
	// one before when it falls due is sent at once and timed from its due
	// time, so a slow answer counts against every request it holds up (no
	// coordinated omission). A request whose connection is idle is sent
	// after a sleep and timed from when it is actually sent: Go's timers
	// overshoot sub-millisecond sleeps by up to a millisecond, and that is
	// the load generator's delay, not the server's.
	var wg sync.WaitGroup
	for k := range c.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{addr: c.addr, request: request, tls: c.tls}
			defer w.close()
			for i := k; i < total; i += c.conns {
				d := due(i)
				now := time.Now()
				if now.After(sendUntil) {
					return
				}
				from := d
				switch {
				case c.closed:
					from = now
				case now.Before(d):
					time.Sleep(d.Sub(now))
					from = time.Now()
				case i >= c.conns:
					behind.Add(1)
				}
				sent.Add(1)
				if err := w.do(deadline); err != nil {
					errs.Add(1)
					latency[i] = -1
					continue
				}
				latency[i] = max(1, int64(time.Since(from)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	var ok []int64
	unanswered := 0
	for _, l := range latency {
		switch {
		case l > 0:
			ok = append(ok, l)
		case l == 0 && !c.closed: // closed loop: the bound, not a request
			unanswered++
		}
	}
	slices.Sort(ok)
	pct := func(p float64) float64 {
		if len(ok) == 0 {
			return 0
		}
		return float64(ok[min(len(ok)-1, int(p*float64(len(ok))))]) / 1e3
	}
	late := 0
	for _, l := range ok {
		if l > int64(100*time.Millisecond) {
			late++
		}
	}
	mode := fmt.Sprintf("target %.0f req/s", c.rate)
	if c.closed {
		mode = "closed loop"
	}
	if c.tls != nil {
		mode += ", TLS"
		if len(c.tls.Certificates) > 0 {
			mode += " with a client certificate"
		}
	}
	fmt.Fprintf(out, "%s for %s over %d connections to %s %s\n", mode, c.duration, c.conns, c.method, c.path)
	fmt.Fprintf(out, "sent %d, ok %d, errors %d, unsent or unanswered %d, achieved %.0f req/s, %d sent late behind a busy connection\n",
		sent.Load(), len(ok), errs.Load(), unanswered, float64(len(ok))/elapsed.Seconds(), behind.Load())
	fmt.Fprintf(out, "latency: p50 %.1f µs, p99 %.1f µs, p99.9 %.1f µs, max %.1f µs\n",
		pct(0.50), pct(0.99), pct(0.999), pct(1))
	fmt.Fprintf(out, "RESULT sent=%d ok=%d errors=%d late=%d behind=%d achieved=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f\n",
		sent.Load(), len(ok), errs.Load()+int64(unanswered), late, behind.Load(), float64(len(ok))/elapsed.Seconds(), pct(0.50), pct(0.99), pct(0.999), pct(1))
	return nil
}

func buildRequest(c config) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", c.method, c.path, c.addr, len(c.body))
	if c.body != "" {
		fmt.Fprintf(&b, "Content-Type: %s\r\n", c.contentType)
	}
	b.WriteString("\r\n")
	b.WriteString(c.body)
	return b.Bytes()
}

// loadTLS reads -ca, -cert and -key.
func (c *config) loadTLS() error {
	if c.caFile == "" {
		if c.certFile != "" || c.keyFile != "" {
			return errors.New("-cert and -key need -ca")
		}
		return nil
	}
	pem, err := os.ReadFile(c.caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("-ca %s: no PEM certificate", c.caFile)
	}
	host, _, _ := net.SplitHostPort(c.addr)
	c.tls = &tls.Config{RootCAs: pool, ServerName: host}
	if c.certFile != "" || c.keyFile != "" {
		cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return fmt.Errorf("-cert/-key: %w", err)
		}
		c.tls.Certificates = []tls.Certificate{cert}
	}
	return nil
}

// worker is one keep-alive connection sending one request at a time.
type worker struct {
	addr    string
	request []byte
	tls     *tls.Config // nil: plain
	conn    net.Conn
	r       *bufio.Reader
}

func (w *worker) close() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// do sends the request and reads the whole response, reconnecting once if
// the connection was closed. A status other than 200 is an error.
func (w *worker) do(deadline time.Time) error {
	for attempt := 0; ; attempt++ {
		if w.conn == nil {
			conn, err := net.DialTimeout("tcp", w.addr, ioTimeout)
			if err != nil {
				return err
			}
			if w.tls != nil {
				tc := tls.Client(conn, w.tls)
				tc.SetDeadline(time.Now().Add(ioTimeout))
				if err := tc.Handshake(); err != nil {
					conn.Close()
					return err
				}
				conn = tc
			}
			w.conn, w.r = conn, bufio.NewReaderSize(conn, 64<<10)
		}
		w.conn.SetDeadline(minTime(time.Now().Add(ioTimeout), deadline))
		status, err := w.roundTrip()
		if err != nil {
			w.close()
			if attempt == 0 && errors.Is(err, io.EOF) {
				continue // a stale keep-alive connection
			}
			return err
		}
		if status != 200 {
			return fmt.Errorf("status %d", status)
		}
		return nil
	}
}

func (w *worker) roundTrip() (int, error) {
	if _, err := w.conn.Write(w.request); err != nil {
		return 0, err
	}
	line, err := w.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length, chunked, closeConn := -1, false, false
	for range 100 {
		h, err := w.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, _ := bytes.Cut(h, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closeConn = bytes.EqualFold(value, []byte("close"))
		}
	}
	switch {
	case chunked:
		if err := w.discardChunked(); err != nil {
			return 0, err
		}
	case length >= 0:
		if _, err := w.r.Discard(length); err != nil {
			return 0, err
		}
	default:
		return 0, errors.New("response without Content-Length or chunked encoding")
	}
	if closeConn {
		w.close()
	}
	return status, nil
}

func (w *worker) discardChunked() error {
	for range 1 << 20 {
		line, err := w.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimSpace(line), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			// Trailers end with an empty line.
			for range 100 {
				t, err := w.r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimSpace(t)) == 0 {
					return nil
				}
			}
			return errors.New("too many trailers")
		}
		if _, err := w.r.Discard(int(n) + 2); err != nil {
			return err
		}
	}
	return errors.New("too many chunks")
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
