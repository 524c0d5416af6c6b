package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testpki"
)

// A connection flood end to end: serve on its embedded etcd, with mutual
// TLS on the API listener and a plain admin listener, runs with its
// file-descriptor limit lowered to floodFDLimit, and the test holds more
// connections than that open against it: idle keep-alive connections on
// the admin listener and bare TCP connections that never send a
// ClientHello on the TLS one. The process must stay up and keep its lease,
// answer other callers 200 or refuse them with the clear 503 meanwhile,
// and serve normally soon after the flood ends. Without the connection caps
// the process runs out of descriptors and the embedded etcd exits it.
const (
	floodFDLimit = 1024
	// floodIdle and floodHalfOpen are how many connections the test keeps
	// open of each kind (it opens another when the server closes one),
	// together well past floodFDLimit.
	floodIdle     = 1300
	floodHalfOpen = 500
	// floodFor is how long the flood lasts: past the embedded etcd's WAL
	// purge, every 30 s, which is what fails first without the caps.
	floodFor = 40 * time.Second
	// floodRedial is how long a flooding connection the server closed
	// waits before it dials again: it bounds the churn the test causes on
	// a shared machine, not any synchronisation.
	floodRedial = 500 * time.Millisecond
	// floodRecover bounds how long after the flood the service must serve
	// normally again.
	floodRecover = 20 * time.Second
)

// holderSeen is what the flood test watches of /v1/status.
type holderSeen struct {
	Holder struct {
		Machine int    `json:"machine"`
		Token   uint64 `json:"token"`
		Claims  uint64 `json:"claims"`
		Issuing bool   `json:"issuing"`
	} `json:"holder"`
}

// floodCounts are the flood's figures.
type floodCounts struct {
	idleHeld, halfOpenHeld  atomic.Int64 // open now
	idlePeak, halfOpenPeak  atomic.Int64
	idleRefused, dialFailed atomic.Int64
	adminOK, adminRefused   atomic.Int64
	// adminClosed counts probes of the admin listener closed without an
	// answer: a refusal with no room left to wait for the request
	// (service/connrefuse.go: more than maxLingering refusals at once).
	adminClosed                  atomic.Int64
	apiOK, apiRefused            atomic.Int64
	statusSeen                   atomic.Int64
	peakRSSKiB, peakHeldTogether atomic.Int64
}

func raise(peak *atomic.Int64, v int64) {
	for {
		p := peak.Load()
		if v <= p || peak.CompareAndSwap(p, v) {
			return
		}
	}
}

func TestE2EConnectionFlood(t *testing.T) {
	t.Parallel()
	heavy(t)
	f := newPerimeterFiles(t)
	// ulimit -n sets the soft and the hard limit, so the Go runtime
	// cannot raise it again at start; exec keeps the shell's PID.
	via := []string{"sh", "-c", "ulimit -n " + strconv.Itoa(floodFDLimit) + ` && exec "$0" "$@"`}
	s := startServiceVia(t, via, t.TempDir(), f.flags()...)
	waitAdminReady(t, s)
	pid := s.cmd.Process.Pid
	if limit := processFDLimit(t, pid); limit != floodFDLimit {
		t.Fatalf("serve runs with an open-files limit of %d, want %d", limit, floodFDLimit)
	}
	before := statusOf(t, s.admin)
	if before.Holder.Machine < 0 || !before.Holder.Issuing {
		t.Fatalf("not issuing before the flood: %+v", before.Holder)
	}
	t.Logf("before the flood: machine %d, token %d, claims %d, VmRSS %d KiB", before.Holder.Machine, before.Holder.Token, before.Holder.Claims, rssKiB(t, pid))

	orders := f.caller(t, f.ca, testpki.Options{URIs: []string{"spiffe://corp/orders"}})
	apiAddr := strings.TrimPrefix(s.url, "https://")
	adminAddr := strings.TrimPrefix(s.admin, "http://")

	if floodIdle+floodHalfOpen <= floodFDLimit {
		t.Fatalf("the flood (%d connections) must go past the limit (%d)", floodIdle+floodHalfOpen, floodFDLimit)
	}
	var n floodCounts
	ctx, cancel := context.WithTimeout(context.Background(), floodFor)
	defer cancel()
	var flood sync.WaitGroup
	for range floodIdle {
		flood.Add(1)
		go func() { defer flood.Done(); holdIdle(ctx, adminAddr, &n) }()
	}
	for range floodHalfOpen {
		flood.Add(1)
		go func() { defer flood.Done(); holdHalfOpen(ctx, apiAddr, &n) }()
	}

	// Other callers during the flood: a fresh connection each, on both
	// listeners, every probeEvery (a sampling period, not synchronisation).
	const probeEvery = 200 * time.Millisecond
	var failures []string
	started := time.Now()
probing:
	for {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("serve exited %s into the flood (up to %d connections held at once, %d idle keep-alive and %d half-open TLS at their peaks): %v\n%s",
				time.Since(started).Round(time.Millisecond), n.peakHeldTogether.Load(), n.idlePeak.Load(), n.halfOpenPeak.Load(), err, tail(s.stderr.String()))
		case <-ctx.Done():
			break probing
		case <-time.After(probeEvery):
		}
		raise(&n.peakHeldTogether, n.idleHeld.Load()+n.halfOpenHeld.Load())
		raise(&n.peakRSSKiB, rssKiB(t, pid))
		if msg := probeAdmin(s.admin, before, &n); msg != "" {
			failures = append(failures, msg)
		}
		probeAPI(s.url, orders, &n)
	}
	cancel()
	flood.Wait()
	t.Logf("flood over after %s: held at most %d connections at once (%d idle keep-alive, %d half-open TLS at their peaks), %d flooding connections refused, %d dials failed; peak VmRSS %d KiB",
		floodFor, n.peakHeldTogether.Load(), n.idlePeak.Load(), n.halfOpenPeak.Load(), n.idleRefused.Load(), n.dialFailed.Load(), n.peakRSSKiB.Load())
	t.Logf("other callers during the flood: admin %d answered 200, %d refused with the clear 503, %d closed without an answer (%d status reads); API %d answered 200, %d refused",
		n.adminOK.Load(), n.adminRefused.Load(), n.adminClosed.Load(), n.statusSeen.Load(), n.apiOK.Load(), n.apiRefused.Load())
	if closed, probes := n.adminClosed.Load(), n.adminOK.Load()+n.adminRefused.Load()+n.adminClosed.Load(); closed*4 > probes {
		t.Errorf("%d of %d admin probes were closed without an answer: the refusal's wait for the request is meant to be the rule, the silent close the exception", closed, probes)
	}
	for _, m := range failures {
		t.Error(m)
	}
	shedSeries := connMetrics(t, s.admin)
	if shedTotal := sumOf(shedSeries, "snowfence_http_connections_refused_total"); shedTotal == 0 {
		t.Errorf("the flood of %d connections shed none at a limit of %d: it shows nothing", floodIdle+floodHalfOpen, floodFDLimit)
	}
	if n.statusSeen.Load() == 0 {
		t.Errorf("no read of /v1/status succeeded during the flood: the lease was never seen")
	}
	if n.apiOK.Load() == 0 {
		t.Errorf("no API request was answered during the flood: the flood starved real callers")
	}

	// After the flood: served normally within floodRecover.
	ended := time.Now()
	for {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("serve exited after the flood: %v\n%s", err, tail(s.stderr.String()))
		default:
		}
		if apiServes(s.url, orders) && call(t, "GET", s.admin+"/readyz", "", "").status == 200 {
			break
		}
		if time.Since(ended) > floodRecover {
			t.Fatalf("not serving again within %s of the flood's end\n%s", floodRecover, tail(s.stderr.String()))
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	t.Logf("served normally again %s after the flood ended; VmRSS %d KiB", time.Since(ended).Round(time.Millisecond), rssKiB(t, pid))
	after := statusOf(t, s.admin)
	if after.Holder.Machine != before.Holder.Machine || after.Holder.Claims != before.Holder.Claims || after.Holder.Token != before.Holder.Token {
		t.Errorf("the lease changed across the flood: before %+v, after %+v", before.Holder, after.Holder)
	}
	t.Logf("the caps' series after the flood: %s", strings.Join(shedSeries, "; "))
	s.stop(t)
}

// holdIdle keeps one idle keep-alive connection open on the plain listener
// at addr until ctx ends: it makes one request, and once answered 200
// leaves the connection idle; when the server closes it or refuses it, it
// dials again after floodRedial.
func holdIdle(ctx context.Context, addr string, n *floodCounts) {
	d := net.Dialer{}
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			n.dialFailed.Add(1)
			pause(ctx)
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		held := n.idleHeld.Add(1)
		raise(&n.idlePeak, held)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: flood\r\n\r\n"); err == nil {
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && !resp.Close {
					c.Read(make([]byte, 1)) // idle until the server or ctx closes it
				} else {
					n.idleRefused.Add(1)
				}
			}
		}
		n.idleHeld.Add(-1)
		stop()
		c.Close()
		pause(ctx)
	}
}

// holdHalfOpen keeps one TCP connection open on the TLS listener at addr
// that never sends a ClientHello, until ctx ends; when the server closes
// it, it dials again after floodRedial.
func holdHalfOpen(ctx context.Context, addr string, n *floodCounts) {
	d := net.Dialer{}
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			n.dialFailed.Add(1)
			pause(ctx)
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		raise(&n.halfOpenPeak, n.halfOpenHeld.Add(1))
		c.Read(make([]byte, 1)) // until the server or ctx closes it
		n.halfOpenHeld.Add(-1)
		stop()
		c.Close()
		pause(ctx)
	}
}

func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(floodRedial):
	}
}

// probeAdmin reads /v1/status on a fresh connection: answered 200 with the
// same lease as before, or refused with the clear 503; anything else is
// returned as a failure.
func probeAdmin(admin string, before holderSeen, n *floodCounts) string {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get(admin + "/v1/status")
	if err != nil && closedWithoutAnswer(err) {
		n.adminClosed.Add(1)
		return ""
	}
	if err != nil {
		return "admin /v1/status during the flood: " + err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		n.adminOK.Add(1)
		var st holderSeen
		if err := json.Unmarshal(b, &st); err != nil {
			return "admin /v1/status during the flood: " + err.Error()
		}
		n.statusSeen.Add(1)
		if st.Holder.Machine != before.Holder.Machine || st.Holder.Claims != before.Holder.Claims || !st.Holder.Issuing {
			return "the lease changed during the flood: " + string(b)
		}
		return ""
	case http.StatusServiceUnavailable:
		if resp.Header.Get("Retry-After") == "" || !resp.Close || !strings.Contains(string(b), `"reason":"too-many-connections"`) {
			return "admin /v1/status during the flood: a 503 that is not the clear refusal: " + resp.Header.Get("Retry-After") + " " + string(b)
		}
		n.adminRefused.Add(1)
		return ""
	}
	return "admin /v1/status during the flood answered " + resp.Status + ": " + string(b)
}

// closedWithoutAnswer reports whether err says the connection closed
// before any answer: what a refusal with no room to wait for the request
// does (service/connrefuse.go), the client seeing an EOF or, having
// written nothing yet, Go's "server closed idle connection".
func closedWithoutAnswer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "server closed idle connection")
}

// probeAPI mints an ID on a fresh TLS connection; a refusal on the TLS
// listener is a closed connection, which is counted, not failed.
func probeAPI(url string, cfg *tls.Config, n *floodCounts) {
	if apiServes(url, cfg) {
		n.apiOK.Add(1)
	} else {
		n.apiRefused.Add(1)
	}
}

// apiServes reports whether POST /v1/ids on a fresh connection answers 200.
func apiServes(url string, cfg *tls.Config) bool {
	hc := tlsClient(cfg)
	hc.Transport.(*http.Transport).DisableKeepAlives = true
	resp, err := hc.Post(url+"/v1/ids", "", nil)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func statusOf(t *testing.T, admin string) holderSeen {
	t.Helper()
	r := call(t, "GET", admin+"/v1/status", "", "")
	var st holderSeen
	if err := json.Unmarshal([]byte(r.body), &st); r.status != 200 || err != nil {
		t.Fatalf("GET /v1/status: %d %s", r.status, r.body)
	}
	return st
}

// connMetrics are the connection series of the admin listener's /metrics.
func connMetrics(t *testing.T, admin string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(call(t, "GET", admin+"/metrics", "", "").body, "\n") {
		if strings.HasPrefix(line, "snowfence_http_connection") || strings.HasPrefix(line, "snowfence_http_accept") {
			out = append(out, line)
		}
	}
	return out
}

// sumOf adds up the values of the series of metric in lines.
func sumOf(lines []string, metric string) float64 {
	var sum float64
	for _, line := range lines {
		if strings.HasPrefix(line, metric+"{") || strings.HasPrefix(line, metric+" ") {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			sum += v
		}
	}
	return sum
}

// rssKiB is the process's resident set (VmRSS), 0 once it is gone.
func rssKiB(t *testing.T, pid int) int64 {
	return procStatusField(t, pid, "/status", "VmRSS:")
}

// processFDLimit is the process's soft open-files limit.
func processFDLimit(t *testing.T, pid int) int64 {
	return procStatusField(t, pid, "/limits", "Max open files")
}

func procStatusField(t *testing.T, pid int, file, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			if fs := strings.Fields(rest); len(fs) > 0 {
				v, _ := strconv.ParseInt(fs[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// tail is the end of a process's stderr, for a failure message.
func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
