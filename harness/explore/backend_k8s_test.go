package explore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
)

// k8sService is one kube-apiserver over its etcd (k8stest), shared by the
// worlds of one store's run, which run one after another.
//
// A snapshot is a backup of the API server's etcd, and a restore puts it
// back the way an operator restores one without etcdutl's
// --bump-revision (k8stest's CopyData and Restore: the API server and
// etcd stopped, the copy restored, both started again): resourceVersions
// fall back and then repeat ones issued before the restore, on other
// contents — what the store's record test is there for. Such a restore is
// server-wide, so worlds stay independent only while one world at a time
// has a space on it (enforced, as on ZooKeeper); a server per world would
// cost an API server's start (seconds of CPU) per world.
type k8sService struct {
	t *testing.T
	s *k8stest.Server

	mu   sync.Mutex
	live bool // a space is open
}

// startKubernetes starts the API server (k8stest skips under
// testenv.KubernetesLater, and without a binary calls testenv.Missing).
func startKubernetes(t *testing.T) service {
	return &k8sService{t: t, s: k8stest.Start(t)}
}

func (s *k8sService) close() {} // k8stest stops the server when the test ends

func (s *k8sService) space(ctx context.Context, seed uint64, stores int) (space, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live {
		return nil, errors.New("explore: a second Kubernetes space while one is open: a restore is server-wide, so worlds on one server run one at a time")
	}
	s.live = true
	// A namespace per world, and the service account a holder's pod
	// would have there (get, list, create, patch on leases): every store
	// of the world opens with it, so the search runs the store on exactly
	// the permissions the docs ask for.
	ns := s.s.Namespace(s.t)
	k := &k8sSpace{svc: s, ns: ns, rc: s.s.Restricted(s.t, ns)}
	for i := range stores {
		// Two prefixes of one namespace are two stores: their objects
		// are apart.
		k.prefixes = append(k.prefixes, fmt.Sprintf("w%d-s%d", seed%1000, i))
	}
	return k, nil
}

// k8sSpace is one world's namespace on the server.
type k8sSpace struct {
	svc      *k8sService
	ns       string
	rc       *rest.Config
	prefixes []string // Config.Prefix, by store
	snap     *k8stest.Copy
	mu       sync.Mutex
	stores   []*k8sstore.Store
}

func (k *k8sSpace) open(ctx context.Context, store, region int) (lease.Admin, error) {
	s, err := k8sstore.Open(ctx, k8sstore.Config{Namespace: k.ns, Prefix: k.prefixes[store], Region: region, RequestTimeout: 2 * time.Second}, k.rc)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.stores = append(k.stores, s)
	k.mu.Unlock()
	return s, nil
}

// snapshot backs up the API server's etcd; the world is quiet meanwhile
// (every keeper asleep on its fake clock).
func (k *k8sSpace) snapshot(ctx context.Context) error {
	k.snap = k.svc.s.CopyData(k.svc.t)
	return nil
}

// restore puts the last backup back: the same API server and port, older
// data, resourceVersions that repeat.
func (k *k8sSpace) restore(ctx context.Context, _ restoreHow) (bool, error) {
	if k.snap == nil {
		return false, errors.New("explore: restore without a snapshot")
	}
	k.svc.s.Restore(k.svc.t, k.snap)
	// Not detectable: a Store value notices a restore only by what it saw
	// of the later state (k8sstore/doc.go); a process started after it,
	// or one that read nothing of the numbers concerned, takes the
	// restored records as they are. So the runbook's operator step
	// (RaiseMarks) follows every restore.
	return false, nil
}

func (k *k8sSpace) dropReplies(int) bool { return false } // the faultyStore wrapper loses them
func (k *k8sSpace) dropped() int         { return 0 }

func (k *k8sSpace) close() {
	k.mu.Lock()
	for _, s := range k.stores {
		s.Close()
	}
	k.stores = nil
	k.mu.Unlock()
	k.svc.mu.Lock()
	k.svc.live = false
	k.svc.mu.Unlock()
}
