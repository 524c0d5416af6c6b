package conformance

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// TestConformance plays every scenario of scenarios.json against every
// client (PROTOCOL.md), the languages side by side, each language's
// scenarios one after another through one runner process.
func TestConformance(t *testing.T) {
	all := loadScenarios(t)
	srv := theServers(t)
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			r := startRunner(t, lang)
			for _, sc := range all {
				t.Run(sc.Name, func(t *testing.T) {
					r.t = t
					defer func() { r.t = nil }()
					play(t, r, srv, sc)
				})
			}
		})
	}
}

// play runs one scenario through a runner and checks it.
func play(t testing.TB, r *runner, srv *servers, sc scenario) {
	p := &playback{t: t, r: r, srv: srv, sc: sc}
	var urls []string
	for i, kind := range sc.Endpoints {
		switch kind {
		case "proxy":
			px := newProxy(t, srv.plain[i%len(srv.plain)])
			p.proxies = append(p.proxies, px)
			urls = append(urls, px.URL())
		case "dead":
			p.proxies = append(p.proxies, nil)
			urls = append(urls, deadPort(t))
		case "mtls":
			p.proxies = append(p.proxies, nil)
			p.direct = true
			urls = append(urls, srv.mtls)
		default:
			t.Fatalf("endpoint kind %q", kind)
		}
	}
	if len(urls) > 0 {
		cfg := map[string]any{}
		for k, v := range sc.Config {
			cfg[k] = v
		}
		cfg["endpoints"] = urls
		switch sc.TLS {
		case "", "none":
		case "ca_only":
			cfg["tls"] = map[string]any{"ca_file": srv.caFile}
		case "client_cert":
			cfg["tls"] = map[string]any{"ca_file": srv.caFile, "cert_file": srv.certFile, "key_file": srv.keyFile}
		default:
			t.Fatalf("tls %q", sc.TLS)
		}
		if a := r.call(map[string]any{"op": "open", "config": cfg}, time.Minute); !a.OK {
			t.Fatalf("open %v: %s", cfg, describe(a))
		}
	}
	for i, st := range sc.Steps {
		p.step(i, st)
		if t.Failed() {
			t.Logf("scenario %s failed at step %d; the runner's stderr:\n%s", sc.Name, i, r.stderr())
			break
		}
	}
	if len(urls) > 0 {
		r.call(map[string]any{"op": "close"}, time.Minute)
	}
	p.check()
}

// playback is one scenario's state while it is played.
type playback struct {
	t       testing.TB
	r       *runner
	srv     *servers
	sc      scenario
	proxies []*proxy // nil for an endpoint with no proxy (dead, mtls)
	// direct: an endpoint serves IDs with no proxy in between (mtls), so
	// the proxies cannot vouch for every ID.
	direct bool
	// handed is every ID handed out, in order; steps the IDs of each
	// sequential step (next, next_n); seen counts each ID.
	handed [][]string
	seen   map[string]int
}

func (p *playback) proxy(i int) *proxy {
	if i < 0 || i >= len(p.proxies) || p.proxies[i] == nil {
		p.t.Fatalf("step refers to endpoint %d, which is not a proxy", i)
	}
	return p.proxies[i]
}

func (p *playback) step(i int, st step) {
	t := p.t
	switch {
	case st.Client != nil:
		p.client(i, st)
	case st.Open != nil:
		a := p.r.call(map[string]any{"op": "open", "config": st.Open}, time.Minute)
		if want := orOK(st.Expect); a.kind() != want {
			t.Errorf("step %d: open %v: got %s, want %s", i, st.Open, describe(a), want)
		}
	case st.Fault != nil:
		p.proxy(st.Fault.Endpoint).arm(*st.Fault)
	case st.Mints != nil:
		m, _, _ := p.proxy(st.Mints.Endpoint).counts()
		if st.Mints.Exactly != nil && m != *st.Mints.Exactly {
			t.Errorf("step %d: endpoint %d saw %d mint requests, want exactly %d %s", i, st.Mints.Endpoint, m, *st.Mints.Exactly, st.Why)
		}
		if st.Mints.AtLeast != nil && m < *st.Mints.AtLeast {
			t.Errorf("step %d: endpoint %d saw %d mint requests, want at least %d %s", i, st.Mints.Endpoint, m, *st.Mints.AtLeast, st.Why)
		}
	case st.Await != nil:
		a := st.Await
		ok := p.proxy(a.Endpoint).await(time.Duration(a.WithinMS)*time.Millisecond, func(mints, probes, _ int) bool {
			return mints >= a.Mints && probes >= a.Probes
		})
		if !ok {
			m, pr, _ := p.proxy(a.Endpoint).counts()
			t.Errorf("step %d: endpoint %d saw %d mint requests and %d probes within %d ms, want %d and %d %s", i, a.Endpoint, m, pr, a.WithinMS, a.Mints, a.Probes, st.Why)
		}
	case st.Stop != nil:
		p.proxy(st.Stop.Endpoint).stop()
	case st.Start != nil:
		p.proxy(st.Start.Endpoint).start()
	case st.Repeat != nil:
		if st.Until == nil || st.Max < 1 {
			t.Fatalf("step %d: repeat needs until and max", i)
		}
		px := p.proxy(st.Until.Endpoint)
		for n := 0; ; n++ {
			if _, _, since := px.counts(); since >= st.Until.MintsSinceStart {
				break
			}
			if n == st.Max {
				t.Errorf("step %d: after %d repeats endpoint %d has seen fewer than %d mint requests since it started %s", i, n, st.Until.Endpoint, st.Until.MintsSinceStart, st.Why)
				break
			}
			p.client(i, *st.Repeat)
			if t.Failed() {
				return
			}
		}
	default:
		t.Fatalf("step %d has nothing to do", i)
	}
}

func orOK(s string) string {
	if s == "" {
		return "ok"
	}
	return s
}

// client sends a client step's request and checks its answer.
func (p *playback) client(i int, st step) {
	t := p.t
	a := p.r.call(st.Client, 2*time.Minute)
	if want := orOK(st.Expect); a.kind() != want {
		t.Errorf("step %d: %v: got %s, want %s", i, st.Client, describe(a), want)
		return
	}
	if a.Error != nil && a.Error.Message == "" {
		t.Errorf("step %d: %v: error %s with no message; a message says what went wrong", i, st.Client, a.Error.Kind)
	}
	if st.ExpectIDs != nil && len(a.IDs) != *st.ExpectIDs {
		t.Errorf("step %d: %v: %d IDs, want %d", i, st.Client, len(a.IDs), *st.ExpectIDs)
	}
	if st.WithinMS > 0 && a.ElapsedMS != nil && *a.ElapsedMS > float64(st.WithinMS) {
		t.Errorf("step %d: %v took %.0f ms, want within %d ms", i, st.Client, *a.ElapsedMS, st.WithinMS)
	}
	if len(a.IDs) > 0 {
		if p.seen == nil {
			p.seen = map[string]int{}
		}
		for _, id := range a.IDs {
			p.seen[id]++
		}
		if st.Increasing == "per_thread" {
			n, _ := st.Client["count"].(float64)
			for k := 0; int(n) > 0 && k < len(a.IDs); k += int(n) {
				if msg := increasing(a.IDs[k:min(k+int(n), len(a.IDs))]); msg != "" {
					t.Errorf("step %d: thread %d's IDs: %s", i, k/int(n), msg)
				}
			}
		} else {
			p.handed = append(p.handed, a.IDs)
		}
	}
	if st.CompareCLI {
		p.compareDecode(i, st, a)
	}
}

// compareDecode checks a decode answer against snowfence decode --json.
func (p *playback) compareDecode(i int, st step, a *answer) {
	t := p.t
	sched, _ := st.Client["schedule"].(string)
	id, _ := st.Client["id"].(string)
	out, err := exec.Command(p.srv.bin, "decode", "--json", "--schedule", sched, id).Output()
	if err != nil {
		t.Fatalf("step %d: snowfence decode --json --schedule %s %s: %v", i, sched, id, err)
	}
	var want map[string]any
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Decoded, want) {
		t.Errorf("step %d: decode %s with %s:\n got %v\nwant %v (snowfence decode --json)", i, id, sched, a.Decoded, want)
	}
}

// check makes the checks every scenario gets (PROTOCOL.md, "What the
// driver checks").
func (p *playback) check() {
	t := p.t
	for id, n := range p.seen {
		if n > 1 {
			t.Errorf("ID %s handed out %d times", id, n)
		}
	}
	// One snapshot of each proxy of the scenario.
	var (
		sound    = map[string]bool{}
		spoils   []spoiled
		arrivals []time.Time
	)
	for _, px := range p.proxies {
		if px == nil {
			continue
		}
		px.mu.Lock()
		for id := range px.sound {
			sound[id] = true
		}
		spoils = append(spoils, px.spoiled...)
		arrivals = append(arrivals, px.arrivals...)
		if len(px.badCounts) > 0 {
			t.Errorf("mint requests for a count outside 1..1000: %q", px.badCounts)
		}
		px.mu.Unlock()
	}
	// exact: every ID came from a sound answer through a proxy of the
	// scenario (not checked where an endpoint is reached directly).
	for id := range p.seen {
		if !p.direct && !sound[id] {
			t.Errorf("ID %s was handed out but no proxy passed it in a sound answer (invented, corrupted, or from a spoiled answer)", id)
		}
	}
	for _, sp := range spoils {
		for _, id := range sp.ids {
			if p.seen[id] > 0 {
				t.Errorf("ID %s came from an answer the proxy spoiled, and was handed out", id)
			}
		}
		// retry_after: the first mint request after an answer with a
		// Retry-After comes no sooner than it says.
		if sp.retryAfter == 0 {
			continue
		}
		var next time.Time
		for _, a := range arrivals {
			if a.After(sp.written) && (next.IsZero() || a.Before(next)) {
				next = a
			}
		}
		if !next.IsZero() && next.Sub(sp.written) < sp.retryAfter {
			t.Errorf("a mint request came %v after an answer with Retry-After %v", next.Sub(sp.written).Round(time.Millisecond), sp.retryAfter)
		}
	}
	switch p.sc.Increasing {
	case "", "all":
		var all []string
		for _, h := range p.handed {
			all = append(all, h...)
		}
		if msg := increasing(all); msg != "" {
			t.Errorf("the scenario's IDs: %s", msg)
		}
	case "per_step":
		for k, h := range p.handed {
			if msg := increasing(h); msg != "" {
				t.Errorf("step answer %d's IDs: %s", k, msg)
			}
		}
	default:
		t.Errorf("increasing %q", p.sc.Increasing)
	}
}

// increasing says where ids fail to strictly increase ("" if they do).
func increasing(ids []string) string {
	var prev uint64
	for k, s := range ids {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v == 0 || v > 1<<63-1 || strconv.FormatUint(v, 10) != s {
			return fmt.Sprintf("ID %d, %q, is not a canonical decimal ID", k, s)
		}
		if k > 0 && v <= prev {
			return fmt.Sprintf("ID %d, %s, is not greater than the one before, %d", k, s, prev)
		}
		prev = v
	}
	return ""
}

func describe(a *answer) string {
	if a.OK {
		return fmt.Sprintf("ok (%d IDs)", len(a.IDs))
	}
	if a.Error == nil {
		return "an answer with neither ok nor error"
	}
	return fmt.Sprintf("%s: %s", a.Error.Kind, a.Error.Message)
}
