package k8stest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/spawn"
)

// stopGrace bounds a clean stop of the API server (SIGTERM) before it is
// killed.
const stopGrace = 30 * time.Second

// args are the API server's flags: loopback only, the kit's PKI, RBAC and
// no anonymous requests, as a cluster a lease holder meets, and no
// controller of its own endpoints (it would write the kubernetes Service's
// endpoints on a timer).
func (s *Server) args() []string {
	return []string{
		"--etcd-servers=" + s.etcd.endpoint(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(s.port),
		"--cert-dir=" + filepath.Join(s.dir, "certs"),
		"--tls-cert-file=" + s.pki.certFile,
		"--tls-private-key-file=" + s.pki.keyFile,
		"--client-ca-file=" + s.pki.caFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + s.pki.saPub,
		"--service-account-signing-key-file=" + s.pki.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--anonymous-auth=false",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
}

// launch starts the API server process; waitReady waits for it.
func (s *Server) launch() error {
	p, err := spawn.Start(exec.Command(s.bin, s.args()...),
		spawn.Config{Name: "kube-apiserver", TailBytes: 32 << 10, Output: s.log})
	if err != nil {
		return fmt.Errorf("k8stest: %w", err)
	}
	s.proc = p
	return nil
}

// waitReady polls /readyz as the admin until the API server answers 200,
// exits, or ReadyTimeout passes. An API server that exits because its port
// was taken reports an error that wraps syscall.EADDRINUSE.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(ReadyTimeout)
	for {
		status, err := s.readyz()
		if err == nil && status == http.StatusOK {
			return nil
		}
		if s.proc.Exited() {
			tail := s.proc.Tail()
			if strings.Contains(tail, "address already in use") {
				return fmt.Errorf("k8stest: kube-apiserver exited: %w: %s", syscall.EADDRINUSE, tail)
			}
			return fmt.Errorf("k8stest: kube-apiserver exited (%v); log %s: %s", s.proc.Err(), s.log.Name(), tail)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("k8stest: kube-apiserver not ready after %v (status %d, %v); log %s: %s",
				ReadyTimeout, status, err, s.log.Name(), s.proc.Tail())
		}
		time.Sleep(100 * time.Millisecond) // poll: the API server says it is ready only when asked
	}
}

// readyz asks /readyz once, bounded by 5 s.
func (s *Server) readyz() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Host()+"/readyz", nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// mustOwn fails tb unless s is a Server of its own: what op does would
// disturb every other test of a Shared one.
func (s *Server) mustOwn(tb testing.TB, op string) {
	tb.Helper()
	if s.shared {
		tb.Fatalf("k8stest: %s on the Shared server would disturb every test using it: Start a Server of the test's own", op)
	}
}

// StopAPIServer stops the API server cleanly (SIGTERM; SIGKILL after
// 30 s) and waits until it has exited. Its etcd keeps running. Stopping a
// stopped API server does nothing.
func (s *Server) StopAPIServer(tb testing.TB) {
	tb.Helper()
	s.mustOwn(tb, "StopAPIServer")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopAPIServer(tb)
}

// stopAPIServer is StopAPIServer with s.mu held.
func (s *Server) stopAPIServer(tb testing.TB) {
	tb.Helper()
	if s.proc == nil {
		return
	}
	if err := s.proc.Stop(stopGrace); errors.Is(err, spawn.ErrTimeout) {
		tb.Logf("k8stest: %v", err)
	}
	s.proc = nil
}

// KillAPIServer crashes the API server (SIGKILL) and waits until it is
// reaped. Its etcd keeps running. Killing a stopped API server does
// nothing.
func (s *Server) KillAPIServer(tb testing.TB) {
	tb.Helper()
	s.mustOwn(tb, "KillAPIServer")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	if err := s.proc.Kill(); err != nil {
		tb.Fatalf("k8stest: %v", err)
	}
	s.proc = nil
}

// StartAPIServer starts a stopped or killed API server again, on the same
// port, etcd and PKI (clients made before keep working), and waits up to
// ReadyTimeout until it is ready. Starting a running one does nothing.
func (s *Server) StartAPIServer(tb testing.TB) {
	tb.Helper()
	s.mustOwn(tb, "StartAPIServer")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startAPIServer(tb)
}

// startAPIServer is StartAPIServer with s.mu held.
func (s *Server) startAPIServer(tb testing.TB) {
	tb.Helper()
	if s.proc != nil {
		return
	}
	if err := s.launch(); err != nil {
		tb.Fatalf("k8stest: %v", err)
	}
	if err := s.waitReady(); err != nil {
		tb.Fatalf("k8stest: %v", err)
	}
}

// Freeze stops the API server's process (SIGSTOP): it holds its
// connections, to its clients and to etcd, and answers nothing, as a
// server in a long pause does. Requests in flight wait with it.
func (s *Server) Freeze(tb testing.TB) { tb.Helper(); s.setStopped(tb, "Freeze", true) }

// Thaw continues the API server's process (SIGCONT) after Freeze.
func (s *Server) Thaw(tb testing.TB) { tb.Helper(); s.setStopped(tb, "Thaw", false) }

func (s *Server) setStopped(tb testing.TB, op string, stop bool) {
	tb.Helper()
	s.mustOwn(tb, op)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		tb.Fatalf("k8stest: %s: the API server is not running", op)
	}
	if err := s.proc.SetStopped(stop, 10*time.Second); err != nil {
		tb.Fatalf("k8stest: %s: %v", op, err)
	}
}

// PID is the API server process's ID, or 0 while it is stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}
