package k8stest

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// shared is the Shared server of the test binary, and whether Main runs
// its tests (and so will stop it).
var shared struct {
	mu   sync.Mutex // held across a start: the tests that ask meanwhile wait for it
	main bool
	s    *Server
	err  error
	dir  string
}

// Main runs the package's tests and then stops the Shared server, if a
// test started one, removes its data and exits with the tests' status.
// A package whose tests use Shared calls it from TestMain:
//
//	func TestMain(m *testing.M) { k8stest.Main(m) }
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.s != nil {
		shared.s.close()
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// Shared returns the test binary's shared Server, starting it for the
// first test that asks: one API server for every test of the package, each
// test in a Namespace of its own, which spares each test the API server's
// start (seconds of CPU). Tests that stop, kill, freeze or restore the API
// server Start one of their own; those methods fail the test on the shared
// one. Shared needs TestMain to call Main, which stops the server after
// the last test. A test calling Shared when the server failed to start
// fails with the first failure's error.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary(tb)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		tb.Fatal("k8stest.Shared: TestMain must call k8stest.Main(m), which stops the shared server after the tests")
	}
	if shared.s != nil {
		return shared.s
	}
	if shared.err != nil {
		tb.Fatalf("k8stest.Shared: the shared server did not start: %v", shared.err)
	}
	dir, err := os.MkdirTemp("", "k8stest-shared-")
	if err != nil {
		tb.Fatalf("k8stest.Shared: %v", err)
	}
	shared.dir = dir
	s, err := start(tb, bin, dir)
	if err != nil {
		shared.err = fmt.Errorf("%w (its data: %s)", err, dir)
		tb.Fatalf("k8stest.Shared: %v", shared.err)
	}
	s.shared = true
	shared.s = s
	return s
}
