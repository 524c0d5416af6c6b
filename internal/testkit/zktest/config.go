package zktest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Jar is Debian's ZooKeeper server jar; its manifest's Class-Path names
// the jars it needs from /usr/share/java.
const Jar = "/usr/share/java/zookeeper.jar"

// logJar is the SLF4J binding the servers log with (to standard error,
// warnings and worse): Debian's zookeeper.jar depends on slf4j-api only.
const logJar = "/usr/share/java/slf4j-simple.jar"

// Timing of the servers: a short tick so elections and session expiry
// are quick in tests. A session lasts 2 to 20 ticks.
const (
	tickMs    = 200
	initLimit = 25 // ticks a follower may take to connect and sync to a leader
	syncLimit = 10 // ticks a follower may lag the leader before it is dropped
)

// classpath is the java class path of a server: the server jar and, when
// installed, the logging binding.
func classpath() string {
	cp := []string{Jar}
	if _, err := os.Stat(logJar); err == nil {
		cp = append(cp, logJar)
	}
	return strings.Join(cp, string(os.PathListSeparator))
}

// writeConfig writes server s's zoo.cfg and myid; every server of the
// ensemble names all of them (none for a single server: standalone).
func (e *Ensemble) writeConfig(s *server) error {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", tickMs, initLimit, syncLimit)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", s.dataDir, s.clientPort)
	b.WriteString("admin.enableServer=false\n4lw.commands.whitelist=*\nautopurge.purgeInterval=0\n")
	b.WriteString("minSessionTimeout=400\nmaxSessionTimeout=20000\n")
	// A transaction log preallocated 1 MB at a time, not 64 MB: CopyData
	// copies every log file whole (the preallocation is sparse, the copy
	// not), and a search restoring again and again copies many.
	b.WriteString("preAllocSize=1024\n")
	if len(e.servers) > 1 {
		for _, o := range e.servers {
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", o.id, o.peerPort, o.electionPort)
		}
	}
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dataDir, "myid"), fmt.Appendf(nil, "%d\n", s.id), 0o644); err != nil {
		return err
	}
	return os.WriteFile(s.cfgPath, []byte(b.String()), 0o644)
}
