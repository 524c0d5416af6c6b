package explore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// zkSessionTimeout is the session timeout of every store the search
// opens on ZooKeeper. Short, so that after a restore a session the
// servers refuse (it saw later zxids than theirs) is replaced within a
// few seconds of real time (zkstore replaces it after twice its timeout
// without a live connection); no lease depends on a session, so an
// expiry under load is nothing to the fence.
const zkSessionTimeout = 2 * time.Second

// zkService is one ZooKeeper server (zktest), shared by the worlds of one
// store's run, which run one after another.
//
// A snapshot and a restore are a cold copy of the server's data
// directory and its restore (zktest's CopyData and Restore: the server
// stopped, the copy taken or put back, the server started again): what
// an operator's restore of a backup is, zxids and znode versions that
// repeat ones issued after the copy included, which a restore made by
// writing znodes back would not repeat. Such a restore is server-wide:
// it takes back every path on the server, so worlds stay independent
// only while one world at a time has a space on it. The service
// enforces that (space fails while another is open); the worlds of a
// run are sequential anyway, and the worlds before took nothing the
// restore could change (their paths are as they left them at the
// snapshot). A server per world would buy nothing more and cost a JVM
// start (a second or two) per world.
type zkService struct {
	t *testing.T
	e *zktest.Ensemble

	mu   sync.Mutex
	live bool // a space is open
}

// startZooKeeper starts the server, unless scripts/test's race run asks
// for ZooKeeper later (testenv.ZooKeeperLater).
func startZooKeeper(t *testing.T) service {
	testenv.ZooKeeperLater(t)
	return &zkService{t: t, e: zktest.Start(t, 1)}
}

func (s *zkService) close() {} // zktest stops the server when the test ends

func (s *zkService) space(ctx context.Context, seed uint64, stores int) (space, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live {
		return nil, errors.New("explore: a second ZooKeeper space while one is open: a restore is server-wide, so worlds on one server run one at a time")
	}
	s.live = true
	z := &zkSpace{svc: s}
	base := fmt.Sprintf("/explore/%d-%s", seed, randomSuffix())
	for i := range stores {
		// Two paths of one server are two stores: their znodes are apart.
		z.paths = append(z.paths, fmt.Sprintf("%s/s%d", base, i))
	}
	return z, nil
}

// zkSpace is one world's paths on the server.
type zkSpace struct {
	svc    *zkService
	paths  []string // Config.Path, by store
	snap   *zktest.Copy
	mu     sync.Mutex
	stores []*zkstore.Store
}

func (z *zkSpace) open(ctx context.Context, store, region int) (lease.Admin, error) {
	s, err := zkstore.Connect(z.svc.e.Servers(), zkSessionTimeout,
		zkstore.Config{Path: z.paths[store], Region: region, RequestTimeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	z.mu.Lock()
	z.stores = append(z.stores, s)
	z.mu.Unlock()
	return s, nil
}

// snapshot takes a cold copy of the server's data: stopped, copied,
// started. The world is quiet meanwhile (every keeper asleep on its fake
// clock); the stores' sessions reconnect when it serves again.
func (z *zkSpace) snapshot(ctx context.Context) error {
	e := z.svc.e
	e.StopAll()
	if z.snap != nil {
		z.snap.Remove() // one copy kept: every copy holds the server's whole history
	}
	z.snap = e.CopyData()
	e.StartAll()
	return nil
}

// restore puts the last copy back: the same server and port, older data,
// zxids and versions that repeat. Sessions that saw later zxids are
// refused until zkstore replaces them (zkSessionTimeout).
func (z *zkSpace) restore(ctx context.Context, _ restoreHow) (bool, error) {
	if z.snap == nil {
		return false, errors.New("explore: restore without a snapshot")
	}
	e := z.svc.e
	e.StopAll()
	e.Restore(z.snap)
	e.StartAll()
	// Not detectable: a Store value notices a restore only by what it saw
	// of the later state (zkstore/doc.go, "What a restore looks like"); a
	// process started after it, or one that read nothing of the numbers
	// concerned, takes the restored records as they are. So the
	// runbook's operator step (RaiseMarks) follows every restore.
	return false, nil
}

func (z *zkSpace) dropReplies(int) bool { return false } // the faultyStore wrapper loses them
func (z *zkSpace) dropped() int         { return 0 }

func (z *zkSpace) close() {
	z.mu.Lock()
	for _, s := range z.stores {
		s.Close()
	}
	z.stores = nil
	z.mu.Unlock()
	if z.snap != nil {
		z.snap.Remove()
	}
	z.svc.mu.Lock()
	z.svc.live = false
	z.svc.mu.Unlock()
}
