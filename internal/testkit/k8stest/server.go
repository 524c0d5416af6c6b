package k8stest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/internal/testkit/freeport"
	"github.com/snowfence/snowfence/internal/testkit/spawn"
)

// ReadyTimeout bounds every wait for the API server to be ready: a start,
// a restart, a restore.
const ReadyTimeout = 2 * time.Minute

// startAttempts bounds the starts that lost a port found free to another
// process before the server bound it.
const startAttempts = 3

// A Server is a kube-apiserver process on a loopback port over an etcd
// member embedded in the test process, with its own PKI. Its methods fail
// the test on an error. Config, Clientset, Namespace and Restricted are
// safe for concurrent use; the methods that stop, start, freeze or restore
// the API server are meant for the test goroutine of a Server of one's
// own (Start), and fail the test on a Shared one.
type Server struct {
	bin    string
	dir    string
	pki    *pki
	port   int
	etcd   *store
	cfg    *rest.Config // the admin's
	http   *http.Client // the admin's, for /readyz
	shared bool

	mu   sync.Mutex
	proc *spawn.Proc // nil while stopped
	log  *os.File    // the API server's output, all of its runs
}

// Start starts a fresh etcd member and a kube-apiserver on free loopback
// ports, waits (up to ReadyTimeout) until the API server reports itself
// ready, and stops both and removes their data when the test ends. Without
// a kube-apiserver executable (see Binary) the test is skipped, or fails
// under CI=true.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary(tb)
	s, err := start(tb, bin, tb.TempDir())
	if err != nil {
		tb.Fatalf("k8stest.Start: %v", err)
	}
	tb.Cleanup(s.close)
	return s
}

// start makes a Server in dir, trying fresh ports when one found free was
// taken before it was bound.
func start(tb testing.TB, bin, dir string) (*Server, error) {
	began := time.Now()
	p, err := newPKI(tb, filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		ports, err := freeport.Loopback(3)
		if err != nil {
			log.Close()
			return nil, err
		}
		s := &Server{bin: bin, dir: dir, pki: p, port: ports[0], log: log,
			etcd: newStore(filepath.Join(dir, "etcd"+strconv.Itoa(attempt)), ports[1], ports[2])}
		s.cfg = &rest.Config{
			Host: s.Host(),
			TLSClientConfig: rest.TLSClientConfig{
				CAData: p.ca, CertData: p.admin.CertPEM, KeyData: p.admin.KeyPEM,
			},
			QPS: -1, // no client-side rate limit: tests make bursts of requests
		}
		if s.http, err = rest.HTTPClientFor(s.cfg); err != nil {
			log.Close()
			return nil, fmt.Errorf("k8stest: admin client: %w", err)
		}
		err = s.etcd.start()
		if err == nil {
			if err = s.launch(); err == nil {
				if err = s.waitReady(); err == nil {
					tb.Logf("k8stest: kube-apiserver %s ready on %s in %v", Version, s.Host(), time.Since(began).Round(time.Millisecond))
					return s, nil
				}
			}
		}
		s.close()
		if !freeport.InUse(err) || attempt == startAttempts {
			return nil, err
		}
		tb.Logf("k8stest: attempt %d: a port found free was taken before it was bound; again on others: %v", attempt, err)
		if log, err = os.Create(filepath.Join(dir, "kube-apiserver.log")); err != nil {
			return nil, err
		}
	}
}

// Host is the API server's URL, https://127.0.0.1:PORT. It stays the same
// across restarts and restores.
func (s *Server) Host() string { return "https://127.0.0.1:" + strconv.Itoa(s.port) }

// Config returns a new copy of the admin's client configuration: a client
// certificate in the group system:masters, which RBAC lets do anything,
// and no client-side rate limit (QPS -1).
func (s *Server) Config() *rest.Config { return rest.CopyConfig(s.cfg) }

// Clientset returns a clientset with the admin's configuration.
func (s *Server) Clientset(tb testing.TB) kubernetes.Interface {
	tb.Helper()
	return clientset(tb, s.Config())
}

// clientset makes a clientset of cfg, failing tb on an error.
func clientset(tb testing.TB, cfg *rest.Config) kubernetes.Interface {
	tb.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatalf("k8stest: clientset: %v", err)
	}
	return cs
}

// EtcdEndpoint is the client URL of the API server's etcd, for a test
// that reads or writes under the API server's feet.
func (s *Server) EtcdEndpoint() string { return s.etcd.endpoint() }

// close is the cleanup: the API server killed (its data is thrown away
// with the etcd's), the etcd member stopped.
func (s *Server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.Kill() // nothing to do about a child not reaped in time
		s.proc = nil
	}
	s.etcd.stop()
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
}
