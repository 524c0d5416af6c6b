package etcdstore_test

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestStore runs the checks of what is particular to etcd — its leases,
// its keys, what it accepts beyond the conformance suite — against an
// embedded etcd. The behaviour every store shares is checked by
// TestConformance.
func TestStore(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	runChecks(t, c.Client(t))
}

// TestInteropDebianEtcd runs the conformance suite and the same checks
// against Debian's independently built etcd (3.4), started from
// /usr/bin/etcd.
func TestInteropDebianEtcd(t *testing.T) {
	t.Parallel()
	b := etcdtest.StartBinary(t, etcdtest.DebianEtcd)
	t.Logf("server: %s", b.Version())
	cli := b.Client(t)
	t.Run("Conformance", func(t *testing.T) {
		t.Parallel()
		conformance(t, cli)
	})
	runChecks(t, cli)
}

// runChecks runs every check on its own keys of one etcd, in parallel.
func runChecks(t *testing.T, cli *clientv3.Client) {
	for _, c := range []struct {
		name string
		f    func(*testing.T, *clientv3.Client)
	}{
		{"RevokedBehindBack", checkRevokedBehindBack},
		{"RetakenWhileKeepAliveFine", checkRetakenWhileKeepAliveFine},
		{"QuarantinedHolderReleases", checkQuarantinedHolderReleases},
		{"ClaimLeavesMark", checkClaimLeavesMark},
		{"ExpiresWithEtcdLease", checkExpiresWithEtcdLease},
		{"InvalidConfig", checkInvalidConfig},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.f(t, cli)
		})
	}
}

// checkRevokedBehindBack: with the etcd lease revoked behind the holder's
// back, Extend fails the token compare (ErrLost).
func checkRevokedBehindBack(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("victim", 0, 0, now))
	l = mustExtend(t, s, l, now+1000)
	if _, err := cli.Revoke(ctxFor(t), ownerLease(t, cli, prefixFor(t), 0)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	_, err := s.Extend(ctxFor(t), l, now+2000, 10*time.Second)
	if !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Extend after revoke: %v, want ErrLost", err)
	}
	if rec := leasetest.MustGet(t, s, 0); rec.MarkMs != now+1000 {
		t.Errorf("mark after failed Extend = %d, want %d (unchanged)", rec.MarkMs, now+1000)
	}
	// The next holder starts above the victim's reservation.
	l2 := leasetest.MustClaim(t, newStore(t, cli, etcdstore.Config{}), req("next", 0, 0, now))
	if l2.StartMs < now+1000 || l2.Token <= l.Token {
		t.Errorf("next claim: start %d token %d, want start ≥ %d and token > %d", l2.StartMs, l2.Token, now+1000, l.Token)
	}
}

// checkRetakenWhileKeepAliveFine: the owner key is deleted by hand and the
// number claimed by another holder while the first holder's etcd lease
// stays alive. Keep-alives of it succeed, yet Extend fails with ErrLost:
// safety rests on the token compare, not on the lease.
func checkRetakenWhileKeepAliveFine(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("first", 0, 0, now))
	id := ownerLease(t, cli, prefixFor(t), 0)
	if _, err := cli.Delete(ctxFor(t), prefixFor(t)+"/0/owner/0"); err != nil {
		t.Fatal(err)
	}
	other := newStore(t, cli, etcdstore.Config{})
	l2 := leasetest.MustClaim(t, other, req("second", 0, 0, now))
	if _, err := cli.KeepAliveOnce(ctxFor(t), id); err != nil {
		t.Fatalf("keep-alive of the first holder's etcd lease: %v, want it alive", err)
	}
	if _, err := s.Extend(ctxFor(t), l, now+1000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Extend of the retaken number: %v, want ErrLost", err)
	}
	if err := s.Release(ctxFor(t), l, now); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Release of the retaken number: %v, want ErrLost", err)
	}
	mustExtend(t, other, l2, now+1000)
}

// checkQuarantinedHolderReleases: etcd accepts the release of a quarantined
// number by its holder, through a Store value that did not claim it (the
// suite lets a store refuse it), and records the mark released with; the
// claim after Unquarantine starts at or above it.
func checkQuarantinedHolderReleases(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("h", 4, 4, now)), now+1000)
	if err := s.Quarantine(ctxFor(t), 4); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	if err := newStore(t, cli, etcdstore.Config{}).Release(ctxFor(t), l, now+800); err != nil {
		t.Fatalf("Release of a quarantined number by its holder: %v, want nil", err)
	}
	if err := s.Unquarantine(ctxFor(t), 4); err != nil {
		t.Fatalf("Unquarantine: %v", err)
	}
	if l2 := leasetest.MustClaim(t, s, req("other", 4, 4, now)); l2.StartMs < now+800 {
		t.Errorf("claim after unquarantine starts at %d, want ≥ %d (the mark the quarantined holder released with)", l2.StartMs, now+800)
	}
}

// checkClaimLeavesMark: an etcd claim does not write the mark key (only
// Extend does): the new lease's MarkMs is the mark the previous holder
// released with.
func checkClaimLeavesMark(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("h", 7, 7, now)), now+9000)
	if err := s.Release(ctxFor(t), l, now+3000); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if l2 := leasetest.MustClaim(t, s, req("next", 7, 7, now)); l2.MarkMs != now+3000 {
		t.Errorf("next claim: mark %d, want the released mark %d", l2.MarkMs, now+3000)
	}
}

// checkExpiresWithEtcdLease: a record's ExpiresMs is when the owner key's
// etcd lease runs out, about its TTL (LeaseFor, 10 s) from now.
func checkExpiresWithEtcdLease(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	mustExtend(t, s, leasetest.MustClaim(t, s, req("h", 5, 5, now)), now+700)
	rec := leasetest.MustGet(t, s, 5)
	if exp := time.UnixMilli(rec.ExpiresMs); time.Until(exp) < 5*time.Second || time.Until(exp) > 11*time.Second {
		t.Errorf("Get(5).ExpiresMs = %v from now, want about 10 s", time.Until(exp))
	}
}

// checkInvalidConfig: New refuses a negative region.
func checkInvalidConfig(t *testing.T, cli *clientv3.Client) {
	if _, err := etcdstore.New(cli, etcdstore.Config{Region: -1}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("New with region -1 = %v, want ErrInvalid", err)
	}
}
