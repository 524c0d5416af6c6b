package k8stest_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
)

// TestStopKillFreeze: the API server stopped, killed or frozen answers
// nothing; started or thawed again it serves the same data on the same
// port to the clients made before.
func TestStopKillFreeze(t *testing.T) {
	t.Parallel()
	s := k8stest.Start(t)
	cs := s.Clientset(t)
	ns := s.Namespace(t)
	made := newLease(t, cs, ns, "m1", record("c1", 0))

	s.Freeze(t)
	if err := quickGet(t, cs, ns); err == nil {
		t.Errorf("get from a frozen API server succeeded")
	}
	s.Thaw(t)
	if _, err := cs.CoordinationV1().Leases(ns).List(ctx(t), metav1.ListOptions{}); err != nil {
		t.Errorf("list after Thaw: %v", err)
	}

	for _, tc := range []struct {
		name string
		down func(testing.TB)
	}{
		{"stop", s.StopAPIServer},
		{"kill", s.KillAPIServer},
	} {
		pid := s.PID()
		tc.down(t)
		if s.PID() != 0 {
			t.Errorf("%s: PID() = %d, want 0", tc.name, s.PID())
		}
		if err := quickGet(t, cs, ns); err == nil {
			t.Errorf("%s: get from a stopped API server succeeded", tc.name)
		}
		began := time.Now()
		s.StartAPIServer(t)
		t.Logf("%s: StartAPIServer took %v", tc.name, time.Since(began).Round(time.Millisecond))
		if p := s.PID(); p == 0 || p == pid {
			t.Errorf("%s: PID() = %d after a restart of %d", tc.name, p, pid)
		}
		if got := getLease(t, cs, ns, "m1"); got.UID != made.UID || got.ResourceVersion != made.ResourceVersion {
			t.Errorf("%s: after the restart the lease is uid %s at %s, want uid %s at %s", tc.name, got.UID, got.ResourceVersion, made.UID, made.ResourceVersion)
		}
	}
}

// quickGet lists leases in ns with a 1 s bound: long enough for a
// running API server, shorter than a test should wait on one that is not.
func quickGet(t *testing.T, cs kubernetes.Interface, ns string) error {
	c, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := cs.CoordinationV1().Leases(ns).List(c, metav1.ListOptions{})
	return err
}

// TestSharedRefusesDisruption: the methods that disturb the API server
// fail a test on the Shared one.
func TestSharedRefusesDisruption(t *testing.T) {
	t.Parallel()
	s := k8stest.Shared(t)
	for name, f := range map[string]func(testing.TB){
		"StopAPIServer": s.StopAPIServer, "KillAPIServer": s.KillAPIServer, "StartAPIServer": s.StartAPIServer,
		"Freeze": s.Freeze, "Thaw": s.Thaw, "CopyData": func(tb testing.TB) { s.CopyData(tb) },
	} {
		ok := runAside(t, f)
		if ok {
			t.Errorf("%s on the Shared server did not fail the test", name)
		}
	}
	if s.PID() == 0 {
		t.Errorf("the Shared server is not running")
	}
}

// runAside runs f with a testing.TB of its own whose failure does not
// fail t, and reports whether f finished without failing it.
func runAside(t *testing.T, f func(testing.TB)) bool {
	tb := &asideTB{TB: t, done: make(chan struct{})}
	go func() {
		defer close(tb.done)
		f(tb)
	}()
	<-tb.done
	return !tb.failed
}

// asideTB is a testing.TB whose Fatal ends only the goroutine that calls
// it and is recorded, not reported.
type asideTB struct {
	testing.TB
	done   chan struct{}
	failed bool
}

func (a *asideTB) Helper()                           {}
func (a *asideTB) Fatal(args ...any)                 { a.failed = true; runtime.Goexit() }
func (a *asideTB) Fatalf(format string, args ...any) { a.failed = true; runtime.Goexit() }

// TestBinaryMissing: without a kube-apiserver, Start skips the test
// (outside CI).
func TestBinaryMissing(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv(k8stest.BinaryEnv, "/nonexistent/kube-apiserver")
	ok := t.Run("skip", func(t *testing.T) {
		k8stest.Start(t)
		t.Error("Start returned without a kube-apiserver")
	})
	if !ok {
		t.Error("a missing kube-apiserver without CI=true failed the test, want a skip")
	}
}
