package k8sproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/snowfence/snowfence/harness/chaos/etcdproc"
	"github.com/snowfence/snowfence/internal/testkit/storeproc"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
)

// memberEnv set to 1 makes the test binary an etcd member (etcdproc).
const memberEnv = "SNOWFENCE_K8SPROC_ETCD_MEMBER"

func TestMain(m *testing.M) {
	if os.Getenv(memberEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := etcdproc.MemberMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func memberCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), memberEnv+"=1")
	return cmd
}

// TestServer runs the servers as the suite does: a holder's store opened
// through the restricted kubeconfig claims a number; the relay blocked
// keeps it away and unblocked lets it back; a restore of a snapshot takes
// etcd's revision back; a killed API server starts again on its port.
func TestServer(t *testing.T) {
	testenv.KubernetesLater(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	s, err := Start(ctx, Config{Dir: t.TempDir(), EtcdCommand: memberCommand})
	if errors.Is(err, storeproc.ErrMissing) {
		testenv.Missing(t, err.Error())
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer s.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.Restricted(ctx, "chaos-test", kc); err != nil {
		t.Fatalf("Restricted: %v", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := k8sstore.Open(ctx, k8sstore.Config{Namespace: "chaos-test"}, rc)
	if err != nil {
		t.Fatalf("k8sstore.Open through the kubeconfig: %v", err)
	}
	defer st.Close()
	claim := func() error {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		_, err := st.Claim(cctx, lease.ClaimRequest{Holder: "k8sproc-test", Range: lease.Range{Lo: 0, Hi: 1023},
			NowMs: time.Now().UnixMilli(), LeaseFor: time.Minute})
		return err
	}
	if err := claim(); err != nil {
		t.Fatalf("a claim as the restricted account: %v", err)
	}
	backup := filepath.Join(t.TempDir(), "etcd.snapshot")
	if err := s.Snapshot(ctx, backup); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	s.Block()
	if err := claim(); err == nil {
		t.Error("a claim through the blocked relay succeeded")
	}
	s.Unblock()
	if err := claim(); err != nil {
		t.Fatalf("a claim after Unblock: %v", err)
	}
	before, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := s.Restore(ctx, backup)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if restored >= before {
		t.Errorf("etcd restored at revision %d, %d before: want it lower (no --bump-revision), so that revisions repeat", restored, before)
	}
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := s.StartAPIServer(ctx); err != nil {
		t.Fatalf("StartAPIServer after Kill: %v", err)
	}
	if _, err := s.Revision(ctx); err != nil {
		t.Fatal(err)
	}
}
