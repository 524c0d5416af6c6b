package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

// An idTap stands between callers and one snowfence serve and records every
// ID the serve sent in a 200 whose body reached the tap whole: the set of
// IDs that serve issued to anyone through it. A caller that hands out an ID
// the taps never recorded invented it.
//
// When the serve cannot be reached, or its answer breaks off, the tap closes
// the caller's connection without a response, so the caller sees what it
// would see of a dead server: a transport error, not a gateway's 502.
type idTap struct {
	name string
	srv  *httptest.Server
	out  *http.Client

	mu       sync.Mutex
	upstream string // the serve's base URL; "" while it is down
	ids      []snowfence.ID
	oks      int // 200s passed on
	cut      int // requests answered by closing the connection
}

// startIDTap starts a tap in front of upstream (a base URL, or "" for none
// yet).
func startIDTap(t *testing.T, name, upstream string) *idTap {
	t.Helper()
	tp := &idTap{name: name, upstream: upstream,
		out: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	tp.srv = httptest.NewServer(http.HandlerFunc(tp.serve))
	t.Cleanup(func() {
		tp.srv.CloseClientConnections()
		tp.srv.Close()
		tp.out.CloseIdleConnections()
	})
	return tp
}

// URL is the tap's base URL, for callers.
func (tp *idTap) URL() string { return tp.srv.URL }

// point sends the tap's traffic to upstream from now on ("": nowhere).
func (tp *idTap) point(upstream string) {
	tp.mu.Lock()
	tp.upstream = upstream
	tp.mu.Unlock()
	tp.out.CloseIdleConnections()
}

// issued returns a copy of every ID recorded.
func (tp *idTap) issued() []snowfence.ID {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]snowfence.ID(nil), tp.ids...)
}

func (tp *idTap) counts() (oks, cut int) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.oks, tp.cut
}

func (tp *idTap) serve(w http.ResponseWriter, r *http.Request) {
	tp.mu.Lock()
	up := tp.upstream
	tp.mu.Unlock()
	body, err := io.ReadAll(r.Body)
	if err != nil || up == "" {
		tp.hangUp(w)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, up+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		tp.hangUp(w)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := tp.out.Do(req)
	if err != nil {
		tp.hangUp(w)
		return
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		tp.hangUp(w)
		return
	}
	if resp.StatusCode == http.StatusOK && r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/ids") {
		ids, ok := idsOf(got)
		tp.mu.Lock()
		if ok {
			tp.ids = append(tp.ids, ids...)
		}
		tp.oks++
		tp.mu.Unlock()
		if !ok {
			// Not a shape the tap knows: pass nothing on rather than an
			// answer whose IDs it could not record.
			tp.hangUp(w)
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(got)
}

// idsOf reads the IDs of a 200 from POST /v1/ids or /v1/ids:batch.
func idsOf(body []byte) ([]snowfence.ID, bool) {
	var v struct {
		ID  *snowfence.ID  `json:"id"`
		IDs []snowfence.ID `json:"ids"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, false
	}
	switch {
	case v.ID != nil && v.IDs == nil:
		return []snowfence.ID{*v.ID}, true
	case v.ID == nil && len(v.IDs) > 0:
		return v.IDs, true
	}
	return nil, false
}

// hangUp closes the caller's connection without an answer.
func (tp *idTap) hangUp(w http.ResponseWriter) {
	tp.mu.Lock()
	tp.cut++
	tp.mu.Unlock()
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("idTap: the test server's ResponseWriter is not a Hijacker")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		conn.Close()
	}
}
