package systemd_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/service"
)

// unit is a unit file's assignments, in order, by section and key.
type unit map[string][]string

// readUnit parses snowfence.service: "[Section]" lines, "Key=value"
// assignments (a key may repeat), comments and blank lines.
func readUnit(t *testing.T) unit {
	t.Helper()
	f, err := os.Open("snowfence.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, section := unit{}, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("snowfence.service: %q is not Key=value", line)
			}
			u[section+"."+k] = append(u[section+"."+k], v)
		}
	}
	return u
}

// one is the value of a key assigned once.
func (u unit) one(t *testing.T, key string) string {
	t.Helper()
	v := u[key]
	if len(v) != 1 {
		t.Fatalf("%s: assigned %d times; want once", key, len(v))
	}
	return v[0]
}

// verifiable writes the unit into a directory of the test's own with its
// ExecStart's binary replaced by exe (systemd-analyze verify requires an
// executable there; nothing else changes) and returns its path.
func verifiable(t *testing.T, exe string) string {
	t.Helper()
	b, err := os.ReadFile("snowfence.service")
	if err != nil {
		t.Fatal(err)
	}
	const start = "\nExecStart=/usr/local/bin/snowfence "
	if !strings.Contains(string(b), start) {
		t.Fatalf("snowfence.service has no %q", strings.TrimSpace(start))
	}
	p := filepath.Join(t.TempDir(), "snowfence.service")
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), start, "\nExecStart="+exe+" ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func systemdAnalyze(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		testenv.Missing(t, "systemd-analyze is not installed (Debian's systemd)")
	}
}

// systemd-analyze verify finds nothing to say of the unit: no unknown or
// misspelt setting, no bad value, no missing dependency.
func TestUnitVerify(t *testing.T) {
	systemdAnalyze(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", verifiable(t, exe)).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// maxExposure is the highest exposure systemd-analyze security may score
// the unit: what it scores now (1.5 on systemd 252). The points left are
// the network a service needs (AF_INET, no PrivateNetwork or IP allow
// list), AF_NETLINK and AF_UNIX, the host's root, and reading the clock's
// state (adjtimex, no ProtectClock), which the clock policy must.
const maxExposure = 1.5

// systemd-analyze security scores the unit's sandbox at maxExposure or
// less (so that loosening it fails here), and reports it.
func TestUnitSecurity(t *testing.T) {
	systemdAnalyze(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("systemd-analyze", "security", "--offline=true", "--threshold="+strconv.FormatFloat(maxExposure*10, 'f', 0, 64), verifiable(t, exe))
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for snowfence\.service: ([0-9.]+) (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no overall exposure (%v):\n%s", err, out)
	}
	score, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security --offline=true: exposure %.1f %s", score, m[2])
	if err != nil || score > maxExposure {
		t.Errorf("exposure %.1f (%v); at most %.1f:\n%s", score, err, maxExposure, out)
	}
}

// The unit runs serve as the issue asks and the drain needs: a dynamic
// user with a state directory, where the embedded etcd's data (and its
// high-water file beside it) go; the system read-only; restarted on
// failure but not on a usage error; a stop timeout longer than the drain
// (serve's --shutdown-timeout, read from the binary's own help, and the
// release's service.ReleaseTimeout); no capabilities; and not
// ProtectClock, which would forbid the clock policy's read of the clock.
func TestUnitSettings(t *testing.T) {
	u := readUnit(t)
	want := map[string]string{
		"Service.Type":                     "exec",
		"Service.DynamicUser":              "yes",
		"Service.StateDirectory":           "snowfence",
		"Service.StateDirectoryMode":       "0700",
		"Service.WorkingDirectory":         "%S/snowfence",
		"Service.ProtectSystem":            "strict",
		"Service.Restart":                  "on-failure",
		"Service.RestartPreventExitStatus": "2",
		"Service.KillSignal":               "SIGTERM",
		"Service.CapabilityBoundingSet":    "",
		"Service.AmbientCapabilities":      "",
		"Service.NoNewPrivileges":          "yes",
		"Service.PrivateTmp":               "yes",
		"Service.ProtectHome":              "yes",
		"Service.PrivateDevices":           "yes",
		"Service.UMask":                    "0077",
		"Service.EnvironmentFile":          "/etc/snowfence/snowfence.env",
		"Service.Environment":              "SNOWFENCE_DATA_DIR=%S/snowfence/etcd",
	}
	for k, v := range want {
		if got := u.one(t, k); got != v {
			t.Errorf("%s=%s; want %s", k, got, v)
		}
	}
	if v, ok := u["Service.ProtectClock"]; ok && !slices.Equal(v, []string{"no"}) {
		t.Errorf("ProtectClock=%v: it forbids adjtimex, and a holder that cannot read the clock's state refuses every ID under clock policy require", v)
	}
	stop, err := time.ParseDuration(u.one(t, "Service.TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v (give it with a unit, as 30s)", err)
	}
	drain := shutdownTimeout(t) + service.ReleaseTimeout
	if stop <= drain+5*time.Second {
		t.Errorf("TimeoutStopSec=%s: not longer than the drain (--shutdown-timeout + release = %s) and the embedded etcd's stop (5 s)", stop, drain)
	}
	if !strings.HasPrefix(u.one(t, "Service.ExecStart"), "/usr/local/bin/snowfence serve") {
		t.Errorf("ExecStart=%s", u.one(t, "Service.ExecStart"))
	}
}

// shutdownTimeout is serve's --shutdown-timeout default, from the built
// binary's help (the unit's environment file does not set it).
func shutdownTimeout(t *testing.T) time.Duration {
	t.Helper()
	out, _ := exec.Command(snowfence(t), "serve", "-h").CombinedOutput()
	m := regexp.MustCompile(`-shutdown-timeout duration\n\s+.*\(default ([0-9a-z.]+)\)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("snowfence serve -h shows no default for -shutdown-timeout:\n%s", out)
	}
	d, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
