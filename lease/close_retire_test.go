package lease_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// releaseGate is a store whose Release calls, once armed, wait for open.
type releaseGate struct {
	lease.Store
	armed   chan struct{} // closed by the test to arm the gate
	reached chan struct{} // closed when an armed Release arrives
	open    chan struct{} // closed by the test to let it through
}

func (r *releaseGate) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	select {
	case <-r.armed:
		close(r.reached)
		<-r.open
	default:
	}
	return r.Store.Release(ctx, l, markMs)
}

// Close racing retire: a hold's first shut takes its lease for release, and
// a second must not (it once set it to nil, a reviewer found). With a
// schedule of three steps
// the run loop retires step 0's number (its Release held up here) and then,
// in the same round, step 1's; Close, run meanwhile, shuts every hold —
// taking step 1's lease — and waits for the loop, whose retire of step 1
// then finds it shut. The scenario runs in a child process, since the panic
// it once caused killed the process.
func TestCloseRacingRetire(t *testing.T) {
	if os.Getenv("SNOWFENCE_CLOSE_RETIRE_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCloseRacingRetire$", "-test.v")
		cmd.Env = append(os.Environ(), "SNOWFENCE_CLOSE_RETIRE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "panic") {
			t.Fatalf("Close racing the retire of a layout step's number: %v\n%s", err, out)
		}
		return
	}
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	T1, T2 := t0.Add(20*time.Minute), t0.Add(time.Hour)
	sched := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T1, Layout: snowfence.V2()},
		snowfence.Step{From: T2, Layout: snowfence.V1()})
	if _, err := s.SetFleetSchedule(testCtx(t), 0, sched.String()); err != nil {
		t.Fatal(err)
	}
	gate := &releaseGate{Store: s, armed: make(chan struct{}), reached: make(chan struct{}), open: make(chan struct{})}
	clk := fakeclock.New(t0)
	k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: gate, Holder: "a", Range: &lease.Range{Lo: 0, Hi: 0},
		Schedule: sched, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// Into step 1's lead window: its number is claimed beside step 0's.
	for clk.Time().Before(T1.Add(-5 * time.Minute)) {
		if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	for {
		if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		if st := k.Status(); st.Next != nil && st.Next.State == lease.StateHeld {
			break
		}
		clk.Advance(2 * time.Second)
	}
	// Past both cutovers at once: the next round retires steps 0 and 1.
	close(gate.armed)
	clk.Advance(T2.Sub(clk.Time()) + time.Second)
	<-gate.reached
	closed := make(chan error)
	go func() { closed <- k.Close(context.Background(), lease.UnknownIssued) }() // no generator
	for k.Status().State != lease.StateClosed {                                  // step 2's hold, shut last
		runtime.Gosched()
	}
	close(gate.open)
	if err := <-closed; err != nil {
		t.Logf("Close: %v", err)
	}
}
