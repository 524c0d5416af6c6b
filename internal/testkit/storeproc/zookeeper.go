package storeproc

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/freeport"
)

// ZooKeeper is a standalone ZooKeeper server of the suite's own on
// 127.0.0.1 (Debian's zookeeper package, under java, as zktest starts
// them for the tests), with its data in a directory of its own, so that a
// SIGKILL and a start again keep it. Its methods are safe for concurrent
// use.
type ZooKeeper struct {
	dir  string
	port int // the holders' port (Addr)

	// serving is the port the configuration names now: port, or another
	// while the server is restored aside (RestoreAside).
	serving int

	oneProc     // its process (a JVM): Kill, Freeze, Thaw
	copies  int // CopyData's
}

// zkJar is Debian's ZooKeeper server jar (zkJar; not imported, as
// package zktest is for tests and imports package testing).
const zkJar = "/usr/share/java/zookeeper.jar"

// zkLogJar is the SLF4J binding the server logs with, when installed.
const zkLogJar = "/usr/share/java/slf4j-simple.jar"

// StartZooKeeper starts a standalone server on a free loopback port with
// its data in a fresh temporary directory and waits until it serves.
// Close stops it and removes the directory.
func StartZooKeeper(ctx context.Context) (*ZooKeeper, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("%w: no java in PATH (apt-get install zookeeper)", ErrMissing)
	}
	if _, err := os.Stat(zkJar); err != nil {
		return nil, fmt.Errorf("%w: no %s (apt-get install zookeeper)", ErrMissing, zkJar)
	}
	dir, err := os.MkdirTemp("", "snowfence-chaos-zookeeper-")
	if err != nil {
		return nil, err
	}
	z := &ZooKeeper{dir: dir, oneProc: oneProc{name: "zookeeper"}}
	use := func(port int) error {
		z.port = port
		return z.writeConfig(port)
	}
	if err := startOnFreePort(dir, use, func() error { return z.Start(ctx) }); err != nil {
		return nil, err
	}
	return z, nil
}

// data is the server's data directory; cfg its zoo.cfg (outside the data,
// so that a restore leaves it).
func (z *ZooKeeper) data() string { return filepath.Join(z.dir, "data") }
func (z *ZooKeeper) cfg() string  { return filepath.Join(z.dir, "zoo.cfg") }

// Addr is the server's client address, 127.0.0.1:port.
func (z *ZooKeeper) Addr() string { return "127.0.0.1:" + strconv.Itoa(z.port) }

// writeConfig writes zoo.cfg, the server on port: zktest's short tick
// (sessions of 0.4–20 s), no admin server, the four-letter words, and a
// 1 MB preallocation of the transaction log (64 MB by default, copied
// whole by every cold copy).
func (z *ZooKeeper) writeConfig(port int) error {
	z.serving = port
	if err := os.MkdirAll(z.data(), 0o755); err != nil {
		return err
	}
	cfg := fmt.Sprintf("tickTime=200\ninitLimit=25\nsyncLimit=10\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"admin.enableServer=false\n4lw.commands.whitelist=*\nautopurge.purgeInterval=0\n"+
		"minSessionTimeout=400\nmaxSessionTimeout=20000\npreAllocSize=1024\n", z.data(), port)
	return os.WriteFile(z.cfg(), []byte(cfg), 0o644)
}

// Start starts the server (again, after Kill) on its port and data and
// waits until it serves.
func (z *ZooKeeper) Start(ctx context.Context) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.running() {
		return fmt.Errorf("%w: zookeeper runs", ErrNotRunning)
	}
	if err := dropHeaderlessZKLogs(z.data()); err != nil {
		return err
	}
	cp := zkJar
	if _, err := os.Stat(zkLogJar); err == nil {
		cp += string(os.PathListSeparator) + zkLogJar
	}
	cmd := exec.Command("java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.jmx.log4j.disable=true",
		"-cp", cp, "org.apache.zookeeper.server.quorum.QuorumPeerMain", z.cfg())
	p, err := z.spawn(cmd)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	addr := "127.0.0.1:" + strconv.Itoa(z.serving)
	return z.await(ctx, p, addr, 50*time.Millisecond, func() bool { return zkServes(addr) }, func(tail string) error {
		if strings.Contains(tail, "Address already in use") {
			return fmt.Errorf("storeproc: zookeeper's port %d was taken: %s", z.serving, tail)
		}
		return fmt.Errorf("storeproc: zookeeper exited at start: %v: %s", p.Err(), tail)
	})
}

// CopyData copies the stopped server's data directory (Kill first) and
// returns the copy's directory, for Restore (which takes it): a cold
// backup. Its zxids and the epoch the server is at are in the copy too.
func (z *ZooKeeper) CopyData(ctx context.Context) (string, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.p != nil && !z.p.Exited() {
		return "", fmt.Errorf("%w: a cold copy needs zookeeper stopped", ErrNotRunning)
	}
	z.copies++
	dst := filepath.Join(z.dir, fmt.Sprintf("copy%d", z.copies))
	return dst, copyDir(ctx, z.data(), dst)
}

// Restore replaces the stopped server's data directory with copy (which it
// takes: the directory moves) and starts the server on it, on its port.
// Nothing the server shows says it went back: the same port, older data,
// zxids that repeat ones it issued after the copy.
func (z *ZooKeeper) Restore(ctx context.Context, copy string) error {
	z.mu.Lock()
	running := z.p != nil && !z.p.Exited()
	z.mu.Unlock()
	if running {
		return fmt.Errorf("%w: restore needs zookeeper stopped", ErrNotRunning)
	}
	old := z.data() + ".replaced"
	os.RemoveAll(old)
	if err := os.Rename(z.data(), old); err != nil {
		return err
	}
	if err := os.Rename(copy, z.data()); err != nil {
		return err
	}
	return z.Start(ctx)
}

// RestoreAside is Restore with the server started on another free
// loopback port, whose address it returns: no holder reaches it there, so
// the operator's step after a restore (raise-marks) runs before any holder
// sees the restored data, as PostgreSQL's Unix socket serves for
// (Postgres.Restore). Reopen moves it back to Addr.
func (z *ZooKeeper) RestoreAside(ctx context.Context, copy string) (string, error) {
	ports, err := freeport.Loopback(1)
	if err != nil {
		return "", err
	}
	z.mu.Lock()
	err = z.writeConfig(ports[0])
	z.mu.Unlock()
	if err != nil {
		return "", err
	}
	if err := z.Restore(ctx, copy); err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0]), nil
}

// Reopen stops the server (SIGTERM: a clean stop) and starts it again on
// its own port (Addr), on its data.
func (z *ZooKeeper) Reopen(ctx context.Context) error {
	z.mu.Lock()
	p := z.p
	z.mu.Unlock()
	if p != nil && !p.Exited() {
		p.Stop(10 * time.Second)
	}
	z.mu.Lock()
	err := z.writeConfig(z.port)
	z.mu.Unlock()
	if err != nil {
		return err
	}
	return z.Start(ctx)
}

// Aside reports whether the server is configured on another port than
// Addr (RestoreAside, not yet Reopened).
func (z *ZooKeeper) Aside() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.serving != z.port
}

// Close resumes, kills and removes the server and its data.
func (z *ZooKeeper) Close() error {
	z.end()
	return os.RemoveAll(z.dir)
}

// zkServes asks the server at addr for its mode (the four-letter word
// "srvr", as zktest.Srvr): true once it serves.
func zkServes(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "srvr"); err != nil {
		return false
	}
	b, _ := io.ReadAll(c)
	return strings.Contains(string(b), "Mode: ")
}

// dropHeaderlessZKLogs removes from dataDir the transaction log files
// shorter than their 16-byte header, which a server killed as it created
// one leaves (it writes the header before any transaction, so such a file
// holds none): ZooKeeper 3.8 will not start on one (java.io.EOFException
// in FileHeader.deserialize), and an operator deletes it. As zktest does.
func dropHeaderlessZKLogs(dataDir string) error {
	logs, err := filepath.Glob(filepath.Join(dataDir, "version-2", "log.*"))
	if err != nil {
		return err
	}
	for _, p := range logs {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() < 16 {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}
