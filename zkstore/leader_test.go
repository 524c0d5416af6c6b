package zkstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/zkstore"
)

// Short timings for keepers on real time: a 3 s lease, renewed every
// 500 ms, self-fenced 2 s after the last acknowledged renewal's send
// (2 s × 1.08 < 3 s × 0.92). The stores carry a test bound of the same
// self-fence, so a claim's first grant waits seconds, not minutes.
const (
	shortLeaseFor   = 3 * time.Second
	shortRenewEvery = 500 * time.Millisecond
	shortSelfFence  = 2 * time.Second
)

// minter is a keeper and a generator on the system clock, minting a batch
// every tick in the background and recording what happened.
type minter struct {
	name string
	k    *lease.Keeper
	g    *snowfence.Generator
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu       sync.Mutex
	ids      []snowfence.ID
	lastOK   time.Time
	reasons  map[string]int // refusals (snowfence.FencedError) once it issued, by reason
	other    error          // the last error that is no refusal
	disorder int            // batches not above the previous one
}

// startMinter starts a keeper on a store of its own on path, and a
// generator minting 5 IDs every 2 ms on it.
func startMinter(t *testing.T, e *zktest.Ensemble, path, name string) *minter {
	t.Helper()
	s, err := zkstore.New(dial(t, e), zkstore.Config{Path: path, TestBound: testbound.Of(shortSelfFence)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	clk := snowfence.SystemClock()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	k, err := leasetest.StartKeeper(ctx, lease.KeeperConfig{Store: s, Holder: name, Range: &lease.Range{Lo: 0, Hi: 7}, Clock: clk,
		LeaseFor: shortLeaseFor, RenewEvery: shortRenewEvery, SelfFence: shortSelfFence})
	cancel()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	g, err := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		k.Close(context.Background(), lease.UnknownIssued)
		t.Fatal(err)
	}
	m := &minter{name: name, k: k, g: g, stop: make(chan struct{}), done: make(chan struct{}), reasons: map[string]int{}}
	go m.run()
	t.Cleanup(func() {
		m.halt()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		k.Close(ctx, leasetest.Released(g))
	})
	return m
}

// run mints until halt, for at most two minutes.
func (m *minter) run() {
	defer close(m.done)
	tk := time.NewTicker(2 * time.Millisecond) // pacing, not synchronisation
	defer tk.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		select {
		case <-m.stop:
			return
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		ids, err := m.g.NextN(ctx, 5)
		m.mu.Lock()
		var fe *snowfence.FencedError
		switch {
		case errors.As(err, &fe) && fe.Reason == "not-started" && len(m.ids) == 0:
		case errors.As(err, &fe):
			m.reasons[fe.Reason]++
		case err != nil:
			m.other = err
		default:
			if len(m.ids) > 0 && ids[0] <= m.ids[len(m.ids)-1] {
				m.disorder++
			}
			m.ids = append(m.ids, ids...)
			m.lastOK = time.Now()
		}
		m.mu.Unlock()
	}
}

func (m *minter) halt() {
	m.once.Do(func() { close(m.stop) })
	<-m.done
}

func (m *minter) issued() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ids)
}

func (m *minter) lastOKAt() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastOK
}

// pollUntil calls cond every 10 ms until it returns true or d passes, and
// reports whether it came true.
func pollUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond) // poll: real time, elections
	}
}

// TestKeepersRideOutLeaderKill kills (SIGKILL) the leader of a
// three-server ensemble while four keepers renew and mint on the system
// clock, each through a session of its own. The two servers left elect
// another leader, the sessions move to them, and every keeper renews
// again; the killed server rejoins. No ID is issued twice, and each
// holder's IDs increase.
func TestKeepersRideOutLeaderKill(t *testing.T) {
	rideOutLeaderLoss(t, "killed", func(e *zktest.Ensemble, i int) { e.Kill(i) }, func(e *zktest.Ensemble, i int) { e.StartServer(i) })
}

// TestKeepersRideOutLeaderFreeze freezes (SIGSTOP) the leader instead, as
// a server in a long pause: it holds its connections and answers nothing,
// so the sessions on it must time out before they move, and the others
// elect a leader without it; thawed, it rejoins as a follower. A session
// that tries the frozen server stalls in go-zookeeper's handshake for ten
// receive timeouts (about 27 s here), longer than these keepers'
// self-fence: they refuse meanwhile, keep their numbers, and issue again.
func TestKeepersRideOutLeaderFreeze(t *testing.T) {
	rideOutLeaderLoss(t, "frozen", func(e *zktest.Ensemble, i int) { e.Freeze(i) }, func(e *zktest.Ensemble, i int) {
		e.Thaw(i)
		e.WaitServing()
	})
}

// rideOutLeaderLoss plays a leader's loss (lose) and return (back) under
// four minting keepers, and checks that every keeper renews again after
// each and that no ID is issued twice.
func rideOutLeaderLoss(t *testing.T, what string, lose, back func(e *zktest.Ensemble, i int)) {
	e := zktest.Start(t, 3)
	path := newPath(t)
	ms := make([]*minter, 4)
	tokens := make([]uint64, len(ms))
	for i := range ms {
		ms[i] = startMinter(t, e, path, fmt.Sprintf("h%d", i))
		tokens[i] = ms[i].k.Status().Token
	}
	// A claim's first grant waits out the store's (test-bound) notice window.
	wait := lease.NoticeWindow(shortSelfFence) + 30*time.Second
	if !pollUntil(wait, func() bool {
		for _, m := range ms {
			if m.issued() == 0 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("not every holder issued within %v of its start", wait)
	}
	awaitRenewals := func(when string, since time.Time) {
		t.Helper()
		if !pollUntil(zktest.ReadyTimeout, func() bool {
			for _, m := range ms {
				if m.k.Status().LastRenewal.Before(since) {
					return false
				}
			}
			return true
		}) {
			for _, m := range ms {
				t.Logf("%s: %+v", m.name, m.k.Status())
			}
			t.Fatalf("%s: not every keeper renewed within %v", when, zktest.ReadyTimeout)
		}
	}
	awaitRenewals("before the leader is lost", time.Now())

	leader := e.Leader()
	lost := time.Now()
	lose(e, leader)
	next := e.Leader()
	elected := time.Since(lost)
	awaitRenewals("under the new leader", time.Now())
	t.Logf("%s leader %d; server %d leads %v later; every keeper renewed %v after the loss",
		what, leader, next, elected.Round(time.Millisecond), time.Since(lost).Round(time.Millisecond))

	back(e, leader)
	returned := time.Now()
	awaitRenewals("after the old leader rejoined", returned)
	if !pollUntil(30*time.Second, func() bool {
		for _, m := range ms {
			if !m.lastOKAt().After(returned) {
				return false
			}
		}
		return true
	}) {
		t.Fatal("not every holder issued after the old leader rejoined")
	}
	for _, m := range ms {
		m.halt()
	}

	seen := map[snowfence.ID]string{}
	total := 0
	for i, m := range ms {
		st := m.k.Status()
		m.mu.Lock()
		ids, reasons, disorder, other := m.ids, m.reasons, m.disorder, m.other
		m.mu.Unlock()
		t.Logf("%s: machine %d token %d (first %d), %d claims, %d losses, %d IDs, refusals %v",
			m.name, st.Machine, st.Token, tokens[i], st.Claims, st.Losses, len(ids), reasons)
		if disorder != 0 || other != nil {
			t.Errorf("%s: %d batches out of order; other error: %v", m.name, disorder, other)
		}
		for _, id := range ids {
			if who, dup := seen[id]; dup {
				t.Fatalf("ID %d issued twice: by %s and %s", id, who, m.name)
			}
			seen[id] = m.name
		}
		total += len(ids)
	}
	t.Logf("%d IDs, all distinct", total)
}
