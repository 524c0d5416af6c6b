package etcdstore_test

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// freePort is a loopback port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// copyDataDir copies an etcd data directory from one place to another.
func copyDataDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		if filepath.Base(p) == "snowfence.lock" {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rawClient is an etcd client on eps, closed when t ends.
func rawClient(t *testing.T, eps []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestEmbeddedRestartedInProcessOnRestoredDir: a keeper with a high-water
// file, on an embedded etcd restarted in its process on a restored data
// directory, still waits the claim's notice window. An embedded etcd can
// be restored while its process runs:
// embedetcd.Server.Close and embedetcd.Start are exported, so a process can
// stop its etcd, put the data directory back from a backup (here one taken
// before any claim) and start it again on the same client URL, while a
// holder of the first server (another keeper of this process, or another
// process of the host on the client URL) still issues. A keeper started on
// the new server with its high-water file must still wait the claim's
// notice window: a waiver for keepers with a high-water file on an
// in-process etcd (tried, and backed out) let it mint 800 of 4,900 IDs a
// second time (an adversarial review found it).
func TestEmbeddedRestartedInProcessOnRestoredDir(t *testing.T) {
	restartInProcess(t, true, false)
}

// TestEmbeddedStaleHighWaterAfterKeeperClose: a high-water file left below
// another holder's IDs by its own keeper's clean Close does not waive the
// notice window after an in-process restore. The process's own
// keeper (with the server's high-water file) ran and closed cleanly, while
// the embedded etcd went on serving another holder A of the host for 20 s
// more; the file follows its own keeper's marks, not the store's, so it
// stayed 20 s below A's IDs. The etcd stops, its directory is put back, it
// starts again, and a keeper loading that file claims A's number: it must
// wait the notice window (the waiver minted 800 of 5,000 IDs twice).
func TestEmbeddedStaleHighWaterAfterKeeperClose(t *testing.T) {
	restartInProcess(t, true, true)
}

// TestEmbeddedRestartedInProcessControl is the same without a
// high-water file for B.
func TestEmbeddedRestartedInProcessControl(t *testing.T) {
	restartInProcess(t, false, false)
}

// restartInProcess plays the in-process restore of an embedded etcd: with
// a high-water file for B (withHW), one left stale by its own keeper's
// Close (staleFile).
func restartInProcess(t *testing.T, withHW, staleFile bool) {
	base := t.TempDir()
	dir, backup := filepath.Join(base, "data"), filepath.Join(base, "backup")
	url := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	peer := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	cfg := embedetcd.Config{Dir: dir, ClientURL: url, PeerURL: peer}

	// The backup: the directory with etcd data and no claim in it.
	srv0, err := embedetcd.Start(ctxFor(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv0.Close()
	copyDataDir(t, dir, backup)

	cfg1 := cfg
	if staleFile {
		cfg1.HighWaterAt = time.Now().Add(-time.Hour) // the file exists, from long ago
	}
	srv1, err := embedetcd.Start(ctxFor(t), cfg1)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Truncate(time.Second)
	prefix := prefixFor(t)
	if staleFile {
		// The process's own keeper: claims 1, issues, closes.
		clk0 := fakeclock.New(t0)
		k0 := startKeeper(t, rawClient(t, srv1.Endpoints()), prefix, clk0, lease.KeeperConfig{
			Holder: "K0", Range: &lease.Range{Lo: 1, Hi: 1}, HighWater: srv1.HighWater(),
		})
		k0.issuing()
		k0.mint(10)
		if err := k0.k.Close(ctxFor(t), k0.g.LastIssued()); err != nil {
			t.Fatal(err)
		}
	}
	clkA := fakeclock.New(t0)
	// A: a holder with the largest self-fence the store allows (no
	// HighWater: e.g. another process of the host on the client URL).
	a := startKeeper(t, rawClient(t, srv1.Endpoints()), prefix, clkA, lease.KeeperConfig{
		Holder: "A", Range: &lease.Range{Lo: 9, Hi: 9}, SelfFence: 6360 * time.Millisecond,
	})
	a.issuing()
	a.mint(100)
	if staleFile {
		for range 80 { // 20 s: A renews on; nobody raises the file
			a.step(250 * time.Millisecond)
		}
		a.mint(100)
	}

	// The process stops its etcd, restores the directory, starts it again
	// on the same client URL. A still runs.
	srv1.Close()
	copyDataDir(t, backup, dir)
	cfg2 := cfg
	if !staleFile {
		cfg2.HighWaterAt = clkA.Time() // "now", as the docs advise
	}
	srv2, err := embedetcd.Start(ctxFor(t), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv2.Close() })

	clkB := fakeclock.New(clkA.Time())
	cliB := rawClient(t, srv2.Endpoints())
	kcB := lease.KeeperConfig{Holder: "B", Range: &lease.Range{Lo: 9, Hi: 9}}
	if withHW {
		kcB.HighWater = srv2.HighWater()
	}
	b := startKeeper(t, cliB, prefix, clkB, kcB)
	claimed := clkB.Now().WallMs
	g, _ := b.k.Grant()
	t.Logf("B claimed %d at %s, grant starts %s (claim + notice would be %s)", b.k.Status().Machine, msStr(claimed),
		msStr(g.StartMs), msStr(claimed+etcdstore.MaxNoticeWindow.Milliseconds()))
	for range 40 {
		a.tryMint(100)
		b.tryMint(100)
		a.step(250 * time.Millisecond)
		b.step(250 * time.Millisecond)
	}
	checkNoDuplicates(t, a, b)
	if len(b.ids) > 0 {
		if first := snowfence.V1().TimeOf(b.ids[0]).UnixMilli(); first < claimed+etcdstore.MaxNoticeWindow.Milliseconds() {
			t.Errorf("B's first ID at %s, within the notice window of its claim (%s): the waiver applied to a store restored while the process ran",
				msStr(first), msStr(claimed))
		}
	}
}
