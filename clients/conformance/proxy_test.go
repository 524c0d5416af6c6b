package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A fault spoils the answers to a proxy's next mint requests (PROTOCOL.md,
// "Faults the proxy injects").
type fault struct {
	Endpoint   int    `json:"endpoint"`
	Status     int    `json:"status"`
	RetryAfter string `json:"retry_after"`
	Body       string `json:"body"`
	DelayMS    int    `json:"delay_ms"`
	Times      int    `json:"times"`
}

// spoiled is an answer the proxy spoiled: its IDs must never be handed out,
// and with a Retry-After the client's next mint request must come no
// sooner than written + retryAfter.
type spoiled struct {
	ids        []string
	written    time.Time
	retryAfter time.Duration
}

// proxy is a fault-injecting HTTP proxy in front of one real server. It
// counts mint requests and health probes, remembers every ID it passed in
// a sound answer and every spoiled answer, and can be stopped (its port
// then refuses connections) and started again on the same port.
type proxy struct {
	t        testing.TB
	upstream string
	client   *http.Client
	addr     string

	mu        sync.Mutex
	srv       *http.Server
	faults    []fault
	mints     int
	probes    int
	sinceUp   int         // mint requests since the last start
	arrivals  []time.Time // of every mint request, in order
	sound     map[string]bool
	spoiled   []spoiled
	badCounts []string // mint requests for a count outside 1..1000
	changed   chan struct{}
}

func newProxy(t testing.TB, upstream string) *proxy {
	p := &proxy{t: t, upstream: upstream, sound: map[string]bool{}, changed: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() {
		p.stop()
		p.client.CloseIdleConnections()
	})
	return p
}

// URL is the proxy's base URL.
func (p *proxy) URL() string { return "http://" + p.addr }

func (p *proxy) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(p.handle), ReadHeaderTimeout: 10 * time.Second}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	go srv.Serve(ln)
}

// stop closes the listener and every connection: the port refuses
// connections until start.
func (p *proxy) stop() {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// start listens on the proxy's port again.
func (p *proxy) start() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy: listen on %s again: %v", p.addr, err)
	}
	p.mu.Lock()
	p.sinceUp = 0
	p.mu.Unlock()
	p.serve(ln)
}

func (p *proxy) arm(f fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range max(f.Times, 1) {
		p.faults = append(p.faults, f)
	}
}

// counts returns the mint requests, probes and mint requests since the
// last start seen so far.
func (p *proxy) counts() (mints, probes, sinceUp int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mints, p.probes, p.sinceUp
}

// await waits until cond holds of the counts, failing after within.
func (p *proxy) await(within time.Duration, cond func(mints, probes, sinceUp int) bool) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		ok, ch := cond(p.mints, p.probes, p.sinceUp), p.changed
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// note records an event under p.mu and wakes await.
func (p *proxy) noteLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func isMint(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == "/v1/ids" || r.URL.Path == "/v1/ids:batch")
}

func (p *proxy) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	mint := isMint(r)
	var f *fault
	p.mu.Lock()
	if mint {
		p.mints++
		p.sinceUp++
		p.arrivals = append(p.arrivals, time.Now())
		if n, ok := mintCount(r, body); !ok || n < 1 || n > 1000 {
			p.badCounts = append(p.badCounts, r.URL.String()+" "+string(body))
		}
		if len(p.faults) > 0 {
			f = &p.faults[0]
			p.faults = p.faults[1:]
		}
	} else if r.URL.Path == "/healthz" {
		p.probes++
	}
	p.noteLocked()
	p.mu.Unlock()

	req, err := http.NewRequestWithContext(context.Background(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	up, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	ids := batchIDs(up)
	if !mint || resp.StatusCode != http.StatusOK || f == nil {
		if mint && resp.StatusCode == http.StatusOK {
			p.mu.Lock()
			for _, id := range ids {
				p.sound[id] = true
			}
			p.mu.Unlock()
		}
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		w.Write(up)
		return
	}
	p.spoil(w, r, *f, up, ids)
}

// spoil answers with the fault f instead of the server's sound answer up,
// whose IDs are ids, and records the IDs as never to be handed out.
func (p *proxy) spoil(w http.ResponseWriter, r *http.Request, f fault, up []byte, ids []string) {
	rec := spoiled{ids: ids}
	defer func() {
		rec.written = time.Now()
		p.mu.Lock()
		p.spoiled = append(p.spoiled, rec)
		p.noteLocked()
		p.mu.Unlock()
	}()
	switch {
	case f.Status != 0:
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
			s, err := strconv.Atoi(f.RetryAfter)
			if err != nil {
				p.t.Errorf("proxy: fault retry_after %q is not whole seconds", f.RetryAfter)
			}
			rec.retryAfter = time.Duration(s) * time.Second
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		fmt.Fprintf(w, `{"error":{"code":"conformance_fault","message":"a fault the conformance proxy injected (%d)"}}`, f.Status)
	case f.DelayMS > 0:
		t := time.NewTimer(time.Duration(f.DelayMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(up)
	case f.Body == "truncate":
		hj, ok := w.(http.Hijacker)
		if !ok {
			p.t.Error("proxy: cannot hijack the connection to truncate")
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			p.t.Errorf("proxy: hijack: %v", err)
			return
		}
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(up))
		buf.Write(up[:len(up)/2])
		buf.Flush()
		conn.Close()
	default:
		b, err := spoilBody(f.Body, ids)
		if err != nil {
			p.t.Errorf("proxy: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

// spoilBody is a 200 body that breaks one rule of the batch's shape.
func spoilBody(kind string, ids []string) ([]byte, error) {
	quoted := func(ids []string) string {
		q := make([]string, len(ids))
		for i, id := range ids {
			q[i] = strconv.Quote(id)
		}
		return strings.Join(q, ",")
	}
	whole := `{"ids":[` + quoted(ids) + `]}`
	switch kind {
	case "swap":
		if len(ids) < 2 {
			return nil, fmt.Errorf("fault swap needs a batch of 2 or more, got %d", len(ids))
		}
		s := append([]string{ids[1], ids[0]}, ids[2:]...)
		return []byte(`{"ids":[` + quoted(s) + `]}`), nil
	case "short":
		return []byte(`{"ids":[` + quoted(ids[:len(ids)-1]) + `]}`), nil
	case "number":
		rest := ""
		if len(ids) > 1 {
			rest = "," + quoted(ids[1:])
		}
		return []byte(`{"ids":[` + ids[0] + rest + `]}`), nil
	case "trailing":
		return []byte(whole + `{}`), nil
	case "extra_member":
		return []byte(`{"ids":[` + quoted(ids) + `],"next":"x"}`), nil
	}
	return nil, fmt.Errorf("unknown body fault %q", kind)
}

// mintCount is the count a mint request asks for: ?count=N, a body
// {"count":N}, or 1 for POST /v1/ids without either.
func mintCount(r *http.Request, body []byte) (int, bool) {
	if c := r.URL.Query().Get("count"); c != "" {
		n, err := strconv.Atoi(c)
		return n, err == nil
	}
	var b struct {
		Count *int `json:"count"`
	}
	if len(bytes.TrimSpace(body)) > 0 && json.Unmarshal(body, &b) == nil && b.Count != nil {
		return *b.Count, true
	}
	return 1, r.URL.Path == "/v1/ids"
}

// batchIDs reads the IDs of a sound batch body ({"ids":["…"]}); nil for
// anything else.
func batchIDs(b []byte) []string {
	var v struct {
		IDs []string `json:"ids"`
	}
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v.IDs
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}
