package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/server"
)

// The entry points a process starts its holders through (procConfig.Entry):
//
//   - entryKeeper: lease.StartKeeper, then snowfence.New on the keeper, as
//     a program embedding the library does;
//   - entryNode: node.Start with Config.Store set to the process's store
//     object, as a program embedding a node does. Start then opens
//     nothing and applies no store timings (those apply only to a store
//     it opens, with TimingsChosen false), so the keeper gets the
//     process's timings as given, the same KeeperConfig as entryKeeper;
//     the generator's clock (the minting clock, mintClock) becomes the
//     keeper's through node.Start (a keeper without a clock takes the
//     generator's), which the keeper only sleeps on;
//     Start's own wait for the first grant on it is true time for the
//     whole world (startWait);
//   - entryService: node.Start, with package server's handler in front on
//     an httptest server on loopback; the holder's batches are POSTs to
//     /v1/ids (?count=N for a batch), as snowfence serve answers them.

// startEntry starts one holder of p through p's entry point: the keeper
// (and, for node.Start, the node whose Generator is built too). waiting
// counts node.Start's waits for the first grant blocked on p's clock
// (startWait).
func (w *world) startEntry(ctx context.Context, p *proc, kc lease.KeeperConfig, sched snowfence.Schedule, waiting *startCount) (*lease.Keeper, *node.Node, error) {
	if p.cfg.entry() == entryKeeper {
		k, err := leasetest.StartKeeper(ctx, kc)
		return k, nil, err
	}
	gc := w.generatorConfig(p, nil, sched)
	sw := &startWait{waiting: waiting}
	gc.Clock = mintClock{Clock: p.clk.Clock, start: sw}
	// The keeper takes the generator's clock (node.Start gives a keeper
	// without one the generator's): its own, when set, would win, and
	// node.Start's wait for the first grant would not be startWait's.
	kc.Clock = nil
	n, err := node.Start(ctx, node.Config{Store: kc.Store, Keeper: kc, Generator: gc})
	sw.over.Store(true)
	if err != nil {
		return nil, nil, err
	}
	return n.Keeper, n, nil
}

// idService is package server's handler over a node's generator, served
// by an httptest server on loopback.
type idService struct {
	srv *httptest.Server
}

// startIDService puts the service in front of n. Its metrics go to a
// registry of its own (no process-wide collectors per holder).
func startIDService(n *node.Node, sched snowfence.Schedule, clk *procClock) (*idService, error) {
	s, err := server.New(server.Config{Generator: n.Generator, Lease: n.Keeper, Schedule: sched, Clock: clk.Clock, Registerer: prometheus.NewRegistry()})
	if err != nil {
		return nil, err
	}
	return &idService{srv: httptest.NewServer(s.Handler())}, nil
}

func (s *idService) close() { s.srv.Close() }

// mint asks the service for one ID (POST /v1/ids) or a batch of n (POST
// /v1/ids?count=n). A refusal is an error carrying the service's code and
// message (the generator's error text, which classify reads).
func (s *idService) mint(ctx context.Context, n int, single bool) ([]snowfence.ID, error) {
	url := s.srv.URL + "/v1/ids"
	if !single {
		url += "?count=" + strconv.Itoa(n)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("explore: POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("explore: the service answered %d: %s", resp.StatusCode, body)
	}
	var out struct {
		ID  string   `json:"id"`
		IDs []string `json:"ids"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("explore: the service's answer %q: %w", body, err)
	}
	if single {
		out.IDs = []string{out.ID}
	}
	ids := make([]snowfence.ID, len(out.IDs))
	for i, t := range out.IDs {
		v, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("explore: the service's ID %q: %w", t, err)
		}
		ids[i] = snowfence.ID(v)
	}
	return ids, nil
}

// extraGen is a generator built on a keeper that feeds one already, and
// the last ID it minted.
type extraGen struct {
	g    *snowfence.Generator
	last snowfence.ID
}

// anotherGenerator builds one more generator on a running holder's keeper
// with snowfence.New — on the keeper StartKeeper returned, or on
// node.Node.Keeper — as a program wanting two generators might. A keeper
// feeds one generator: New must refuse with snowfence.ErrLeaseBound, the
// outcome wanted. If it accepts (a revert, snowfence_revert_bind), the
// holder mints at once on both, and on the new one whenever it mints from
// then on.
func (w *world) anotherGenerator() {
	h := w.runningHolder()
	if h == nil {
		return
	}
	sched, err := w.schedule(h.p.cfg.Schedule)
	if err != nil {
		return
	}
	on := "the keeper StartKeeper returned"
	if h.node != nil {
		on = "node.Node.Keeper"
	}
	g, err := snowfence.New(w.generatorConfig(h.p, h.k, sched))
	if err != nil {
		why := classify(err)
		if errors.Is(err, snowfence.ErrLeaseBound) {
			w.fig.add("refused: another generator on a keeper (lease bound)", 1)
		} else {
			w.fig.add("another generator on a keeper failed: "+why, 1)
		}
		w.log.add(w.step, "holder %d: snowfence.New on %s refused: %s", h.idx, on, short(err))
		return
	}
	h.extras = append(h.extras, &extraGen{g: g})
	w.fig.add("another generator on a keeper accepted", 1)
	w.log.add(w.step, "holder %d: snowfence.New on %s accepted a generator %d; both mint", h.idx, on, len(h.extras))
	w.catchUp(h.p)
	w.mint(h, 1000, false)
	w.settle(h.p)
}

// describeDuplicate is the finding of a duplicate: the ID, both minters
// (process, store, region, entry point, layout) and which kind of path
// it looks like.
func (w *world) describeDuplicate(id snowfence.ID, by, prev minted) string {
	return fmt.Sprintf("ID %d (%s) minted by %s at step %d was minted before by %s at step %d [%s]",
		id, decode(id), w.minter(id, by), by.step, w.minter(id, prev), prev.step, w.duplicateKind(id, by, prev))
}

// minter describes who minted id.
func (w *world) minter(id snowfence.ID, m minted) string {
	p := w.procOf(m)
	if p == nil {
		return fmt.Sprintf("clone %d (closed)", m.holder)
	}
	who := fmt.Sprintf("holder %d", m.holder)
	gen := fmt.Sprintf("generator %d", m.gen)
	if c := w.cloneOf(m); c != nil {
		who, gen = fmt.Sprintf("clone %d", m.holder), fmt.Sprintf("a copy of holder %d generator %d", c.of.idx, c.ofGen)
	}
	if m.extra > 0 {
		gen += fmt.Sprintf(", extra generator %d on its keeper", m.extra)
	}
	if m.window != 0 && !m.clone {
		gen += fmt.Sprintf(", in clone %d's window", m.window)
	}
	return fmt.Sprintf("%s (%s; process %d, %s, region %d on store %s, schedule %q, layout %s)",
		who, gen, p.idx, p.cfg.entry(), p.cfg.Region, storeName(p.cfg.Store), w.scheduleText(p.cfg.Schedule), w.layoutOf(id, m))
}

// procOf is the process whose holder minted m: a clone's is its
// original's (nil for a clone closed since).
func (w *world) procOf(m minted) *proc {
	if m.clone {
		if c := w.cloneOf(m); c != nil {
			return c.of.p
		}
		return nil
	}
	return w.all[m.holder].p
}

// layoutOf is the name of the layout id was minted under by m ("?" if it
// does not decode).
func (w *world) layoutOf(id snowfence.ID, m minted) string {
	l, ok := w.layoutAt(id, m)
	if !ok {
		return "?"
	}
	return l.Name
}

// layoutAt is the layout id was minted under by m: the one m's schedule
// has in force at the ID's timestamp.
func (w *world) layoutAt(id snowfence.ID, m minted) (snowfence.Layout, bool) {
	p := w.procOf(m)
	if p == nil {
		return snowfence.Layout{}, false
	}
	sched, err := w.schedule(p.cfg.Schedule)
	if err != nil {
		return snowfence.Layout{}, false
	}
	d, err := sched.Decode(id)
	if err != nil {
		return snowfence.Layout{}, false
	}
	return sched.LayoutAt(d.CreatedAt), true
}

// regionBits reports whether the layout m minted id under has region bits.
func (w *world) regionBits(id snowfence.ID, m minted) bool {
	l, ok := w.layoutAt(id, m)
	return ok && l.RegionBits > 0
}

// duplicateKind names the path a duplicate looks like: two generators on
// one keeper; two layouts giving the same bits (holders on schedules that
// differ); one region's numbers leased in two stores; two regions under a
// layout without region bits; or another.
func (w *world) duplicateKind(id snowfence.ID, a, b minted) string {
	pa, pb := w.procOf(a), w.procOf(b)
	if pa == nil || pb == nil {
		return "a closed clone's"
	}
	switch la, lb := w.layoutOf(id, a), w.layoutOf(id, b); {
	case a.clone || b.clone:
		return "a cloned holder process and another, after the clone's window"
	case a.holder == b.holder && a.gen == b.gen && a.extra != b.extra:
		return "two generators on one keeper"
	case la != lb:
		return fmt.Sprintf("a %s ID and a %s ID with the same bits: holders on different schedules", la, lb)
	case pa.cfg.Store != pb.cfg.Store && pa.cfg.Region == pb.cfg.Region:
		return fmt.Sprintf("region %d leased in two stores (%s and %s)", pa.cfg.Region, storeName(pa.cfg.Store), storeName(pb.cfg.Store))
	case pa.cfg.Region != pb.cfg.Region && !w.regionBits(id, a):
		return fmt.Sprintf("regions %d and %d under %s, which has no region bits", pa.cfg.Region, pb.cfg.Region, la)
	}
	return "other"
}
