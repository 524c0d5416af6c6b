package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/freeport"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// The README's commands, run as a new user would run them (TestREADME):
// every command the README shows is run here, in the order shown, and its
// output compared with what the README prints after it, in shape.

// A readmeCmd is one command of the README: the text after "$ " (or a
// bare line of a block that shows no prompt), the README line it is on,
// and the output the README prints after it (none for a bare line).
type readmeCmd struct {
	line int
	text string
	want []string
}

// readmeCommands reads the commands of every fenced block of the README
// that is not Go source. A line continued with "\" is joined to the next.
func readmeCommands(t *testing.T, path string) []readmeCmd {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []readmeCmd
	in, lang := false, ""
	var cont *readmeCmd
	first := 0 // the first command of the block
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			in, lang, cont, first = !in, strings.TrimPrefix(line, "```"), nil, len(cmds)
			continue
		}
		if !in || lang == "go" {
			continue
		}
		if cont != nil {
			cont.text += " " + strings.TrimSuffix(strings.TrimSpace(line), "\\")
			if !strings.HasSuffix(line, "\\") {
				cont = nil
			}
			continue
		}
		text, prompt := strings.CutPrefix(line, "$ ")
		isCmd := prompt || readmeBare.MatchString(line)
		if !prompt && blockHasPrompt(b, i) {
			isCmd = false // a prompt block: its other lines are output
		}
		if !isCmd {
			if len(cmds) > first && strings.TrimSpace(line) != "" {
				c := &cmds[len(cmds)-1]
				c.want = append(c.want, line)
			}
			continue
		}
		cmds = append(cmds, readmeCmd{line: i + 1, text: strings.TrimSuffix(text, "\\")})
		if strings.HasSuffix(line, "\\") {
			cont = &cmds[len(cmds)-1]
		}
	}
	return cmds
}

// blockHasPrompt reports whether the fenced block around line i (from 0)
// of the README shows its commands after a "$ " prompt.
func blockHasPrompt(readme []byte, i int) bool {
	ls := strings.Split(string(readme), "\n")
	start, end := i, i
	for start > 0 && !strings.HasPrefix(ls[start], "```") {
		start--
	}
	for end < len(ls) && !strings.HasPrefix(ls[end], "```") {
		end++
	}
	return slices.ContainsFunc(ls[start:end], func(l string) bool { return strings.HasPrefix(l, "$ ") })
}

// readmeBare matches a command shown without a prompt (a block of
// commands to copy): the programs the README runs.
var readmeBare = regexp.MustCompile(`^(go run |go install |snowfence |scripts/|bench/|clients/)`)

// readmeShape turns a line the README prints into a pattern the real
// output must match: what differs from run to run — timestamps,
// durations, IDs and other long numbers, UUIDs, public IDs, the holder's
// host and the countdown to the fence — matches any such value, and "…"
// anything; the rest (machine numbers, tokens, counts, codes, messages)
// must be as printed.
func readmeShape(line string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^\s*`)
	rest := strings.TrimSpace(line)
	for rest != "" {
		loc, kind := readmeVarying(rest)
		if loc == nil {
			b.WriteString(readmeLiteral(rest))
			break
		}
		b.WriteString(readmeLiteral(rest[:loc[0]]))
		b.WriteString(kind)
		rest = rest[loc[1]:]
	}
	b.WriteString(`\s*$`)
	return regexp.MustCompile(b.String())
}

// readmeLiteral is the pattern of text the output must hold as printed,
// but for the width of the spaces between columns.
func readmeLiteral(s string) string {
	return readmeSpaces.ReplaceAllLiteralString(regexp.QuoteMeta(s), `\s+`)
}

var readmeSpaces = regexp.MustCompile(` +`)

// readmeVaries are the values that differ from run to run, each with the
// pattern that matches any of them, in the order they are looked for.
var readmeVaries = []struct {
	re   *regexp.Regexp
	kind string
}{
	{regexp.MustCompile(`…`), `.*`},
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`), `\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`},
	{regexp.MustCompile(`order_[0-9a-z]{20,}`), `order_[0-9a-z]{20,}`},
	// A holder, with the token beside it in a table (either side).
	{regexp.MustCompile(`(\b\d+\s+)?[\w.-]+/pid-\d+/\d+(/k\d+)?(\s+\d+\b)?`), `(\d+\s+)?\S+/pid-\d+/\d+(/k\d+)?(\s+\d+)?`},
	{regexp.MustCompile(`\bhost\s+\S+`), `host\s+\S+`},
	{regexp.MustCompile(`\bpid\s+\d+`), `pid\s+\d+`},
	{regexp.MustCompile(`\b[0-9a-f]{12,16}\b`), `[0-9a-f]{12,16}`}, // an etcd lease ID (hex, leading zeros dropped)
	{regexp.MustCompile(`\b\d+(\.\d+)?(ms|s)\b`), `\d+(\.\d+)?(ms|s)`},
	{regexp.MustCompile(`"until_fence_ms":\d+`), `"until_fence_ms":\d+`},
	{regexp.MustCompile(`token\s+\d+`), `token\s+\d+`}, // the etcd revision of a claim
	{regexp.MustCompile(`\d{5,}`), `\d{5,}`},
}

// readmeVarying finds the first value in s that differs from run to run.
func readmeVarying(s string) ([]int, string) {
	var best []int
	kind := ""
	for _, v := range readmeVaries {
		if loc := v.re.FindStringIndex(s); loc != nil && (best == nil || loc[0] < best[0]) {
			best, kind = loc, v.kind
		}
	}
	return best, kind
}

// readmeRun is the state of one run of the README: its directory, the
// environment every command gets, the serve processes started, and the
// README's values mapped to those this run printed in their place.
type readmeRun struct {
	t   *testing.T
	dir string
	// root is the repository, where the clients' examples run from.
	root   string
	env    []string
	subst  map[string]string
	served []*readmeServe
	// serving is the README's text of the serve running.
	serving string
}

// readmeServe is a snowfence serve the README started.
type readmeServe struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan error
}

func (s *readmeServe) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func (s *readmeServe) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

// substitute replaces the README's values in text with this run's.
func (r *readmeRun) substitute(text string) string {
	keys := make([]string, 0, len(r.subst))
	for k := range r.subst {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) }) // longest first
	for _, k := range keys {
		text = strings.ReplaceAll(text, k, r.subst[k])
	}
	return text
}

// learn maps the values the README shows in want to those got printed in
// their place (an ID minted, a public ID sealed), so that a later command
// naming the README's value names this run's.
func (r *readmeRun) learn(want, got string) {
	for _, v := range readmeVaries[1:] {
		ws, gs := v.re.FindAllString(want, -1), v.re.FindAllString(got, -1)
		if len(ws) != len(gs) {
			continue
		}
		for i, w := range ws {
			if _, ok := r.subst[w]; !ok && w != gs[i] {
				r.subst[w] = gs[i]
			}
		}
	}
}

// run runs one command of the README and compares its output.
func (r *readmeRun) run(c readmeCmd) {
	t := r.t
	text := r.substitute(c.text)
	if strings.Contains(text, " serve") && !strings.Contains(text, "serve -h") {
		r.serve(c, text)
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", text)
	cmd.Dir, cmd.Env = r.dir, r.env
	if strings.Contains(text, "clients/") {
		cmd.Dir = r.root // a client's example, run as its README says: from the repository
	}
	out, err := cmd.CombinedOutput()
	if err != nil && !readmeMayFail(c) {
		t.Errorf("README.md:%d: %s: %v\n%s", c.line, c.text, err, out)
		return
	}
	r.compare(c, string(out))
}

// readmeMayFail reports whether the README shows a command whose exit
// status says it found something: snowfence dups exits 1 when it found
// duplicates, which the README's example plants.
func readmeMayFail(c readmeCmd) bool {
	return strings.Contains(c.text, "snowfence dups") && slices.ContainsFunc(c.want, func(s string) bool { return strings.Contains(s, "duplicates found") })
}

// compare checks out against the lines the README shows after c, in
// shape and in order, and learns the values this run printed.
func (r *readmeRun) compare(c readmeCmd, out string) {
	got := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(c.want) == 0 {
		return
	}
	if !r.match(c.want, got) {
		r.t.Errorf("README.md:%d: %s: the output\n%s\ndoes not have the README's shape\n%s", c.line, c.text, out, strings.Join(c.want, "\n"))
	}
}

// match reports whether got has the shape of want, a README line "…"
// standing for any number of lines, and learns the values of the lines
// that matched one of want's.
func (r *readmeRun) match(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "…" {
		for i := 0; i <= len(got); i++ {
			if r.match(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	if len(got) == 0 || !readmeShape(r.substitute(want[0])).MatchString(got[0]) || !r.match(want[1:], got[1:]) {
		return false
	}
	r.learn(want[0], got[0])
	return true
}

// serve starts a snowfence serve the README shows, in the background, and
// waits (bounded) until every line the README prints after it has been
// printed — in any order: they come from two streams.
func (r *readmeRun) serve(c readmeCmd, text string) {
	t := r.t
	s := &readmeServe{done: make(chan error, 1)}
	s.cmd = exec.Command("sh", "-c", readmeExec(text))
	s.cmd.Dir, s.cmd.Env = r.dir, r.env
	s.cmd.Stdout, s.cmd.Stderr = s, s
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("README.md:%d: %s: %v", c.line, c.text, err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	r.served = append(r.served, s)
	r.awaitServe(s, c)
}

// awaitServe waits (bounded) until s has printed every line the README
// shows after c — in any order: they come from two streams.
func (r *readmeRun) awaitServe(s *readmeServe, c readmeCmd) {
	t := r.t
	want := c.want
	if len(want) == 0 {
		want = []string{"listening on …"}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		missing := ""
		for _, w := range want {
			w = r.substitute(w)
			if !slices.ContainsFunc(strings.Split(s.output(), "\n"), readmeShape(w).MatchString) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		select {
		case err := <-s.done:
			s.done <- err // for stopServes
			t.Fatalf("README.md:%d: %s exited (%v) before printing\n\t%s\n%s", c.line, c.text, err, missing, s.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("README.md:%d: %s did not print within a minute\n\t%s\n%s", c.line, c.text, missing, s.output())
		}
		time.Sleep(50 * time.Millisecond) // polling its output, bounded above
	}
}

// readmeExec is text as a shell command that execs the program (so that
// a signal reaches it), after any VAR=value words before it.
func readmeExec(text string) string {
	if i := strings.Index(text, "snowfence"); i > 0 && strings.Contains(text[:i], "=") {
		return "export " + text[:i] + "; exec " + text[i:]
	}
	return "exec " + text
}

// stopServes stops every serve started, as SIGTERM does, and requires a
// clean exit.
func (r *readmeRun) stopServes() {
	for _, s := range r.served {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-s.done:
			if err != nil {
				r.t.Errorf("a serve the README started exited with %v after SIGTERM\n%s", err, s.output())
			}
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			r.t.Errorf("a serve the README started did not stop within 30 s of SIGTERM")
		}
	}
	r.served, r.serving = nil, ""
}

// lines reads a file's lines.
func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// readmeKeys is the public-ID keyset the README's examples were sealed
// with (a key for examples only: never use it).
const readmeKeys = `{"keys": {"1": {"status": "primary", "key": "000102030405060708090a0b0c0d0e0f"}}}`

// readmeExempt are the commands the README shows that this test does not
// run, each with why.
var readmeExempt = map[string]string{
	"scripts/test": "the command that runs this test (.ci/run runs exactly it)",
}

// TestREADME runs every command of README.md, in order, as a new user
// would after its install step (go install, run for real into the test's
// own bin; go run is the same program, built once), in a directory of its
// own, with the servers the README names started for real — the embedded
// etcd of serve, the test PostgreSQL and dynalite for the lease tables, a
// TLS etcd for the fleet's command — and compares each output with the
// README's in shape (readmeShape). The benchmark commands it checks are
// run by scripts/test after the tests, on their quickest settings (the
// load tests take both cores). Values the README
// names that one run cannot reproduce (an address, a table, the etcd
// endpoints and files of the fleet example) are replaced by this run's;
// an ID or public ID printed by one command and named by a later one is
// followed. A command the README adds is run from then on: there is no
// list to keep.
func TestREADME(t *testing.T) {
	t.Parallel() // its serves wait out their notice windows beside the other tests
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pg := testenv.PostgresURL(t)
	dyn := testenv.DynamoDBEndpoint(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	os.WriteFile(filepath.Join(work, "keys.json"), []byte(readmeKeys), 0o600)
	ports, err := freeport.Loopback(2)
	if err != nil {
		t.Fatal(err)
	}
	listen, embedded := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	etcdTLS, files := etcdtest.StartTLS(t)
	for name, src := range map[string]string{"ca.pem": files.CA, "client.pem": files.ClientCert, "client-key.pem": files.ClientKey} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(work, name), b, 0o600)
	}
	table := fmt.Sprintf("readme_%d", time.Now().UnixNano())
	r := &readmeRun{t: t, dir: work, root: root, subst: map[string]string{
		"go run ./cmd/snowfence": binary(t), // the same program, built once
		"localhost:8080":         listen,
		"127.0.0.1:8080":         listen,
		"127.0.0.1:2379":         embedded,
		"postgres://…/ids":       pg + " --postgres-table " + table,
		"--aws-region eu-west-1": "--aws-region eu-west-1 --dynamodb-endpoint " + dyn + " --dynamodb-table " + strings.ReplaceAll(table, "_", "-"),
		"https://etcd-1:2379,https://etcd-2:2379,https://etcd-3:2379": etcdTLS,
	}}
	// A new user's environment: none of the tests' own variables (the
	// test build's table bound, the clock policy TestMain relaxes for
	// this machine's unsynchronised clock is kept: the README's serve
	// on the embedded etcd warns by default anyway).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, testbound.EnvMaxSelfFence+"=") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "GOWORK=") {
			r.env = append(r.env, kv)
		}
	}
	r.env = append(r.env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOWORK=off")
	t.Cleanup(r.stopServes)
	for _, c := range readmeCommands(t, filepath.Join(root, "README.md")) {
		if why, ok := readmeExempt[strings.Fields(c.text)[0]]; ok {
			t.Logf("README.md:%d: %s: not run here: %s", c.line, c.text, why)
			continue
		}
		if strings.HasPrefix(c.text, "bench/") {
			// scripts/test runs the benchmarks after the tests, on their
			// quickest settings (the load tests take both cores): it must
			// run this one.
			script, err := os.ReadFile(filepath.Join(root, "scripts", "test"))
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`(?m)^[A-Z_=0-9a-z. ]*` + regexp.QuoteMeta(strings.Fields(c.text)[0]) + ` `).Match(script) {
				t.Errorf("README.md:%d: %s: scripts/test does not run it", c.line, c.text)
			}
			continue
		}
		if strings.HasPrefix(c.text, "go install ") {
			// The README's install step, for real, into this run's bin:
			// built with the tests' table bound (GOFLAGS), which only
			// the lease-table serves below use (with the bound's
			// variable; a new user's binary has no such build tag).
			cmd := exec.CommandContext(t.Context(), "sh", "-c", c.text)
			cmd.Dir = root
			cmd.Env = append(r.env, "GOBIN="+bin, "GOFLAGS=-buildvcs=false -tags=snowfence_testbound")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("README.md:%d: %s: %v\n%s", c.line, c.text, err, out)
			}
			continue
		}
		if i := strings.Index(c.text, " #"); i >= 0 {
			c.text = strings.TrimSpace(c.text[:i]) // the README's comment: flags go before it
		}
		if strings.Contains(c.text, "orders.csv") {
			// The README's export: its first ID twice, and another.
			id := r.substitute("120432891014828032")
			os.WriteFile(filepath.Join(work, "orders.csv"), []byte("id\n"+id+"\n"+id+"\n97301141913751557\n"), 0o600)
		}
		if strings.Contains(c.text, " serve") && c.text == r.serving && len(r.served) > 0 {
			r.awaitServe(r.served[len(r.served)-1], c) // shown twice: the one running
			continue
		}
		if strings.Contains(c.text, " serve") {
			r.stopServes() // one at a time, on the README's address
			r.serving = c.text
			c.text += " --listen " + listen
			if !strings.Contains(c.text, "--etcd-endpoints") {
				c.text += " --embedded-etcd-url http://" + embedded
			}
			if strings.Contains(c.text, "--lease-store") {
				// A lease table's claim waits 4 min 40 s before its
				// first ID: this run's holders share the tests' bound
				// (internal/testbound), so that it waits 23 s.
				c.text = testbound.EnvMaxSelfFence + "=" + e2eTableMaxSelfFence.String() + " " + c.text + " --self-fence " + e2eTableMaxSelfFence.String()
			}
			if !strings.Contains(c.text, "--lease-store") && !strings.Contains(c.text, "--etcd-endpoints") {
				// The README's first holder: machine 869 as it shows,
				// and the public-ID keys its examples were sealed with.
				c.text += " --machines 869-869 --public-id-keys keys.json --public-id-open-without-tls"
			}
		}
		r.run(c)
	}
}

// TestREADMENamesWhatScriptsTestInstalls: every Debian and npm package
// scripts/test (and the service scripts it runs) may install is named in
// the README, which says what the test command installs.
func TestREADMENamesWhatScriptsTestInstalls(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]bool{}
	patterns := []*regexp.Regexp{
		regexp.MustCompile(`missing\+=\(([\w@/.-]+)\)`),
		regexp.MustCompile(`apt-get install -y -qq( --no-install-recommends)? ([a-z][\w.-]+)`),
		regexp.MustCompile(`npm install [^"]*"(@?[\w/.-]+)@`),
	}
	scripts, _ := filepath.Glob("../../scripts/services/*.sh")
	for _, f := range append(scripts, "../../scripts/test") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range patterns {
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				pkgs[m[len(m)-1]] = true
			}
		}
	}
	if len(pkgs) < 5 {
		t.Fatalf("found only %v in scripts/test: the patterns no longer match how it installs", pkgs)
	}
	for p := range pkgs {
		if !strings.Contains(string(readme), "`"+p+"`") {
			t.Errorf("scripts/test may install %s, which the README does not name", p)
		}
	}
}

// readmeExampleLangs are the languages of the README's code blocks that
// show a client's example program.
var readmeExampleLangs = map[string]bool{"java": true, "python": true, "js": true, "ts": true, "typescript": true}

// TestREADMEClientExamples: each client example the README shows (a code
// block in Java, Python or JavaScript) is a file of the repository, named
// in the block's first line, shown whole and as it is — and that file is
// what the README's command after it runs (TestREADME runs the command,
// against the README's serve).
func TestREADMEClientExamples(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	found := 0
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok || !readmeExampleLangs[lang] {
			continue
		}
		start := i + 1
		end := start
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		i = end
		first := strings.TrimSpace(lines[start])
		name := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(first, "//"), "#"))
		if !strings.HasPrefix(name, "clients/") {
			t.Errorf("README.md:%d: a %s block's first line names no file of clients/ (%q)", start+1, lang, first)
			continue
		}
		file, err := os.ReadFile(filepath.Join("../..", name))
		if err != nil {
			t.Errorf("README.md:%d: %v", start+1, err)
			continue
		}
		shown := strings.Join(lines[start:end], "\n") + "\n"
		if shown != string(file) {
			t.Errorf("README.md:%d: the block is not %s as it is; copy the file into the README", start+1, name)
		}
		// The command that runs it: a later "$ " line naming its
		// client's directory (clients/<language>), before the next
		// code block of an example.
		dir := strings.Join(strings.SplitN(name, "/", 3)[:2], "/")
		ran := false
		for j := end + 1; j < len(lines); j++ {
			if l, ok := strings.CutPrefix(lines[j], "```"); ok && readmeExampleLangs[l] {
				break
			}
			if strings.HasPrefix(lines[j], "$ ") && strings.Contains(lines[j], dir+"/") {
				ran = true
				break
			}
		}
		if !ran {
			t.Errorf("README.md:%d: no command after the block runs %s", start+1, name)
		}
		found++
	}
	if found < 3 {
		t.Errorf("the README shows %d client examples; want Java, Python and Node", found)
	}
}
