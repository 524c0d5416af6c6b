package etcdstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestStore runs the store checks against an embedded etcd.
func TestStore(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	runChecks(t, c.Client(t))
}

// TestInteropDebianEtcd runs the same checks against Debian's independently
// built etcd (3.4), started from /usr/bin/etcd.
func TestInteropDebianEtcd(t *testing.T) {
	t.Parallel()
	b := etcdtest.StartBinary(t, etcdtest.DebianEtcd)
	t.Logf("server: %s", b.Version())
	runChecks(t, b.Client(t))
}

// runChecks runs every check on its own keys of one etcd, in parallel.
func runChecks(t *testing.T, cli *clientv3.Client) {
	for _, c := range []struct {
		name string
		f    func(*testing.T, *clientv3.Client)
	}{
		{"ClaimRace", checkClaimRace},
		{"TokensIncrease", checkTokensIncrease},
		{"RevokedBehindBack", checkRevokedBehindBack},
		{"RetakenWhileKeepAliveFine", checkRetakenWhileKeepAliveFine},
		{"ExtendNeverLowers", checkExtendNeverLowers},
		{"Quarantine", checkQuarantine},
		{"ReleaseRecordsMark", checkReleaseRecordsMark},
		{"MaxAhead", checkMaxAhead},
		{"RaiseMarks", checkRaiseMarks},
		{"GetList", checkGetList},
		{"Invalid", checkInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.f(t, cli)
		})
	}
}

// checkClaimRace: many claimers race for ranges of one and two numbers;
// exactly one wins each number, the rest get ErrNoFreeNumber.
func checkClaimRace(t *testing.T, cli *clientv3.Client) {
	for _, size := range []int{1, 2} {
		t.Run(fmt.Sprintf("range of %d", size), func(t *testing.T) {
			const claimers = 8
			now := baseMs()
			stores := make([]*etcdstore.Store, claimers)
			for i := range stores {
				stores[i] = newStore(t, cli, etcdstore.Config{})
			}
			var wg sync.WaitGroup
			leases := make([]*lease.Lease, claimers)
			errs := make([]error, claimers)
			for i := range claimers {
				wg.Go(func() {
					leases[i], errs[i] = stores[i].Claim(ctxFor(t), req(fmt.Sprintf("h%d", i), 10, 10+size-1, now))
				})
			}
			wg.Wait()
			winners := make(map[int]string)
			for i := range claimers {
				switch {
				case errs[i] == nil:
					if prev, ok := winners[leases[i].Machine]; ok {
						t.Errorf("machine %d claimed by both %s and h%d", leases[i].Machine, prev, i)
					}
					winners[leases[i].Machine] = leases[i].Holder
				case errors.Is(errs[i], lease.ErrNoFreeNumber):
				default:
					t.Errorf("claimer h%d: %v, want a lease or ErrNoFreeNumber", i, errs[i])
				}
			}
			if len(winners) != size {
				t.Errorf("%d numbers claimed, want %d: %v", len(winners), size, winners)
			}
			for n, holder := range winners {
				if rec := leasetest.MustGet(t, stores[0], n); rec.Holder != holder {
					t.Errorf("Get(%d).Holder = %q, want winner %q", n, rec.Holder, holder)
				}
			}
		})
	}
}

// checkTokensIncrease: every claim of the same number gets a larger token.
func checkTokensIncrease(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	var last uint64
	for i := range 5 {
		l := leasetest.MustClaim(t, s, req(fmt.Sprintf("h%d", i), 3, 3, baseMs()))
		if l.Token <= last {
			t.Errorf("claim %d: token %d, want > %d", i, l.Token, last)
		}
		last = l.Token
		if err := s.Release(ctxFor(t), l, l.StartMs); err != nil {
			t.Fatalf("Release: %v", err)
		}
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

// checkExtendNeverLowers: an extension to an earlier mark keeps the later
// one, in the returned lease and in the store.
func checkExtendNeverLowers(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("h", 0, 0, now))
	l = mustExtend(t, s, l, now+5000)
	stale := *l
	stale.MarkMs = now // a caller passing an old copy of its lease
	got := mustExtend(t, s, &stale, now+1000)
	if got.MarkMs != now+5000 {
		t.Errorf("Extend to an earlier mark returned mark %d, want %d", got.MarkMs, now+5000)
	}
	if rec := leasetest.MustGet(t, s, 0); rec.MarkMs != now+5000 {
		t.Errorf("stored mark %d, want %d", rec.MarkMs, now+5000)
	}
	// A second Store value handed the lease (it did not claim it) must not
	// lower it either.
	got = mustExtend(t, newStore(t, cli, etcdstore.Config{}), &stale, now+2000)
	if got.MarkMs != now+5000 {
		t.Errorf("Extend through another Store returned mark %d, want %d", got.MarkMs, now+5000)
	}
}

// checkQuarantine: quarantine defeats claim and extend; unquarantine makes
// the number claimable again.
func checkQuarantine(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("h", 4, 4, now))
	l = mustExtend(t, s, l, now+1000)
	if err := s.Quarantine(ctxFor(t), 4); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	if err := s.Quarantine(ctxFor(t), 4); err != nil {
		t.Errorf("second Quarantine: %v, want nil (idempotent)", err)
	}
	if _, err := s.Extend(ctxFor(t), l, now+2000, 10*time.Second); !errors.Is(err, lease.ErrQuarantined) {
		t.Errorf("Extend of a quarantined number: %v, want ErrQuarantined", err)
	}
	if rec := leasetest.MustGet(t, s, 4); !rec.Quarantined || rec.MarkMs != now+1000 {
		t.Errorf("record = %+v, want quarantined with mark %d", rec, now+1000)
	}
	// Released through another Store value, which did not claim it.
	if err := newStore(t, cli, etcdstore.Config{}).Release(ctxFor(t), l, now+800); err != nil {
		t.Fatalf("Release of a quarantined number: %v", err)
	}
	if _, err := s.Claim(ctxFor(t), req("other", 4, 4, now)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("Claim of a quarantined number: %v, want ErrNoFreeNumber", err)
	}
	if err := s.Unquarantine(ctxFor(t), 4); err != nil {
		t.Fatalf("Unquarantine: %v", err)
	}
	if err := s.Unquarantine(ctxFor(t), 4); !errors.Is(err, lease.ErrNotHeld) {
		t.Errorf("Unquarantine of a number not quarantined: %v, want ErrNotHeld", err)
	}
	l2 := leasetest.MustClaim(t, s, req("other", 4, 4, now))
	if l2.StartMs < now+800 {
		t.Errorf("claim after unquarantine starts at %d, want ≥ %d (the mark the quarantined holder released with)", l2.StartMs, now+800)
	}
}

// checkReleaseRecordsMark: Release records the mark, may lower the holder's
// own reservation, and the next claim starts at or above it.
func checkReleaseRecordsMark(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("h", 7, 7, now))
	l = mustExtend(t, s, l, now+9000)
	if err := s.Release(ctxFor(t), l, now+3000); err != nil {
		t.Fatalf("Release: %v", err)
	}
	rec := leasetest.MustGet(t, s, 7)
	if rec.Held() || rec.MarkMs != now+3000 {
		t.Errorf("record after Release = %+v, want free with mark %d", rec, now+3000)
	}
	if err := s.Release(ctxFor(t), l, now+3000); !errors.Is(err, lease.ErrLost) {
		t.Errorf("second Release: %v, want ErrLost", err)
	}
	if _, err := s.Extend(ctxFor(t), l, now+4000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Extend after Release: %v, want ErrLost", err)
	}
	l2 := leasetest.MustClaim(t, s, req("next", 7, 7, now))
	if l2.StartMs < now+3000 || l2.MarkMs != now+3000 {
		t.Errorf("next claim: start %d, stored mark %d; want start ≥ %d and mark %d", l2.StartMs, l2.MarkMs, now+3000, now+3000)
	}
	// A release below the mark the previous holder left keeps that mark.
	if err := s.Release(ctxFor(t), l2, now+1000); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if rec := leasetest.MustGet(t, s, 7); rec.MarkMs != now+3000 {
		t.Errorf("mark after a release below the previous holder's = %d, want %d", rec.MarkMs, now+3000)
	}
}

// checkMaxAhead: a number whose mark is further ahead of the claimer's
// clock than MaxAhead is passed over.
func checkMaxAhead(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	far := now + time.Hour.Milliseconds()
	if n, err := s.RaiseMarks(ctxFor(t), lease.Range{Lo: 20, Hi: 20}, far); err != nil || n != 1 {
		t.Fatalf("RaiseMarks = %d, %v; want 1, nil", n, err)
	}
	r := req("h", 20, 21, now)
	r.MaxAhead = 2 * time.Second
	for range 3 { // the start is random; 20 must never be taken
		l := leasetest.MustClaim(t, s, r)
		if l.Machine != 21 {
			t.Fatalf("claimed %d, want 21 (20's mark is an hour ahead)", l.Machine)
		}
		if err := s.Release(ctxFor(t), l, now); err != nil {
			t.Fatal(err)
		}
	}
	r.Range = lease.Range{Lo: 20, Hi: 20}
	if _, err := s.Claim(ctxFor(t), r); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("Claim with only a far-ahead number: %v, want ErrNoFreeNumber", err)
	}
	r.MaxAhead = 2 * time.Hour
	if l := leasetest.MustClaim(t, s, r); l.StartMs != far {
		t.Errorf("claim within MaxAhead starts at %d, want the mark %d", l.StartMs, far)
	}
}

// checkRaiseMarks: RaiseMarks raises lower and missing marks only and
// fences the holder of every number in the range; the next holder starts
// at or above the raised mark, and its release keeps it.
func checkRaiseMarks(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	held := mustExtend(t, s, leasetest.MustClaim(t, s, req("h", 1, 1, now)), now+1000)
	high := leasetest.MustClaim(t, s, req("h", 2, 2, now))
	high = mustExtend(t, s, high, now+99000)
	if err := s.Release(ctxFor(t), high, now+99000); err != nil {
		t.Fatal(err)
	}
	raised := now + 50000
	n, err := s.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 3}, raised)
	if err != nil || n != 3 {
		t.Fatalf("RaiseMarks(0-3) = %d, %v; want 3 (0, 1 and 3; 2 is higher), nil", n, err)
	}
	for m, want := range map[int]int64{0: raised, 1: raised, 2: now + 99000, 3: raised} {
		if rec := leasetest.MustGet(t, s, m); rec.MarkMs != want {
			t.Errorf("machine %d mark %d, want %d", m, rec.MarkMs, want)
		}
	}
	if n, err := s.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 3}, raised); err != nil || n != 0 {
		t.Errorf("RaiseMarks again = %d, %v; want 0, nil", n, err)
	}
	// The holder across RaiseMarks is fenced: its next extension fails,
	// and the number's next claim starts at or above the raised mark.
	if _, err := s.Extend(ctxFor(t), held, now+2000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Extend of a lease held across RaiseMarks = %v, want ErrLost", err)
	}
	if err := s.Release(ctxFor(t), held, now+1500); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Release of a lease held across RaiseMarks = %v, want ErrLost", err)
	}
	next := leasetest.MustClaim(t, s, req("next", 1, 1, now))
	if next.StartMs < raised {
		t.Errorf("claim after RaiseMarks starts at %d, want ≥ %d", next.StartMs, raised)
	}
	next = mustExtend(t, s, next, now+2000)
	if err := s.Release(ctxFor(t), next, next.StartMs); err != nil {
		t.Fatal(err)
	}
	if rec := leasetest.MustGet(t, s, 1); rec.MarkMs < raised {
		t.Errorf("mark after release below the raised mark = %d, want ≥ %d", rec.MarkMs, raised)
	}
}

// checkGetList: records show holder, token, mark, expiry and quarantine.
func checkGetList(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	if rec := leasetest.MustGet(t, s, 9); rec != (lease.Record{Machine: 9}) {
		t.Errorf("Get of a never-claimed number = %+v, want a zero record", rec)
	}
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("h", 5, 5, now)), now+700)
	if err := s.Quarantine(ctxFor(t), 6); err != nil {
		t.Fatal(err)
	}
	rec := leasetest.MustGet(t, s, 5)
	if rec.Holder != "h" || rec.Token != l.Token || rec.MarkMs != now+700 || rec.Quarantined {
		t.Errorf("Get(5) = %+v, want holder h token %d mark %d", rec, l.Token, now+700)
	}
	if exp := time.UnixMilli(rec.ExpiresMs); time.Until(exp) < 5*time.Second || time.Until(exp) > 11*time.Second {
		t.Errorf("Get(5).ExpiresMs = %v from now, want about 10 s", time.Until(exp))
	}
	recs, err := s.List(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Machine != 5 || recs[0].Token != l.Token || recs[1].Machine != 6 || !recs[1].Quarantined {
		t.Errorf("List = %+v, want 5 held and 6 quarantined", recs)
	}
}

// checkInvalid: requests outside the store's limits fail with ErrInvalid.
func checkInvalid(t *testing.T, cli *clientv3.Client) {
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	for _, tc := range []struct {
		name string
		r    lease.ClaimRequest
	}{
		{"no holder", req("", 0, 1, now)},
		{"negative range", req("h", -1, 1, now)},
		{"empty range", req("h", 2, 1, now)},
		{"no lease time", func() lease.ClaimRequest { r := req("h", 0, 1, now); r.LeaseFor = 0; return r }()},
	} {
		if _, err := s.Claim(ctxFor(t), tc.r); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: Claim = %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := s.Get(ctxFor(t), -1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Get(-1) = %v, want ErrInvalid", err)
	}
	wrong := &lease.Lease{Machine: 0, Region: 1, Token: 1}
	if _, err := s.Extend(ctxFor(t), wrong, now, time.Second); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Extend of another region's lease = %v, want ErrInvalid", err)
	}
	if _, err := etcdstore.New(cli, etcdstore.Config{Region: -1}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("New with region -1 = %v, want ErrInvalid", err)
	}
}
