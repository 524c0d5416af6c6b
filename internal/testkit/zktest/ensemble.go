package zktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/freeport"
	"github.com/snowfence/snowfence/internal/testkit/spawn"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// ReadyTimeout bounds every wait for servers to serve: a start, a restart,
// a thaw, an election after a leader was lost.
const ReadyTimeout = 60 * time.Second

// An Ensemble is one ZooKeeper server or an ensemble of three, started for
// one test. Its methods fail the test on an error, and are safe for
// concurrent use.
type Ensemble struct {
	t       testing.TB
	dir     string
	mu      sync.Mutex
	servers []*server
}

// server is one member of the ensemble.
type server struct {
	id                                 int // myid, 1-based
	clientPort, peerPort, electionPort int
	dataDir, cfgPath                   string
	proc                               *spawn.Proc // nil while stopped
}

// Start starts n ZooKeeper servers (1: standalone; 3: an ensemble) on
// loopback and waits until every one serves. It skips the test (fails it
// under CI=true) when ZooKeeper is not installed or does not start, and
// stops and removes everything when the test ends.
func Start(t testing.TB, n int) *Ensemble {
	t.Helper()
	if n != 1 && n != 3 {
		t.Fatalf("zktest: Start(%d): start 1 server or an ensemble of 3", n)
	}
	if _, err := exec.LookPath("java"); err != nil {
		testenv.Missing(t, "zktest: no java on PATH: apt-get install zookeeper (it brings a JRE)")
	}
	if _, err := os.Stat(Jar); err != nil {
		testenv.Missing(t, "zktest: "+Jar+" is missing: apt-get install zookeeper")
	}
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var e *Ensemble
		if e, err = tryStart(t, n); err == nil {
			return e
		}
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
		t.Logf("zktest: attempt %d: a port found free was taken before the server bound it; again on other ports: %v", attempt, err)
	}
	testenv.Missing(t, fmt.Sprintf("zktest: ZooKeeper does not start: %v", err))
	return nil
}

// startAttempts bounds the starts of an ensemble that lost a port to
// another process between freeport's look and the server's bind.
const startAttempts = 3

// tryStart starts n servers on ports found free and waits until they
// serve; on an error every one is killed.
func tryStart(t testing.TB, n int) (*Ensemble, error) {
	ports, err := freeport.Loopback(3 * n)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	e := &Ensemble{t: t, dir: t.TempDir()}
	for i := range n {
		id := i + 1
		d := filepath.Join(e.dir, "server"+strconv.Itoa(id))
		e.servers = append(e.servers, &server{id: id, clientPort: ports[3*i], peerPort: ports[3*i+1], electionPort: ports[3*i+2],
			dataDir: filepath.Join(d, "data"), cfgPath: filepath.Join(d, "zoo.cfg")})
	}
	t.Cleanup(e.stopAll)
	for _, s := range e.servers {
		if err := e.writeConfig(s); err != nil {
			t.Fatalf("zktest: write the config of server %d: %v", s.id, err)
		}
		if err := e.launch(s); err != nil {
			e.stopAll()
			return nil, err
		}
	}
	if err := e.waitReady(e.servers); err != nil {
		e.stopAll()
		return nil, err
	}
	return e, nil
}

// launch starts server s's java process.
func (e *Ensemble) launch(s *server) error {
	dropped, err := dropHeaderlessLogs(s.dataDir) // txnlog.go
	if err != nil {
		return err
	}
	for _, p := range dropped {
		e.t.Logf("zktest: server %d: removed %s, a transaction log without its header (the server stopped as it made it)", s.id, filepath.Base(p))
	}
	cmd := exec.Command("java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.jmx.log4j.disable=true",
		"-cp", classpath(), "org.apache.zookeeper.server.quorum.QuorumPeerMain", s.cfgPath)
	p, err := spawn.Start(cmd, spawn.Config{Name: fmt.Sprintf("zookeeper%d", s.id)})
	if err != nil {
		return err
	}
	s.proc = p
	return nil
}

// N is the number of servers.
func (e *Ensemble) N() int { return len(e.servers) }

// Servers returns every server's client address, host:port, in order of
// index (0-based; the server's myid is index+1).
func (e *Ensemble) Servers() []string {
	addrs := make([]string, len(e.servers))
	for i, s := range e.servers {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", s.clientPort)
	}
	return addrs
}

// ConnectString is Servers joined by commas, as ZooKeeper clients take it.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Servers(), ",") }

// server returns the server of index i, failing the test for another.
func (e *Ensemble) server(i int) *server {
	e.t.Helper()
	if i < 0 || i >= len(e.servers) {
		e.t.Fatalf("zktest: no server %d: the ensemble has %d", i, len(e.servers))
	}
	return e.servers[i]
}

// Stop stops server i (SIGTERM, then SIGKILL after 10 s). ZooKeeper
// exits with status 143 on SIGTERM, which is no failure here.
func (e *Ensemble) Stop(i int) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.server(i)
	if s.proc == nil {
		return
	}
	if err := s.proc.Stop(10 * time.Second); errors.Is(err, spawn.ErrTimeout) {
		e.t.Logf("zktest: stop server %d: %v", s.id, err)
	}
	s.proc = nil
}

// Kill crashes server i (SIGKILL).
func (e *Ensemble) Kill(i int) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.server(i)
	if s.proc == nil {
		return
	}
	if err := s.proc.Kill(); err != nil {
		e.t.Fatalf("zktest: kill server %d: %v", s.id, err)
	}
	s.proc = nil
}

// StartServer starts server i again, on its own data, and waits until it
// serves (for an ensemble: until it has joined a quorum, which needs a
// majority running).
func (e *Ensemble) StartServer(i int) {
	e.t.Helper()
	e.mu.Lock()
	s := e.server(i)
	if s.proc != nil {
		e.mu.Unlock()
		return
	}
	err := e.launch(s)
	e.mu.Unlock()
	if err != nil {
		e.t.Fatalf("zktest: start server %d: %v", s.id, err)
	}
	if err := e.waitReady([]*server{s}); err != nil {
		e.t.Fatalf("zktest: %v", err)
	}
}

// StopAll stops every server.
func (e *Ensemble) StopAll() {
	e.t.Helper()
	for i := range e.servers {
		e.Stop(i)
	}
}

// StartAll starts every stopped server and waits until all serve.
func (e *Ensemble) StartAll() {
	e.t.Helper()
	e.mu.Lock()
	var started []*server
	for _, s := range e.servers {
		if s.proc == nil {
			if err := e.launch(s); err != nil {
				e.mu.Unlock()
				e.t.Fatalf("zktest: start server %d: %v", s.id, err)
			}
			started = append(started, s)
		}
	}
	e.mu.Unlock()
	if err := e.waitReady(started); err != nil {
		e.t.Fatalf("zktest: %v", err)
	}
}

// Freeze stops server i's process (SIGSTOP): it holds its connections and
// answers nothing, as a server in a long pause does.
func (e *Ensemble) Freeze(i int) { e.setStopped(i, true) }

// Thaw continues server i's process (SIGCONT) after Freeze.
func (e *Ensemble) Thaw(i int) { e.setStopped(i, false) }

func (e *Ensemble) setStopped(i int, stop bool) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.server(i)
	if s.proc == nil {
		e.t.Fatalf("zktest: freeze or thaw server %d, which is not running", s.id)
	}
	if err := s.proc.SetStopped(stop, 10*time.Second); err != nil {
		e.t.Fatalf("zktest: %v", err)
	}
}

// stopAll is the cleanup: every server killed (the data is thrown away).
func (e *Ensemble) stopAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.servers {
		if s.proc != nil {
			if err := s.proc.Kill(); err != nil {
				e.t.Logf("zktest: %v", err)
			}
			s.proc = nil
		}
	}
}
