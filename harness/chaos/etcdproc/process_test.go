//go:build linux

package etcdproc

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/syncbuf"
)

// TestStartRetriesTakenPort hands Start a port another listener holds: the
// member that cannot bind it exits, and Start tries again on fresh ports.
func TestStartRetriesTakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	ports := func(n int) ([]int, error) {
		calls++
		ps, err := freePorts(n)
		if calls == 1 && err == nil {
			ps[3] = taken // member 1's peer port
		}
		return ps, err
	}
	stderr := &syncbuf.Tail{Limit: 64 << 10}
	c, err := start(timeout(t, time.Minute), Config{Dir: t.TempDir(), Command: memberCommand, Stderr: stderr}, ports)
	if err != nil {
		t.Fatalf("start: %v\nstderr: %s", err, stderr)
	}
	defer c.Close()
	if calls != 2 {
		t.Errorf("ports asked for %d times, want 2 (one retry)", calls)
	}
	for i, ep := range c.Endpoints() {
		if strings.HasSuffix(ep, ":"+strconv.Itoa(taken)) || strings.HasSuffix(c.members[i].peer, ":"+strconv.Itoa(taken)) {
			t.Errorf("member %d uses the taken port %d", i, taken)
		}
	}
	if !strings.Contains(stderr.String(), "address already in use") {
		t.Errorf("members' stderr does not mention the taken port:\n%s", stderr)
	}
	if err := c.WaitWritable(timeout(t, 30*time.Second)); err != nil {
		t.Errorf("WaitWritable: %v", err)
	}
}

// TestMembersDieWithParent kills a harness process that runs a cluster:
// its members die with it (Pdeathsig).
func TestMembersDieWithParent(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), parentEnv+"="+t.TempDir())
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lines := make(chan string, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(time.Minute):
		t.Fatalf("harness printed no pids in a minute; stderr:\n%s", stderr.String())
	}
	fields := strings.Fields(line)
	if len(fields) != 4 || fields[0] != "pids" {
		t.Fatalf("harness printed %q, want pids of 3 members; stderr:\n%s", line, stderr.String())
	}
	var pids []int
	for _, f := range fields[1:] {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			t.Fatalf("bad pid %q in %q", f, line)
		}
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		if gone(pid) {
			t.Fatalf("member pid %d dead before the harness was killed", pid)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for !gone(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL) // do not leak it
				t.Fatalf("member pid %d alive 10s after its harness was killed", pid)
			}
			time.Sleep(10 * time.Millisecond) // poll: only the kernel can deliver the signal
		}
	}
}
