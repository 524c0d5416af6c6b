package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// languages are the clients the driver plays the scenarios against, each
// by clients/<language>/conformance-runner (PROTOCOL.md, "The runner").
var languages = []string{"go", "java", "python", "js"}

// runnerScript is a language's conformance-runner.
func runnerScript(lang string) string {
	p, _ := filepath.Abs(filepath.Join("..", lang, "conformance-runner"))
	return p
}

var builds sync.Map // language → *buildResult

type buildResult struct {
	once sync.Once
	out  string
	code int
	err  error
}

// buildRunner runs a language's conformance-runner --build once per test
// binary. Exit 3 (a tool is missing) skips the caller, or fails it under
// CI=true (testenv.Missing).
func buildRunner(t testing.TB, lang string) {
	t.Helper()
	v, _ := builds.LoadOrStore(lang, &buildResult{})
	b := v.(*buildResult)
	b.once.Do(func() {
		cmd := exec.Command(runnerScript(lang), "--build")
		cmd.Dir = filepath.Dir(runnerScript(lang))
		out, err := cmd.CombinedOutput()
		b.out, b.err = string(out), err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			b.code = ee.ExitCode()
		}
	})
	switch {
	case b.code == 3:
		testenv.Missing(t, fmt.Sprintf("the %s client cannot be built here: %s", lang, b.out))
	case b.err != nil:
		t.Fatalf("%s --build: %v\n%s", runnerScript(lang), b.err, b.out)
	}
}

// runner is one running conformance runner.
type runner struct {
	t     testing.TB
	lang  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan []byte
	done  chan struct{}
	errs  bytes.Buffer
	mu    sync.Mutex
}

// startRunner starts a language's runner (built first).
func startRunner(t testing.TB, lang string, env ...string) *runner {
	t.Helper()
	buildRunner(t, lang)
	r := &runner{t: t, lang: lang, lines: make(chan []byte, 1), done: make(chan struct{})}
	r.cmd = exec.Command(runnerScript(lang))
	r.cmd.Dir = filepath.Dir(runnerScript(lang))
	r.cmd.Stderr = &lockedWriter{mu: &r.mu, w: &r.errs}
	r.cmd.Env = append(os.Environ(), env...)
	in, err := r.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.in = in
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 256<<20)
		for sc.Scan() {
			r.lines <- append([]byte(nil), sc.Bytes()...)
		}
		r.cmd.Wait()
	}()
	t.Cleanup(func() {
		r.in.Close()
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			r.cmd.Process.Kill()
			<-r.done
			t.Errorf("%s runner did not exit within 20 s of the end of its input", lang)
		}
	})
	return r
}

// answer is one answer of a runner.
type answer struct {
	OK    bool `json:"ok"`
	Error *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
	IDs       []string       `json:"ids"`
	ElapsedMS *float64       `json:"elapsed_ms"`
	Decoded   map[string]any `json:"decoded"`
}

// kind is the answer's error kind, "ok" without one.
func (a *answer) kind() string {
	if a.OK {
		return "ok"
	}
	if a.Error == nil {
		return "(an answer with neither ok nor error)"
	}
	return a.Error.Kind
}

// call sends one request and waits (bounded) for its answer.
func (r *runner) call(req map[string]any, timeout time.Duration) *answer {
	r.t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		r.t.Fatalf("%s runner: write %s: %v\n%s", r.lang, b, err, r.stderr())
	}
	select {
	case line := <-r.lines:
		var a answer
		if err := json.Unmarshal(line, &a); err != nil {
			r.t.Fatalf("%s runner: answer to %s is not JSON: %v: %.500s", r.lang, b, err, line)
		}
		if a.ElapsedMS == nil {
			r.t.Errorf("%s runner: answer to %s has no elapsed_ms", r.lang, b)
		}
		return &a
	case <-r.done:
		r.t.Fatalf("%s runner exited before answering %s\n%s", r.lang, b, r.stderr())
	case <-time.After(timeout):
		r.t.Fatalf("%s runner did not answer %.200s within %v\n%s", r.lang, b, timeout, r.stderr())
	}
	return nil
}

func (r *runner) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.errs.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
