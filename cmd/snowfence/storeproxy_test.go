//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// A storeProxy is a loopback TCP proxy in front of one etcd that measures
// who calls it: for every connection it finds the process at the other end
// (the kernel's socket tables, /proc/net/tcp and /proc/PID/fd), and it
// reads the HTTP/2 frames the client sends, as gRPC carries etcd's calls,
// to count the calls by method and by process.
//
// The counts are kept so that they can be compared exactly with what etcd
// counts itself (grpc_server_started_total): etcd counts a streaming call
// when the stream opens and a unary call once its request has arrived, so
// the proxy notes both, the HEADERS frame that opens a stream and the frame
// that ends the client's half of it.
type storeProxy struct {
	name   string
	target string // etcd's host:port
	ln     net.Listener

	mu     sync.Mutex
	calls  map[proxyCall]*callCount
	conns  map[int]int // connections by the pid at the other end
	open   map[net.Conn]bool
	faults []string // what the proxy could not attribute or parse
	wg     sync.WaitGroup
}

// proxyCall is one gRPC method called by one process.
type proxyCall struct {
	pid    int
	method string // the HTTP/2 :path, "/etcdserverpb.KV/Range"
}

// callCount is how many streams of a method a process opened, and how many
// of them it finished sending.
type callCount struct{ opened, ended int }

// startStoreProxy listens on a free loopback port in front of target
// (host:port) until the test ends.
func startStoreProxy(t *testing.T, name, target string) *storeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &storeProxy{name: name, target: target, ln: ln, calls: map[proxyCall]*callCount{}, conns: map[int]int{}, open: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// URL is the proxy's address as an etcd client endpoint.
func (p *storeProxy) URL() string { return "http://" + p.ln.Addr().String() }

// close stops accepting, cuts every connection and waits for the copies.
func (p *storeProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *storeProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.relay(c)
	}
}

// relay attributes c to a process, then copies both ways between c and a
// new connection to etcd, reading the client's frames as they pass. When
// the client's side ends (it closed, or was killed) the proxy closes its
// write half to etcd and reads on until etcd closes: etcd sees every byte
// the client sent, then an orderly end, never a reset that could drop a
// request the proxy has counted. When etcd's side ends first, the client
// is told the same way.
func (p *storeProxy) relay(c net.Conn) {
	defer p.wg.Done()
	pid, err := peerPID(c)
	if err != nil {
		p.fault("connection from %s: %v", c.RemoteAddr(), err)
		pid = -1
	}
	up, err := net.Dial("tcp", p.target)
	p.mu.Lock()
	p.conns[pid]++
	if err == nil {
		p.open[c], p.open[up] = true, true
	}
	p.mu.Unlock()
	if err != nil {
		c.Close() // etcd is gone: the client sees a refused connection
		return
	}
	pr, pw := io.Pipe()
	parsed := make(chan struct{})
	go func() {
		defer close(parsed)
		p.parse(pid, pr)
		io.Copy(io.Discard, pr) // after a parse error, keep the copy flowing
	}()
	toEtcd := make(chan struct{})
	go func() {
		defer close(toEtcd)
		io.Copy(up, io.TeeReader(c, pw))
		pw.Close()
		up.(*net.TCPConn).CloseWrite()
	}()
	io.Copy(&lenientWriter{w: c}, up) // until etcd closes
	c.(*net.TCPConn).CloseWrite()
	<-toEtcd
	<-parsed
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.open, c)
	delete(p.open, up)
	p.mu.Unlock()
}

// parse reads the HTTP/2 frames a gRPC client sends, after its connection
// preface, and counts the streams it opens and ends by method.
func (p *storeProxy) parse(pid int, r io.Reader) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(r, preface); err != nil {
		return // closed before it said anything
	}
	if string(preface) != http2.ClientPreface {
		p.fault("pid %d: not an HTTP/2 client (%q)", pid, preface)
		return
	}
	fr := http2.NewFramer(io.Discard, r)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil) // the connection's HPACK table, as HTTP/2 sizes it at first
	fr.MaxHeaderListSize = 1 << 20
	paths := map[uint32]string{}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				p.fault("pid %d: reading HTTP/2 frames: %v", pid, err)
			}
			return
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			path := f.PseudoValue("path")
			paths[f.StreamID] = path
			p.count(pid, path, true, f.StreamEnded())
		case *http2.DataFrame:
			if f.StreamEnded() {
				p.count(pid, paths[f.StreamID], false, true)
			}
		}
	}
}

func (p *storeProxy) count(pid int, method string, opened, ended bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := proxyCall{pid, method}
	n := p.calls[k]
	if n == nil {
		n = &callCount{}
		p.calls[k] = n
	}
	if opened {
		n.opened++
	}
	if ended {
		n.ended++
	}
}

func (p *storeProxy) fault(format string, args ...any) {
	p.mu.Lock()
	p.faults = append(p.faults, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

// snapshot returns the calls counted so far, the connections by pid, how
// many connections are still open and what could not be attributed.
func (p *storeProxy) snapshot() (map[proxyCall]callCount, map[int]int, int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	calls := map[proxyCall]callCount{}
	for k, v := range p.calls {
		calls[k] = *v
	}
	conns := map[int]int{}
	for k, v := range p.conns {
		conns[k] = v
	}
	return calls, conns, len(p.open) / 2, slices.Clone(p.faults)
}

// waitIdle polls (bounded) until no connection through the proxy is open:
// every byte a client sent has reached etcd and been counted. If one stays
// open, the test fails but goes on, to show who else holds it.
func (p *storeProxy) waitIdle(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		_, _, open, _ := p.snapshot()
		if open == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("proxy of %s: %d connections still open %s after the clients the test knows of ended", p.name, open, within)
			return
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// lenientWriter writes to w until a write fails, then discards: the copy
// from etcd goes on reading until etcd closes, even once the client is gone.
type lenientWriter struct {
	w      io.Writer
	failed bool
}

func (l *lenientWriter) Write(b []byte) (int, error) {
	if !l.failed {
		if _, err := l.w.Write(b); err != nil {
			l.failed = true
		}
	}
	return len(b), nil
}

// peerPID returns the process that holds the other end of c, a loopback
// TCP connection accepted by this process: the socket whose local address
// is c's remote address (from /proc/net/tcp) is found by its inode among
// the open files of every process the test may read.
func peerPID(c net.Conn) (int, error) {
	local, remote := c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, err
	}
	want := fmt.Sprintf("%s:%04X", hexIPv4(remote.IP), remote.Port)
	wantRem := fmt.Sprintf("%s:%04X", hexIPv4(local.IP), local.Port)
	inode := ""
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && f[1] == want && f[2] == wantRem {
			inode = f[9]
			break
		}
	}
	if inode == "" || inode == "0" {
		return 0, fmt.Errorf("no socket %s -> %s in /proc/net/tcp", want, wantRem)
	}
	link := "socket:[" + inode + "]"
	procs, err := filepath.Glob("/proc/[0-9]*/fd")
	if err != nil {
		return 0, err
	}
	for _, dir := range procs {
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && l == link {
				return strconv.Atoi(filepath.Base(filepath.Dir(dir)))
			}
		}
	}
	return 0, fmt.Errorf("no process holds socket inode %s (%s)", inode, want)
}

// hexIPv4 is an IPv4 address as /proc/net/tcp writes it: the four bytes
// in the host's (little-endian) order, in hex.
func hexIPv4(ip net.IP) string {
	b := ip.To4()
	if b == nil {
		return ""
	}
	return fmt.Sprintf("%02X%02X%02X%02X", b[3], b[2], b[1], b[0])
}

// compareStoreCalls compares the calls etcd started (grpc_server_started_total
// by method, the difference between two readings) with the proxy's: a
// streaming call counts when it opened, a unary one when the client
// finished sending it. It returns a line per method for the log, and an
// error naming every method where they differ — except, up to cutOff in
// all, unary calls the proxy saw and etcd never started: a holder
// SIGKILLed while a call was on its way leaves the proxy to close the
// connection to etcd before etcd dispatched it (the killed region's
// store; 0 elsewhere). A call etcd started that the proxy did not see is
// never excused.
func compareStoreCalls(etcd map[string]float64, streaming map[string]bool, proxied map[proxyCall]callCount, cutOff int) ([]string, error) {
	byMethod := map[string]int{}
	for k, v := range proxied {
		if streaming[k.method] {
			byMethod[k.method] += v.opened
		} else {
			byMethod[k.method] += v.ended
		}
	}
	var methods []string
	for m := range etcd {
		methods = append(methods, m)
	}
	for m := range byMethod {
		if _, ok := etcd[m]; !ok {
			methods = append(methods, m)
		}
	}
	slices.Sort(methods)
	var lines, diffs []string
	for _, m := range methods {
		e, got := etcd[m], byMethod[m]
		if e == 0 && got == 0 {
			continue
		}
		line := fmt.Sprintf("%s etcd %g proxy %d", m, e, got)
		if missed := got - int(e); missed > 0 && missed <= cutOff && !streaming[m] && float64(int(e)) == e {
			cutOff -= missed
			lines = append(lines, line+fmt.Sprintf(" (%d cut off by the kill before etcd started them)", missed))
			continue
		}
		lines = append(lines, line)
		if e != float64(got) {
			diffs = append(diffs, fmt.Sprintf("%s: etcd started %g, %d came through the proxy", m, e, got))
		}
	}
	if diffs != nil {
		return lines, fmt.Errorf("calls that did not come through the store's proxy, or never reached etcd: %s", strings.Join(diffs, "; "))
	}
	return lines, nil
}

// grpcStarted reads etcd's /metrics (on its client URL, HTTP/1, which is
// not a gRPC call and so not counted) and returns grpc_server_started_total
// by method, "/service/method", with the methods that stream.
func grpcStarted(t *testing.T, etcdURL string) (map[string]float64, map[string]bool) {
	t.Helper()
	r := call(t, "GET", etcdURL+"/metrics", "", "")
	if r.status != 200 {
		t.Fatalf("GET %s/metrics: %d", etcdURL, r.status)
	}
	started, streaming := map[string]float64{}, map[string]bool{}
	for _, line := range strings.Split(r.body, "\n") {
		rest, ok := strings.CutPrefix(line, "grpc_server_started_total{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		l := promLabels(labels)
		m := "/" + l["grpc_service"] + "/" + l["grpc_method"]
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("etcd metrics line %q: %v", line, err)
		}
		started[m] += v
		streaming[m] = l["grpc_type"] != "unary"
	}
	if len(started) == 0 {
		t.Fatalf("no grpc_server_started_total in %s/metrics", etcdURL)
	}
	return started, streaming
}

// promLabels parses a Prometheus label list, a="x",b="y", whose values
// hold no quotes or commas.
func promLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = strings.Trim(v, `"`)
	}
	return out
}
