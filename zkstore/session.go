package zkstore

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// A session is the ZooKeeper session Connect opened, replaced by a new one
// when it stays without a live session for twice its timeout.
//
// A go-zookeeper session remembers the last zxid it saw and offers it to
// every server it reconnects to; a server whose own zxid is lower refuses
// it (it may be a follower that is behind). After a backup restore every
// server is behind what the processes' sessions saw, and would refuse
// them until other clients' writes moved its zxid past — and if every
// client is such a process, none ever writes. A new session offers no
// zxid, so it is served. Replacing the session changes nothing the fence
// rests on: no lease depends on a session, every write is conditioned on
// the version read, every read that decides one follows a sync, and a
// request of the old session that was sent may still commit — an unknown
// outcome the store already treats as such.
type session struct {
	servers []string
	timeout time.Duration
	auth    []Auth
	log     *slog.Logger
	stop    chan struct{}
	done    chan struct{}

	mu     sync.Mutex
	conn   *zk.Conn
	lastOK time.Time // when the session was last seen connected
	// swaps counts the replacements: a sync and the reads it covers must
	// go through one session (generation).
	swaps uint64
}

// checkEvery is how often a session looks at its connection's state.
const checkEvery = 250 * time.Millisecond

// openSession connects to servers, adds auth to the session, and starts
// watching it.
func openSession(servers []string, timeout time.Duration, auth []Auth, log *slog.Logger) (*session, error) {
	conn, err := dialZK(servers, timeout, auth, log)
	if err != nil {
		return nil, err
	}
	s := &session{servers: servers, timeout: timeout, auth: auth, log: log, conn: conn, lastOK: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.watch()
	return s, nil
}

// dialZK opens a session and adds auth to it before any request of the
// store's can go out on it (go-zookeeper re-adds them on every
// reconnect), waiting up to timeout for the server's answer.
func dialZK(servers []string, timeout time.Duration, auth []Auth, log *slog.Logger) (*zk.Conn, error) {
	conn, _, err := zk.Connect(servers, timeout, zk.WithLogger(zkLogger{log}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	for _, a := range auth {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, err := call(ctx, func() (struct{}, error) { return struct{}{}, conn.AddAuth(a.Scheme, a.Secret) })
		cancel()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("add the %s credentials to the session: %w; check them, and that a server is reachable", a.Scheme, err)
		}
	}
	return conn, nil
}

// watch replaces the connection when it has had no live session for
// twice the session timeout, until close.
func (s *session) watch() {
	defer close(s.done)
	tk := time.NewTicker(checkEvery)
	defer tk.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tk.C:
		}
		s.mu.Lock()
		conn, lastOK := s.conn, s.lastOK
		s.mu.Unlock()
		if conn.State() == zk.StateHasSession {
			s.mu.Lock()
			s.lastOK = time.Now()
			s.mu.Unlock()
			continue
		}
		if time.Since(lastOK) < 2*s.timeout {
			continue
		}
		fresh, err := dialZK(s.servers, s.timeout, s.auth, s.log)
		if err != nil {
			s.log.Warn("ZooKeeper session without a live connection; opening a new one failed", "error", err)
			continue
		}
		s.mu.Lock()
		s.conn, s.lastOK = fresh, time.Now()
		s.swaps++
		s.mu.Unlock()
		conn.Close()
		s.log.Warn("ZooKeeper session replaced: it had no live connection for twice its timeout (servers down, or restored "+
			"behind the zxid it saw and refusing it)", "servers", s.servers, "after", time.Since(lastOK).Round(time.Millisecond))
	}
}

// generation implements generational: the number of replacements so far.
func (s *session) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.swaps
}

// current is the connection requests go to.
func (s *session) current() *zk.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// close stops watching and closes the connection.
func (s *session) close() {
	close(s.stop)
	<-s.done
	s.current().Close()
}

func (s *session) Get(path string) ([]byte, *zk.Stat, error) { return s.current().Get(path) }
func (s *session) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	return s.current().Set(path, data, version)
}
func (s *session) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return s.current().Create(path, data, flags, acl)
}
func (s *session) Children(path string) ([]string, *zk.Stat, error) {
	return s.current().Children(path)
}
func (s *session) Sync(path string) (string, error)             { return s.current().Sync(path) }
func (s *session) Multi(ops ...any) ([]zk.MultiResponse, error) { return s.current().Multi(ops...) }
