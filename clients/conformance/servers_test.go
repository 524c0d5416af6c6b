package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testpki"
)

// servers are the real holders every scenario talks to: three on plain
// HTTP that lease from one etcd (the first one's embedded etcd, which the
// other two use as their external store, so their machine numbers differ
// and the three share one ID space), and a fourth on the same etcd that
// requires a client certificate signed by the test CA.
type servers struct {
	bin   string
	plain []string // base URLs
	mtls  string
	// The client's TLS files: the CA that signed the server's
	// certificate, and a client certificate and key it signed.
	caFile, certFile, keyFile string
}

var (
	fixtureOnce sync.Once
	fixture     *servers
	fixtureErr  error
	fixtureDir  string
	fixtureCmds []*exec.Cmd
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range fixtureCmds {
		c.Process.Kill()
		c.Wait()
	}
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// theServers starts the holders once per test binary (the first test to
// ask waits for them: about the etcd notice window, 8 s) and returns them.
func theServers(t *testing.T) *servers {
	t.Helper()
	fixtureOnce.Do(func() { fixture, fixtureErr = startServers(t) })
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixture
}

var (
	listenLine = regexp.MustCompile(`listening on (https?://127\.0\.0\.1:\d+)`)
	etcdLine   = regexp.MustCompile(`embedded etcd on (http://127\.0\.0\.1:\d+)`)
	readyLine  = regexp.MustCompile(`^machine \d+ .*ready in `)
)

func startServers(t *testing.T) (*servers, error) {
	dir, err := os.MkdirTemp("", "snowfence-conformance-")
	if err != nil {
		return nil, err
	}
	fixtureDir = dir
	s := &servers{bin: filepath.Join(dir, "snowfence")}
	if out, err := exec.Command("go", "build", "-o", s.bin, "../../cmd/snowfence").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/snowfence: %v\n%s", err, out)
	}
	ca := testpki.NewCA(t, "conformance CA")
	s.caFile = ca.Write(t, dir, "ca")
	srvCert, srvKey := ca.Server(t, testpki.Options{CommonName: "ids.test"}).Write(t, dir, "server")
	s.certFile, s.keyFile = ca.Client(t, testpki.Options{CommonName: "conformance client", URIs: []string{"spiffe://conformance/client"}}).Write(t, dir, "client")

	var readies []<-chan struct{}
	first, lines, ready, err := startServe(s.bin, filepath.Join(dir, "d0"), "--embedded-etcd-url", "http://127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	etcd := ""
	for _, l := range lines {
		if m := etcdLine.FindStringSubmatch(l); m != nil {
			etcd = m[1]
		}
	}
	if etcd == "" {
		return nil, fmt.Errorf("serve did not print its embedded etcd's URL: %q", lines)
	}
	s.plain = append(s.plain, first)
	readies = append(readies, ready)
	// The clock policy of a shared store is require; this machine's clock
	// may not say it is synchronised, and no scenario is about clocks.
	shared := []string{"--etcd-endpoints", etcd, "--clock-policy", "warn"}
	for i := 1; i <= 2; i++ {
		u, _, ready, err := startServe(s.bin, filepath.Join(dir, fmt.Sprintf("d%d", i)), shared...)
		if err != nil {
			return nil, err
		}
		s.plain = append(s.plain, u)
		readies = append(readies, ready)
	}
	s.mtls, _, ready, err = startServe(s.bin, filepath.Join(dir, "d3"), append(shared, "--tls-cert", srvCert, "--tls-key", srvKey, "--client-ca", s.caFile)...)
	if err != nil {
		return nil, err
	}
	readies = append(readies, ready)
	for _, r := range readies {
		select {
		case <-r:
		case <-time.After(60 * time.Second):
			return nil, fmt.Errorf("a holder did not say it was ready within 60 s of listening")
		}
	}
	return s, nil
}

// startServe starts snowfence serve and returns its base URL once it has
// printed it, the lines it printed before, and a channel closed when it
// prints that it is ready (it has waited out its claim's notice window and
// issues: "machine N (…), ready in …").
func startServe(bin, dataDir string, extra ...string) (string, []string, <-chan struct{}, error) {
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, nil, err
	}
	fixtureCmds = append(fixtureCmds, cmd)
	found := make(chan string, 1)
	ready := make(chan struct{})
	var lines []string
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
			if readyLine.MatchString(sc.Text()) {
				close(ready)
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case u := <-found:
		mu.Lock()
		defer mu.Unlock()
		return u, append([]string(nil), lines...), ready, nil
	case <-time.After(60 * time.Second):
		return "", nil, nil, fmt.Errorf("serve %q did not print its address within 60 s:\n%s", args, stderr.String())
	}
}

// deadPort is a loopback port nothing listens on: reserved by listening,
// then closed, so connections to it are refused.
func deadPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
