package zktest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// Srvr sends the four-letter word "srvr" to address addr and returns the
// server's mode: "standalone", "leader" or "follower", or an error while
// it does not serve (starting, or without a quorum).
func Srvr(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "srvr"); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(c)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
		lines = append(lines, line)
	}
	return "", fmt.Errorf("srvr on %s: no mode in %q (%v)", addr, strings.Join(lines, " | "), sc.Err())
}

// waitReady polls, up to ReadyTimeout, until every server of ss serves.
func (e *Ensemble) waitReady(ss []*server) error {
	deadline := time.Now().Add(ReadyTimeout)
	for _, s := range ss {
		addr := fmt.Sprintf("127.0.0.1:%d", s.clientPort)
		for {
			_, err := Srvr(addr)
			if err == nil {
				break
			}
			e.mu.Lock()
			p := s.proc
			e.mu.Unlock()
			if p != nil && p.Exited() {
				return fmt.Errorf("server %d exited: %v; stderr: %s", s.id, p.Err(), p.Tail())
			}
			if time.Now().After(deadline) {
				tail := ""
				if p != nil {
					tail = p.Tail()
				}
				return fmt.Errorf("server %d did not serve within %v: %v; stderr: %s", s.id, ReadyTimeout, err, tail)
			}
			time.Sleep(50 * time.Millisecond) // poll: the server says when it serves only when asked
		}
	}
	return nil
}

// WaitServing waits, up to ReadyTimeout, until every running server serves
// (after a leader was lost, say), failing the test otherwise.
func (e *Ensemble) WaitServing() {
	e.t.Helper()
	e.mu.Lock()
	var running []*server
	for _, s := range e.servers {
		if s.proc != nil {
			running = append(running, s)
		}
	}
	e.mu.Unlock()
	if err := e.waitReady(running); err != nil {
		e.t.Fatalf("zktest: %v", err)
	}
}

// Leader returns the index of the server that leads the ensemble (0 for a
// single server), waiting up to ReadyTimeout for one.
func (e *Ensemble) Leader() int {
	e.t.Helper()
	deadline := time.Now().Add(ReadyTimeout)
	for {
		for i, addr := range e.Servers() {
			if mode, err := Srvr(addr); err == nil && (mode == "leader" || mode == "standalone") {
				return i
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("zktest: no leader within %v", ReadyTimeout)
		}
		time.Sleep(50 * time.Millisecond) // poll, as waitReady
	}
}
