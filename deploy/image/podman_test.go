package image_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/deploy/image"
	"github.com/snowfence/snowfence/internal/testkit/freeport"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// podman runs Debian's podman as root, on a store of the test's own (vfs,
// which needs no overlay support), with cgroupfs and, when installed, runc
// (crun refuses a host whose cgroup v2 hierarchy holds controllers beside
// v1's). scripts/test installs both.
type podman struct {
	t    *testing.T
	args []string
}

func newPodman(t *testing.T) *podman {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		testenv.Missing(t, "podman is not installed (apt-get install podman runc)")
	}
	if os.Geteuid() != 0 {
		testenv.Missing(t, "the image is run by rootful podman: run as root")
	}
	dir := t.TempDir()
	p := &podman{t: t, args: []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
		"--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "file", "--tmpdir", filepath.Join(dir, "tmp")}}
	if _, err := exec.LookPath("runc"); err == nil {
		p.args = append(p.args, "--runtime", "runc")
	}
	t.Cleanup(func() { exec.Command("podman", append(p.args, "system", "reset", "--force")...).Run() })
	return p
}

// run runs podman with args and returns its standard output.
func (p *podman) run(args ...string) (string, error) {
	cmd := exec.Command("podman", append(p.args, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

func (p *podman) must(args ...string) string {
	p.t.Helper()
	out, err := p.run(args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// The image runs in a real container runtime as the image says and as the
// Kubernetes manifests run it: pulled from the OCI layout build.sh wrote,
// started with a read-only root and no tmpfs anywhere, every capability
// dropped, no new privileges, as its own non-root user, its data directory
// a volume. It claims a number on its embedded etcd, answers /readyz,
// /healthz and /livez on the admin listener, mints on the main one, and on
// podman stop (SIGTERM, the image's stop signal) drains and releases its
// number within the grace period, exiting 0 — podman would have killed it
// at the end of the period (137). Ports are loopback ports of the host's
// network (--network host): no network of podman's to set up.
func TestImageRunsInPodman(t *testing.T) {
	p := newPodman(t)
	dir, digest := builtImage(t)
	p.must("pull", "-q", "oci:"+dir+":"+testVersion)
	ref := "localhost/snowfence:" + testVersion
	p.must("tag", strings.TrimSpace(p.must("images", "-q", "--no-trunc")), ref)
	var inspected []struct {
		Digest string
		Config struct {
			User       string
			Entrypoint []string
			StopSignal string
		}
	}
	if err := json.Unmarshal([]byte(p.must("image", "inspect", ref)), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect: %v", err)
	}
	if in := inspected[0]; in.Digest != digest || in.Config.User != "65532:65532" || in.Config.StopSignal != image.StopSignal {
		t.Errorf("podman reads the image as %+v; want digest %s, user 65532:65532, stop signal SIGTERM", in, digest)
	}

	ports, err := freeport.Loopback(4)
	if err != nil {
		t.Fatal(err)
	}
	api, admin := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	var hard syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &hard)
	const grace = 30
	p.must("volume", "create", "snowfence-data")
	id := strings.TrimSpace(p.must("run", "--detach", "--name", "snowfence",
		"--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--network", "host", "--stop-timeout", strconv.Itoa(grace),
		// podman's default limits are above this host's hard limits, which
		// root without CAP_SYS_RESOURCE cannot raise.
		"--ulimit", fmt.Sprintf("nofile=%d:%d", hard.Max, hard.Max), "--ulimit", "nproc=4096:4096",
		"--volume", "snowfence-data:"+image.DataDir,
		"--env", "SNOWFENCE_LISTEN="+api, "--env", "SNOWFENCE_ADMIN_LISTEN="+admin,
		"--env", fmt.Sprintf("SNOWFENCE_EMBEDDED_ETCD_URL=http://127.0.0.1:%d", ports[2]),
		"--env", fmt.Sprintf("SNOWFENCE_EMBEDDED_ETCD_PEER_URL=http://127.0.0.1:%d", ports[3]),
		ref))
	t.Cleanup(func() { p.run("rm", "--force", id) })
	logs := func() string { // the container's stdout and stderr
		out, _ := exec.Command("podman", append(p.args, "logs", id)...).CombinedOutput()
		return string(out)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		if status, _ := get(ctx, "http://"+admin+"/readyz"); status == http.StatusOK {
			break
		}
		if state, _ := p.run("inspect", "--format", "{{.State.Status}}", id); strings.TrimSpace(state) == "exited" {
			t.Fatalf("the container exited before it was ready:\n%s", logs())
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not ready within 2 minutes:\n%s", logs())
		case <-time.After(100 * time.Millisecond): // polling a process in another namespace
		}
	}
	for _, path := range []string{"/healthz", "/livez"} {
		if status, body := get(ctx, "http://"+admin+path); status != http.StatusOK {
			t.Errorf("%s: %d %s; want 200", path, status, body)
		}
	}
	resp, err := http.Post("http://"+api+"/v1/ids?count=3", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var minted struct{ IDs []string }
	json.NewDecoder(resp.Body).Decode(&minted)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(minted.IDs) != 3 {
		t.Errorf("POST /v1/ids?count=3: %d %v; want 3 IDs", resp.StatusCode, minted.IDs)
	}

	// The process, seen from the host: the image's user, no capability.
	pid := strings.TrimSpace(p.must("inspect", "--format", "{{.State.Pid}}", id))
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Uid:\t65532\t65532\t65532\t65532", "Gid:\t65532\t65532\t65532\t65532", "CapEff:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("the container's process: no %q in its status:\n%s", want, status)
		}
	}

	p.must("stop", id) // SIGTERM, then SIGKILL after the stop timeout
	var state struct {
		ExitCode int
		Status   string
	}
	json.Unmarshal([]byte(p.must("inspect", "--format", "{{json .State}}", id)), &state)
	out := logs()
	if state.Status != "exited" || state.ExitCode != 0 {
		t.Errorf("after podman stop: %s, exit %d; want exited 0 (137: killed at the end of the %d s grace period)\n%s", state.Status, state.ExitCode, grace, out)
	}
	for _, want := range []string{`"msg":"draining`, `"msg":"released machine number"`, `"msg":"stopped"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the logs lack %s:\n%s", want, out)
		}
	}
}

// get fetches url and returns the status and body (0 on a failed request).
func get(ctx context.Context, url string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
