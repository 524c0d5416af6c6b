package systemd_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
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

	"github.com/snowfence/snowfence/internal/testkit/freeport"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// snowfence builds the snowfence binary as deploy/image/build.sh does
// (static, -trimpath), once per test binary.
func snowfence(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "snowfence-systemd-test-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "snowfence")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -buildid= -X main.version=test", "-o", built.path, "./cmd/snowfence")
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build ./cmd/snowfence: %v\n%s", built.err, built.out)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// syscallGroup expands a systemd system call group (@name), as this host's
// systemd defines it, into system call names.
func syscallGroup(t *testing.T, group string) []string {
	t.Helper()
	out, err := exec.Command("systemd-analyze", "syscall-filter", group).Output()
	if err != nil {
		t.Fatalf("systemd-analyze syscall-filter %s: %v", group, err)
	}
	var calls []string
	for _, line := range strings.Split(string(out), "\n")[1:] {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "@"):
			calls = append(calls, syscallGroup(t, line)...)
		default:
			calls = append(calls, line)
		}
	}
	return calls
}

// allowedSyscalls is the unit's SystemCallFilter as systemd applies it: the
// first assignment, not starting with ~, makes an allow list; each later
// one adds its calls, or with ~ takes them away, in order.
func allowedSyscalls(t *testing.T, u unit) map[string]bool {
	t.Helper()
	lines := u["Service.SystemCallFilter"]
	if len(lines) == 0 || strings.HasPrefix(lines[0], "~") {
		t.Fatalf("SystemCallFilter %v: want an allow list first", lines)
	}
	allowed := map[string]bool{}
	for _, line := range lines {
		deny := strings.HasPrefix(line, "~")
		for _, item := range strings.Fields(strings.TrimPrefix(line, "~")) {
			calls := []string{item}
			if strings.HasPrefix(item, "@") {
				calls = syscallGroup(t, item)
			}
			for _, c := range calls {
				allowed[c] = !deny
			}
		}
	}
	return allowed
}

// envFile reads an environment file's assignments.
func envFile(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			env = append(env, line)
		}
	}
	return env
}

// Everything serve does, run as the unit runs it, the unit's sandbox
// allows. serve runs under strace with the unit's environment — the
// example environment file (the embedded etcd: the most it ever does), the
// unit's Environment= with %S a directory of the test's own, the state
// directory its working directory — on loopback ports of the test's
// choosing; it starts, claims, mints (single, batch, UUIDs), answers the
// admin routes and the metrics (the process collector reads /proc), then
// drains on SIGTERM and exits 0. Then every system call it made must be in
// the unit's SystemCallFilter (adjtimex above all: the clock policy reads
// the clock's state with it, and @privileged holds it), every socket's
// family in RestrictAddressFamilies, no mapping both writable and
// executable (MemoryDenyWriteExecute), every file it writes, creates,
// renames or removes inside the state directory (ProtectSystem=strict),
// nothing read under /home or /root (ProtectHome), no device but the few
// PrivateDevices keeps, no new namespace (RestrictNamespaces), and with
// ProcSubset=pid nothing of /proc but processes'.
func TestServeWithinTheSandbox(t *testing.T) {
	systemdAnalyze(t)
	if _, err := exec.LookPath("strace"); err != nil {
		testenv.Missing(t, "strace is not installed (apt-get install strace)")
	}
	u := readUnit(t)
	allowed := allowedSyscalls(t, u)
	families := map[string]bool{}
	for _, f := range strings.Fields(u.one(t, "Service.RestrictAddressFamilies")) {
		families[f] = true
	}
	bin := snowfence(t)

	root := t.TempDir()
	state := filepath.Join(root, "snowfence") // %S/snowfence: StateDirectory
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.Loopback(4)
	if err != nil {
		t.Fatal(err)
	}
	api, admin := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	env := []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"} // what systemd gives a service, and no more
	env = append(env, envFile(t, "snowfence.env")...)
	for _, e := range u["Service.Environment"] {
		env = append(env, strings.ReplaceAll(e, "%S", root))
	}
	env = append(env, // this machine's loopback ports, in place of the example's
		"SNOWFENCE_LISTEN="+api, "SNOWFENCE_ADMIN_LISTEN="+admin,
		fmt.Sprintf("SNOWFENCE_EMBEDDED_ETCD_URL=http://127.0.0.1:%d", ports[2]),
		fmt.Sprintf("SNOWFENCE_EMBEDDED_ETCD_PEER_URL=http://127.0.0.1:%d", ports[3]))
	trace := filepath.Join(root, "trace")
	cmd := exec.Command("strace", "-f", "-qq", "-s", "256", "-o", trace, "--", bin, "serve")
	cmd.Dir, cmd.Env = state, env
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		if status, _ := request(ctx, "GET", "http://"+admin+"/readyz"); status == http.StatusOK {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("serve exited before it was ready: %v\n%s", err, logs.String())
		case <-ctx.Done():
			t.Fatalf("serve not ready within 2 minutes:\n%s", logs.String())
		case <-time.After(100 * time.Millisecond): // polling another process
		}
	}
	for _, r := range []struct{ method, url string }{
		{"POST", "http://" + api + "/v1/ids?count=5"},
		{"POST", "http://" + api + "/v1/ids:batch?count=100"},
		{"POST", "http://" + api + "/v1/uuids?count=3"},
		{"GET", "http://" + api + "/openapi.json"},
		{"GET", "http://" + admin + "/healthz"},
		{"GET", "http://" + admin + "/livez"},
		{"GET", "http://" + admin + "/metrics"},
		{"GET", "http://" + admin + "/v1/status"},
		{"GET", "http://" + admin + "/"},
	} {
		if status, body := request(ctx, r.method, r.url); status != http.StatusOK {
			t.Errorf("%s %s: %d %.300s", r.method, r.url, status, body)
		}
	}
	_, health := request(ctx, "GET", "http://"+admin+"/healthz")
	if !strings.Contains(health, `"clock":{`) {
		t.Errorf("/healthz shows no clock state (adjtimex): %s", health)
	}

	// SIGTERM to serve itself (strace's child), as systemd sends it.
	serve := childOf(t, cmd.Process.Pid)
	if err := syscall.Kill(serve, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("serve did not stop within a minute of SIGTERM:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "released machine number") {
		t.Errorf("no release in the log:\n%s", logs.String())
	}

	checkTrace(t, trace, u, allowed, families, state)
}

// checkTrace holds strace's record to the unit's sandbox.
func checkTrace(t *testing.T, trace string, u unit, allowed, families map[string]bool, state string) {
	t.Helper()
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		call      = regexp.MustCompile(`^\d+ +([a-z0-9_]+)\((.*)`) // strace pads the PID to 5 columns
		socket    = regexp.MustCompile(`^socket\((AF_[A-Z0-9]+)`)
		pathArg   = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
		writeOpen = regexp.MustCompile(`O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND`)
		wx        = regexp.MustCompile(`PROT_[A-Z_|]*PROT_WRITE[A-Z_|]*PROT_EXEC|PROT_EXEC[A-Z_|]*PROT_WRITE`)
		procPid   = regexp.MustCompile(`^/proc/(self|thread-self|\d+)(/|$)`)
	)
	devices := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
	procSubsetPid := slices.Equal(u["Service.ProcSubset"], []string{"pid"})
	seen := map[string]int{}
	denied := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := call.FindStringSubmatch(sc.Text())
		if m == nil {
			continue // a resumed call, a signal, an exit
		}
		name, args := m[1], m[2]
		seen[name]++
		if !allowed[name] && !denied[name] {
			denied[name] = true
			t.Errorf("system call %s is not in the unit's SystemCallFilter (it would fail with EPERM): %s", name, sc.Text())
		}
		if s := socket.FindStringSubmatch(name + "(" + args); s != nil && !families[s[1]] {
			t.Errorf("a socket of family %s, which RestrictAddressFamilies refuses: %s", s[1], sc.Text())
		}
		if (name == "mmap" || name == "mprotect" || name == "pkey_mprotect") && wx.MatchString(args) {
			t.Errorf("a writable and executable mapping, which MemoryDenyWriteExecute refuses: %s", sc.Text())
		}
		if (name == "clone" || name == "clone3" || name == "unshare") && strings.Contains(args, "CLONE_NEW") {
			t.Errorf("a new namespace, which RestrictNamespaces refuses: %s", sc.Text())
		}
		paths := pathArg.FindAllStringSubmatch(args, -1)
		writes := false
		switch name {
		case "open", "openat", "openat2", "creat":
			writes = writeOpen.MatchString(args)
		case "mkdir", "mkdirat", "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "link", "linkat",
			"symlink", "symlinkat", "chmod", "fchmodat", "chown", "fchownat", "truncate", "mknod", "mknodat", "utimensat":
			writes = true
		}
		for _, p := range paths {
			path := p[1]
			if !strings.HasPrefix(path, "/") {
				if strings.Contains(args, "AT_FDCWD") || name == "open" || name == "mkdir" || name == "unlink" {
					path = filepath.Join(state, path) // the working directory
				} else {
					continue // not a path (a buffer's text)
				}
			}
			switch {
			case writes && path != "/dev/null" && path != state && !strings.HasPrefix(path, state+"/"):
				t.Errorf("%s writes %s, outside the state directory: ProtectSystem=strict makes it read-only: %s", name, path, sc.Text())
			case strings.HasPrefix(path, "/home/") || path == "/root" || strings.HasPrefix(path, "/root/"):
				t.Errorf("%s reads %s: ProtectHome hides it: %s", name, path, sc.Text())
			case strings.HasPrefix(path, "/dev/") && !slices.Contains(devices, path):
				t.Errorf("%s opens %s: PrivateDevices leaves only %v: %s", name, path, devices, sc.Text())
			case procSubsetPid && strings.HasPrefix(path, "/proc/") && !procPid.MatchString(path):
				t.Errorf("%s reads %s: ProcSubset=pid hides it: %s", name, path, sc.Text())
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if seen["adjtimex"] == 0 || seen["socket"] == 0 || seen["fdatasync"]+seen["fsync"] == 0 {
		t.Errorf("the trace lacks adjtimex, socket or fsync (%d, %d, %d): it did not see serve run", seen["adjtimex"], seen["socket"], seen["fdatasync"]+seen["fsync"])
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	t.Logf("%d system calls seen, all allowed by the unit: %s", len(names), strings.Join(names, " "))
}

// childOf returns the one child process of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("strace (pid %d) has children %q; want serve alone", pid, f)
	}
	var child int
	fmt.Sscan(f[0], &child)
	return child
}

// request makes one request and returns its status and body (0 on a failed
// request).
func request(ctx context.Context, method, url string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
