package k8sproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/harness/chaos/etcdproc"
	"github.com/snowfence/snowfence/internal/testkit/freeport"
	"github.com/snowfence/snowfence/internal/testkit/spawn"
)

// ReadyTimeout bounds every wait for the API server to be ready: a start,
// a restart, a restore.
const ReadyTimeout = 2 * time.Minute

// stopGrace bounds the API server's clean stop before a restore.
const stopGrace = 30 * time.Second

// Config says where and how Start runs the servers.
type Config struct {
	// Dir holds the PKI, etcd's data and kube-apiserver.log. Required.
	Dir string
	// EtcdCommand runs an etcd member (etcdproc.Config.Command): the
	// harness's own binary in its member role. Required.
	EtcdCommand func(args ...string) *exec.Cmd
	// Stderr receives etcd's errors; nil discards them.
	Stderr io.Writer
}

// A Server is a kube-apiserver process over a one-member etcd cluster of
// processes, with its PKI and the relay the holders reach it through. Its
// methods are safe for concurrent use; faults should come from one
// goroutine.
type Server struct {
	bin   string
	dir   string
	pki   *pki
	port  int
	etcd  *etcdproc.Cluster
	admin *rest.Config
	http  *http.Client
	relay *relay
	log   *os.File

	mu   sync.Mutex
	proc *spawn.Proc // nil while the API server is down
}

// Start starts etcd and kube-apiserver on free loopback ports and waits
// until the API server is ready (ReadyTimeout). Without a kube-apiserver
// executable it returns an error wrapping storeproc.ErrMissing.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Dir == "" || cfg.EtcdCommand == nil {
		return nil, errors.New("k8sproc: Config needs Dir and EtcdCommand")
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	p, err := newPKI(filepath.Join(cfg.Dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("k8sproc: PKI: %w", err)
	}
	s := &Server{bin: bin, dir: cfg.Dir, pki: p}
	if s.log, err = os.Create(filepath.Join(cfg.Dir, "kube-apiserver.log")); err != nil {
		return nil, err
	}
	if s.etcd, err = etcdproc.Start(ctx, etcdproc.Config{Dir: filepath.Join(cfg.Dir, "etcd"), Size: 1,
		Command: cfg.EtcdCommand, Stderr: cfg.Stderr}); err != nil {
		s.log.Close()
		return nil, fmt.Errorf("k8sproc: etcd: %w", err)
	}
	for attempt := 1; ; attempt++ {
		ports, err := freeport.Loopback(1)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.port = ports[0]
		s.admin = &rest.Config{Host: s.host(), QPS: -1,
			TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM, CertData: p.adminCert, KeyData: p.adminKey}}
		if s.http, err = rest.HTTPClientFor(s.admin); err != nil {
			s.Close()
			return nil, fmt.Errorf("k8sproc: admin client: %w", err)
		}
		err = s.StartAPIServer(ctx)
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "address already in use") || attempt == 3 {
			s.Close()
			return nil, err
		}
	}
	if s.relay, err = newRelay(s.hostPort()); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) hostPort() string { return "127.0.0.1:" + strconv.Itoa(s.port) }
func (s *Server) host() string     { return "https://" + s.hostPort() }

// Addr is the relay's host:port, where the holders reach the API server.
func (s *Server) Addr() string { return s.relay.addr() }

// CA is the PEM of the CA the API server's certificate is signed by.
func (s *Server) CA() []byte { return s.pki.caPEM }

// AdminConfig returns the operator's client configuration: a client
// certificate in the group system:masters, on the API server's own port
// (never the relay's), no client-side rate limit.
func (s *Server) AdminConfig() *rest.Config { return rest.CopyConfig(s.admin) }

// Block keeps the holders away: the relay drops what it carries and
// refuses new connections. Unblock lets them back.
func (s *Server) Block()   { s.relay.block() }
func (s *Server) Unblock() { s.relay.unblock() }

// args are the API server's flags (k8stest's): loopback only, the PKI,
// RBAC, no anonymous requests, no endpoint reconciler.
func (s *Server) args() []string {
	return []string{
		"--etcd-servers=" + strings.Join(s.etcd.Endpoints(), ","),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(s.port),
		"--cert-dir=" + filepath.Join(s.dir, "certs"),
		"--tls-cert-file=" + s.pki.certFile,
		"--tls-private-key-file=" + s.pki.key,
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

// StartAPIServer starts the API server (stopped or killed) on its port
// and etcd and waits until it is ready. Starting a running one does
// nothing.
func (s *Server) StartAPIServer(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return nil
	}
	p, err := spawn.Start(exec.Command(s.bin, s.args()...), spawn.Config{Name: "kube-apiserver", TailBytes: 16 << 10, Output: s.log})
	if err != nil {
		return fmt.Errorf("k8sproc: %w", err)
	}
	s.proc = p
	if err := s.waitReady(ctx, p); err != nil {
		p.Kill()
		s.proc = nil
		return err
	}
	return nil
}

// waitReady polls /readyz as the admin until it answers 200, the process
// exits, or ReadyTimeout passes.
func (s *Server) waitReady(ctx context.Context, p *spawn.Proc) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond) // poll: the API server says it is ready only when asked
	defer tick.Stop()
	for {
		status, err := s.readyz(ctx)
		if err == nil && status == http.StatusOK {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("k8sproc: kube-apiserver exited (%v); log %s: %s", p.Err(), s.log.Name(), p.Tail())
		case <-ctx.Done():
			return fmt.Errorf("k8sproc: kube-apiserver not ready after %v (status %d, %v); log %s: %s",
				ReadyTimeout, status, err, s.log.Name(), p.Tail())
		case <-tick.C:
		}
	}
}

// readyz asks /readyz once, bounded by 5 s.
func (s *Server) readyz(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.host()+"/readyz", nil)
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

// Kill crashes the API server (SIGKILL) and waits until it is reaped; etcd
// keeps running. Killing a stopped one does nothing.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	err := s.proc.Kill()
	s.proc = nil
	return err
}

// Freeze stops the API server's process (SIGSTOP): it keeps its
// connections and answers nothing. Thaw resumes it.
func (s *Server) Freeze() error { return s.setStopped(true) }
func (s *Server) Thaw() error   { return s.setStopped(false) }

func (s *Server) setStopped(stop bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return errors.New("k8sproc: the API server is not running")
	}
	return s.proc.SetStopped(stop, 10*time.Second)
}

// Snapshot backs up the API server's etcd while everything runs, as an
// operator backs up a cluster (etcdctl snapshot save), to path.
func (s *Server) Snapshot(ctx context.Context, path string) error {
	return s.etcd.Snapshot(ctx, path)
}

// Restore puts the snapshot at path back under the API server as an
// operator restores a backup without etcdutl's --bump-revision: the API
// server stopped (a frozen one thawed first), etcd rebuilt from the
// snapshot with its cluster ID, the API server started again on its port.
// resourceVersions fall back to the snapshot's and then repeat ones
// issued after it. The relay's state is left as it was: Block first to
// keep the holders away from the restored store. It returns etcd's
// revision as restored, before the API server wrote anything: every
// revision above it that was issued before the restore is issued again.
func (s *Server) Restore(ctx context.Context, path string) (int64, error) {
	s.mu.Lock()
	if s.proc != nil {
		s.proc.Stop(stopGrace) // killed when it does not stop: either way it is down
		s.proc = nil
	}
	s.mu.Unlock()
	if err := s.etcd.RestoreAll(ctx, path, etcdproc.RestoreOptions{}); err != nil {
		return 0, fmt.Errorf("k8sproc: restore etcd: %w", err)
	}
	rev, err := s.Revision(ctx)
	if err != nil {
		return 0, fmt.Errorf("k8sproc: the restored etcd's revision: %w", err)
	}
	return rev, s.StartAPIServer(ctx)
}

// Heal leaves the API server running and reachable for the next scenario,
// whatever a failed one left it in.
func (s *Server) Heal(ctx context.Context) {
	s.relay.unblock()
	s.mu.Lock()
	if s.proc != nil {
		s.proc.SetStopped(false, 10*time.Second)
	}
	s.mu.Unlock()
	s.StartAPIServer(ctx) // does nothing when it runs
}

// Close stops the relay, the API server and etcd; the data stays.
func (s *Server) Close() {
	if s.relay != nil {
		s.relay.close()
	}
	s.mu.Lock()
	if s.proc != nil {
		s.proc.Kill()
		s.proc = nil
	}
	s.mu.Unlock()
	if s.etcd != nil {
		s.etcd.Close()
	}
	if s.log != nil {
		s.log.Close()
	}
}
