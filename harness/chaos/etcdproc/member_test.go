//go:build linux

package etcdproc

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/syncbuf"
)

func TestMemberMainRejectsBadFlags(t *testing.T) {
	good := map[string]string{
		"name": "m0", "dir": t.TempDir(), "client-url": "http://127.0.0.1:1",
		"peer-url": "http://127.0.0.1:2", "initial-cluster": "m0=http://127.0.0.1:2",
		"initial-cluster-token": "t",
	}
	args := func(change map[string]string) []string {
		var a []string
		for _, f := range []string{"name", "dir", "client-url", "peer-url", "initial-cluster", "initial-cluster-token", "initial-cluster-state"} {
			v, ok := good[f]
			if c, set := change[f]; set {
				v, ok = c, c != ""
			}
			if ok {
				a = append(a, "--"+f, v)
			}
		}
		return a
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no name", args(map[string]string{"name": ""}), "--name is required"},
		{"no dir", args(map[string]string{"dir": ""}), "--dir is required"},
		{"no client URL", args(map[string]string{"client-url": ""}), "--client-url is required"},
		{"no token", args(map[string]string{"initial-cluster-token": ""}), "--initial-cluster-token is required"},
		{"bad state", args(map[string]string{"initial-cluster-state": "old"}), `--initial-cluster-state is "old"`},
		{"https peer", args(map[string]string{"peer-url": "https://127.0.0.1:2"}), "--peer-url is"},
		{"no port", args(map[string]string{"client-url": "127.0.0.1"}), "--client-url is"},
		{"unknown flag", append(args(nil), "--bogus"), "flag provided but not defined"},
		{"stray argument", append(args(nil), "extra"), `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout strings.Builder
			err := MemberMain(t.Context(), tt.args, &stdout, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("MemberMain(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

// TestMemberMainPrintsOnlyReady runs a one-member cluster in this process:
// MemberMain prints its ready line and nothing else, serves, and returns
// nil when its context ends.
func TestMemberMainPrintsOnlyReady(t *testing.T) {
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- MemberMain(ctx, []string{
			"--name", "solo", "--dir", filepath.Join(t.TempDir(), "solo"),
			"--client-url", client, "--peer-url", peer,
			"--initial-cluster", "solo=" + peer, "--initial-cluster-token", "solo",
		}, &stdout, &stderr)
	}()
	want := ReadyPrefix + client + "\n"
	deadline := time.Now().Add(30 * time.Second)
	for stdout.String() != want {
		select {
		case err := <-done:
			t.Fatalf("MemberMain returned %v before it was ready; stdout %q, stderr %s", err, stdout.String(), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("stdout = %q after 30s, want %q", stdout.String(), want)
		}
		time.Sleep(10 * time.Millisecond) // poll: only etcd can become ready
	}
	cli := newClient(t, client)
	put(t, cli, "k", "v")
	if got, _ := get(t, cli, "k"); got != "v" {
		t.Errorf("Get k = %q, want v", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("MemberMain after cancel = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("MemberMain did not return 30s after its context ended")
	}
	if got := stdout.String(); got != want {
		t.Errorf("stdout = %q, want exactly %q", got, want)
	}
}
