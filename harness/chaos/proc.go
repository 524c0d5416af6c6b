package chaos

import (
	"io"
	"os/exec"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/spawn"
)

// proc is one child process of the harness: a snowfence serve or a
// library holder (the etcd members are package etcdproc's).
type proc = spawn.Proc

const (
	// stderrTail is how much of a child's stderr the harness keeps for
	// its reports.
	stderrTail = 16 << 10
	// reapTimeout bounds the wait for a SIGKILLed child to be reaped,
	// which follows the end of its output: long, since a library
	// holder's reader first hands the collector what the pipe still held.
	reapTimeout = time.Minute
)

// startProc starts cmd as child name, its standard input a pipe.
// onStdout reads the child's standard output until it ends; the process
// is reaped after that. Every child dies with the harness (spawn's
// parent-death signal), so a crashed harness leaves no holder behind.
func startProc(name string, cmd *exec.Cmd, onStdout func(io.Reader)) (*proc, error) {
	return spawn.Start(cmd, spawn.Config{
		Name:        name,
		Stdin:       true,
		Stdout:      func(r io.Reader, _ io.Writer) { onStdout(r) },
		TailBytes:   stderrTail,
		ReapTimeout: reapTimeout,
	})
}

// kill crashes p (SIGKILL) and waits for it to be reaped; a child that is
// not is a failure of the harness.
func (e *Env) kill(p *proc) {
	if err := p.Kill(); err != nil {
		e.fail("%v", err)
	}
}
