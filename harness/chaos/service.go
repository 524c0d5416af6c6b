package chaos

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/netns"
	"github.com/snowfence/snowfence/lease"
)

// service is one `snowfence serve` process the callers reach over HTTP:
// the real binary with --test-clock-offset, on loopback, leasing from the
// suite's etcd.
type service struct {
	env  *Env
	idx  int // the oracle's source number
	name string
	cfg  serviceConfig

	mu      sync.Mutex
	p       *proc
	proxy   *netns.Proxy // scenario 8: callers reach a namespaced service through it
	starts  int
	base    atomic.Pointer[string] // "http://host:port" while serving, nil otherwise
	machine atomic.Int64

	ok, refused, errors atomic.Int64
	lastErr             atomic.Value // string: the last attempt's failure
	waitRestarts        atomic.Int64 // supervised restarts while its range was full

	streakMu    sync.Mutex
	streakStart time.Time     // first failed attempt since the last success
	streakMax   time.Duration // longest run of failed attempts, ended by a success
}

// serviceConfig is what a service is started with.
type serviceConfig struct {
	machines                        string
	leaseTTL, renewEvery, selfFence time.Duration
	margin                          time.Duration // --fence-margin, given with leaseTTL
	storeAddrs                      []string      // host:port of the store; default Env.storeTargets
	ns                              *netns.NS     // run inside this network namespace
	listen                          string        // serve's --listen; default 127.0.0.1:0 (in ns: reached through a proxy)
	supervise                       bool          // restart it when it exits by itself
	args                            []string      // more serve flags (scenario 11: --schedule, --region)
}

// timed returns c with the timings t (every one given to serve).
func (c serviceConfig) timed(t lease.Timings) serviceConfig {
	c.leaseTTL, c.renewEvery, c.selfFence, c.margin = t.LeaseFor, t.RenewEvery, t.SelfFence, t.Margin
	return c
}

// addService registers and starts a service.
func (e *Env) addService(cfg serviceConfig) (*service, error) {
	if !e.serves() {
		return nil, fmt.Errorf("chaos: no service on %s: the suite starts no snowfence serve on it yet", e.opts.Store)
	}
	if e.opts.Snowfence == "" {
		return nil, errors.New("chaos: no snowfence binary (Options.Snowfence) for the services")
	}
	s := &service{env: e, idx: len(e.services), name: fmt.Sprintf("svc%d", len(e.services)), cfg: cfg}
	s.machine.Store(-1)
	e.services = append(e.services, s)
	return s, s.start()
}

// start launches the process; it serves once it has a machine number (see
// waitServing).
func (s *service) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	listen := s.cfg.listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	args := append([]string{"serve", "--listen", listen}, s.env.serveStoreArgs(s.cfg.storeAddrs)...)
	args = append(args, "--machines", s.cfg.machines, "--test-clock-offset", "--clock-policy", "off",
		"--log-format", "json", "--log-level", "warn", "--shutdown-timeout", "5s")
	args = append(args, timingFlags(s.cfg.leaseTTL, s.cfg.renewEvery, s.cfg.selfFence, s.cfg.margin)...)
	args = append(args, s.cfg.args...)
	var cmd *exec.Cmd
	if s.cfg.ns != nil {
		cmd = s.cfg.ns.Command(s.env.opts.Snowfence, args...)
	} else {
		cmd = exec.Command(s.env.opts.Snowfence, args...)
	}
	if env := s.env.storeEnv(); env != nil {
		cmd.Env = append(cmd.Environ(), env...)
	}
	s.starts++
	name := fmt.Sprintf("%s#%d", s.name, s.starts)
	var p *proc
	p, err := startProc(name, cmd, func(r io.Reader) { s.readStdout(r, name) })
	if err != nil {
		return err
	}
	s.p = p
	go s.watch(p)
	return nil
}

// readStdout follows serve's start lines: the machine number and the
// address, in either order (a spare prints its address first, with a note
// after it that it is waiting for a free number, and its machine number
// once it holds one).
func (s *service) readStdout(r io.Reader, name string) {
	sc := bufio.NewScanner(r)
	publish := func(addr string) {
		if err := s.serving(addr); err != nil {
			s.env.logf("%s: %v", name, err)
		}
	}
	waiting := "" // the address of a spare that holds no number yet
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "machine "); ok {
			if n, err := strconv.Atoi(strings.Fields(rest)[0]); err == nil {
				s.machine.Store(int64(n))
			}
			if waiting != "" { // the spare holds a number now: it serves
				publish(waiting)
				waiting = ""
			}
		}
		if addr, ok := strings.CutPrefix(line, "listening on http://"); ok {
			addr, note, _ := strings.Cut(addr, " ")
			if note != "" { // "(waiting for a free machine number; …)"
				waiting = addr
				continue
			}
			publish(addr)
		}
	}
}

// serving publishes addr to the callers, through a proxy into the
// namespace if the service runs in one on its loopback.
func (s *service) serving(addr string) error {
	if ns := s.cfg.ns; ns != nil && s.cfg.listen == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		inside := addr
		px, err := netns.NewProxy(ln, func(ctx context.Context) (net.Conn, error) { return ns.DialContext(ctx, "tcp", inside) })
		if err != nil {
			ln.Close()
			return err
		}
		s.mu.Lock()
		s.proxy = px
		s.mu.Unlock()
		addr = px.Addr().String()
	}
	b := "http://" + addr
	s.base.Store(&b)
	return nil
}

// watch notices the process ending: callers stop sending to it, and a
// supervised service is started again (as systemd would).
func (s *service) watch(p *proc) {
	<-p.Done()
	s.mu.Lock()
	current := s.p == p
	if current {
		s.base.Store(nil)
		s.machine.Store(-1)
		s.closeProxy()
	}
	s.mu.Unlock()
	if current && s.cfg.supervise && !s.env.stopping.Load() {
		if why := lastLine(p.Tail()); strings.Contains(why, "no free machine number") {
			s.waitRestarts.Add(1) // its range is full: expected while it waits
		} else {
			s.env.logf("%s exited (%v); restarting: %s", p.Name(), p.Err(), why)
		}
		if pause(s.env.ctx, 200*time.Millisecond) != nil {
			return
		}
		if err := s.start(); err != nil {
			s.env.logf("%s: restart: %v", s.name, err)
		}
	}
}

// kill crashes the process (SIGKILL) and waits for it; supervised or not,
// it is not restarted by watch.
func (s *service) kill() {
	s.mu.Lock()
	p := s.p
	s.p = nil
	s.base.Store(nil)
	s.machine.Store(-1)
	s.closeProxy()
	s.mu.Unlock()
	if p != nil {
		s.env.kill(p)
	}
}

// proc returns the current process, if any.
func (s *service) proc() *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// stop stops the process gracefully.
func (s *service) stop() error {
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	err := p.Stop(15 * time.Second)
	s.mu.Lock()
	s.closeProxy()
	s.mu.Unlock()
	return err
}

// closeProxy closes the namespace proxy, if any; s.mu is held.
func (s *service) closeProxy() {
	if s.proxy != nil {
		s.proxy.Close()
		s.proxy = nil
	}
}

// waitServing waits until the service has a number and an address.
func (s *service) waitServing(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for s.base.Load() == nil {
		if p := s.proc(); p != nil && p.Exited() && !s.cfg.supervise {
			return fmt.Errorf("%s exited: %v; stderr: %s", p.Name(), p.Err(), lastLine(p.Tail()))
		}
		if err := pause(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("%s not serving after %v: %w", s.name, timeout, err)
		}
	}
	return nil
}

// mintResult is one POST /v1/ids answer.
type mintResult struct {
	ids    []int64
	status int    // 0: no answer
	code   string // the error code of a refusal
}

// mint asks the service for count IDs.
func (s *service) mint(ctx context.Context, count int, dst []int64) (mintResult, error) {
	b := s.base.Load()
	if b == nil {
		return mintResult{}, errNotServing
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, *b+"/v1/ids?count="+strconv.Itoa(count), nil)
	if err != nil {
		return mintResult{}, err
	}
	resp, err := s.env.http.Do(req)
	if err != nil {
		return mintResult{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return mintResult{status: resp.StatusCode}, err
	}
	if resp.StatusCode != http.StatusOK {
		return mintResult{status: resp.StatusCode, code: errorCode(body)}, nil
	}
	ids, err := parseIDs(body, dst)
	if err != nil {
		return mintResult{status: resp.StatusCode}, err
	}
	if len(ids) != count {
		return mintResult{status: resp.StatusCode}, fmt.Errorf("%s answered %d IDs for %d", s.name, len(ids), count)
	}
	return mintResult{ids: ids, status: resp.StatusCode}, nil
}

// get fetches path (for /healthz and /metrics).
func (s *service) get(ctx context.Context, path string) (int, []byte, error) {
	b := s.base.Load()
	if b == nil {
		return 0, nil, errNotServing
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *b+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.env.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// step steps the service's wall clock by d through its test endpoint.
func (s *service) step(ctx context.Context, d time.Duration) error {
	return s.setClock(ctx, fmt.Sprintf(`{"step_ms":%d}`, d.Milliseconds()))
}

// setClock posts body to the service's test clock endpoint.
func (s *service) setClock(ctx context.Context, body string) error {
	b := s.base.Load()
	if b == nil {
		return errNotServing
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, *b+"/test/clock-offset", strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := s.env.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: clock %s: %d %s", s.name, body, resp.StatusCode, msg)
	}
	return nil
}

// metric returns the value of a counter or gauge without labels from
// /metrics.
func (s *service) metric(ctx context.Context, name string) (float64, error) {
	status, body, err := s.get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("%s: /metrics: %d", s.name, status)
	}
	for line := range bytes.Lines(body) {
		if v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte(name+" ")); ok {
			return strconv.ParseFloat(string(v), 64)
		}
	}
	return 0, fmt.Errorf("%s: /metrics has no %s", s.name, name)
}

var errNotServing = fmt.Errorf("not serving")

// parseIDs reads {"ids":["…",…]} into dst.
func parseIDs(b []byte, dst []int64) ([]int64, error) {
	i := bytes.IndexByte(b, '[')
	if i < 0 || !bytes.HasPrefix(b, []byte(`{"ids":[`)) {
		return nil, fmt.Errorf("not an ID batch: %.80s", b)
	}
	dst = dst[:0]
	for i++; i < len(b); {
		if b[i] == ']' {
			return dst, nil
		}
		if b[i] != '"' {
			return nil, fmt.Errorf("bad ID batch at byte %d: %.80s", i, b)
		}
		i++
		var v int64
		j := i
		for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
			v = v*10 + int64(b[j]-'0')
		}
		if j == i || j-i > 19 || j >= len(b) || b[j] != '"' {
			return nil, fmt.Errorf("bad ID at byte %d: %.80s", i, b)
		}
		dst = append(dst, v)
		i = j + 1
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
	return nil, fmt.Errorf("truncated ID batch")
}

// errorCode pulls "code" out of an error body.
func errorCode(b []byte) string {
	_, rest, ok := bytes.Cut(b, []byte(`"code":"`))
	if !ok {
		return ""
	}
	code, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(code)
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// pause waits d or until ctx ends. The harness drives real processes on
// real time: this is pacing and polling, never synchronisation between the
// harness's own goroutines.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// paced waits for the next of a caller's requests, every apart from the
// last one's slot next, and returns the slot it waited for. A caller far
// behind (more than a second) starts again from now rather than burst to
// catch up. It returns ctx's error if ctx ends first.
func paced(ctx context.Context, next time.Time, every time.Duration) (time.Time, error) {
	next = next.Add(every)
	if now := time.Now(); next.After(now) {
		if err := pause(ctx, next.Sub(now)); err != nil {
			return next, err
		}
	} else if now.Sub(next) > time.Second {
		next = now // far behind: no burst to catch up
	}
	return next, nil
}

// answered notes an attempt's outcome for the longest outage the callers
// saw: the time from the first refused or failed attempt after a success
// to the next success.
func (s *service) answered(ok bool, at time.Time) {
	s.streakMu.Lock()
	defer s.streakMu.Unlock()
	switch {
	case ok && !s.streakStart.IsZero():
		s.streakMax = max(s.streakMax, at.Sub(s.streakStart))
		s.streakStart = time.Time{}
	case !ok && s.streakStart.IsZero():
		s.streakStart = at
	}
}

// longestOutage is the longest run of failed attempts that ended.
func (s *service) longestOutage() time.Duration {
	s.streakMu.Lock()
	defer s.streakMu.Unlock()
	return s.streakMax
}

// timingFlags are the lease-timing flags serve and HolderMain share, for
// the timings that are set. A scenario that sets the lease's length sets
// the margin below the mark too (margin, 0 for none): the tables' 5 s
// margin would not fit under a lease of a few seconds.
func timingFlags(leaseTTL, renewEvery, selfFence, margin time.Duration) []string {
	var args []string
	if leaseTTL > 0 {
		args = append(args, "--fence-margin", margin.String())
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--lease-ttl", leaseTTL}, {"--renew-every", renewEvery}, {"--self-fence", selfFence}} {
		if d.v > 0 {
			args = append(args, d.flag, d.v.String())
		}
	}
	return args
}
