package k8sstore_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// TestAdminLeastPrivilege: the operator's actions — List, Quarantine,
// Unquarantine, RaiseMarks (over numbers with and without an object), the
// journal, the fleet schedule and the registry's copy — go through the
// restricted service account (get, list, create, patch on leases in the
// namespace) and send nothing but GET, POST and PATCH requests to the
// namespace's leases.
func TestAdminLeastPrivilege(t *testing.T) {
	srv := k8stest.Shared(t)
	ns := srv.Namespace(t)
	rc := rest.CopyConfig(srv.Restricted(t, ns))
	var reqs requests
	rc.Wrap(reqs.wrap)
	s := open(t, rc, k8sstore.Config{Namespace: ns, Prefix: newPrefix()})
	ctx := t.Context()
	nowMs := time.Now().UnixMilli()
	l := mustExtend(t, s, mustClaim(t, s, on("a", 1, nowMs)), nowMs+11_000)
	if err := s.Quarantine(ctx, 1); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	if err := s.Quarantine(ctx, 2); err != nil { // no object: a Create
		t.Fatalf("Quarantine of a number without an object: %v", err)
	}
	if err := s.Unquarantine(ctx, 1); err != nil {
		t.Fatalf("Unquarantine: %v", err)
	}
	if n, err := s.RaiseMarks(ctx, lease.Range{Lo: 0, Hi: 3}, nowMs+60_000); err != nil || n != 4 {
		t.Fatalf("RaiseMarks(0-3) = %d, %v; want 4", n, err)
	}
	if _, err := s.Extend(ctx, l, nowMs+12_000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Errorf("renewal after a quarantine, unquarantine and raise: %v, want ErrLost", err)
	}
	if recs, err := s.List(ctx); err != nil || len(recs) != 4 {
		t.Fatalf("List = %+v, %v; want 4 records", recs, err)
	}
	if h, err := s.History(ctx, 1); err != nil || len(h) != 1 || h[0].End != lease.EndQuarantined {
		t.Fatalf("History(1) = %+v, %v; want the holding, ended by the quarantine", h, err)
	}
	if _, err := s.SetFleetSchedule(ctx, 0, "v1,v2@2036-01-01T00:00:00Z"); err != nil {
		t.Fatalf("SetFleetSchedule: %v", err)
	}
	if fs, err := s.FleetSchedule(ctx); err != nil || fs.Version != 1 {
		t.Fatalf("FleetSchedule = %+v, %v; want version 1", fs, err)
	}
	copies := []registry.Copy{{Name: "here", Store: s}}
	if _, err := registry.AddRegion(ctx, copies, "eu-west-1", nowMs, 16); err != nil {
		t.Fatalf("AddRegion: %v", err)
	}
	if r, err := s.Registry(ctx); err != nil || r.Version != 1 {
		t.Fatalf("Registry = %+v, %v; want version 1", r, err)
	}

	base := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	var methods []string
	reqs.mu.Lock()
	for _, r := range reqs.seen {
		method, path, _ := strings.Cut(r, " ")
		if path != base && !strings.HasPrefix(path, base+"/") {
			t.Errorf("request %s outside the namespace's leases", r)
		}
		if !slices.Contains(methods, method) {
			methods = append(methods, method)
		}
	}
	n := len(reqs.seen)
	reqs.mu.Unlock()
	slices.Sort(methods)
	t.Logf("%d requests, methods %v", n, methods)
	for _, m := range methods {
		if m != http.MethodGet && m != http.MethodPost && m != http.MethodPatch {
			t.Errorf("the store sent a %s request: it needs get, list (GET), create (POST) and patch (PATCH) only", m)
		}
	}
}

// TestOperatorWritesTakeNewNonce: a quarantine and a raise of the marks
// write a new claim nonce with one more epoch, so a renewal the holder
// planned before them (read, patch built, request held) and sent after
// them is refused by its record test (422) and reports the quarantine
// (lease.ErrQuarantined) or the fence (lease.ErrLost); the record stays
// as the operator wrote it, and the holder's journal entry is ended at
// the mark it held, in the operator's own write.
func TestOperatorWritesTakeNewNonce(t *testing.T) {
	srv := k8stest.Shared(t)
	ns := srv.Namespace(t)
	leases := srv.Clientset(t).CoordinationV1().Leases(ns)
	for _, c := range []struct {
		name    string
		act     func(ctx context.Context, op *k8sstore.Store, n int, nowMs int64) error
		want    error
		end     string
		holder  string // the record's holder after the operator's write
		raiseTo int64  // the mark RaiseMarks gives (0: none)
	}{
		{"quarantine", func(ctx context.Context, op *k8sstore.Store, n int, _ int64) error { return op.Quarantine(ctx, n) },
			lease.ErrQuarantined, lease.EndQuarantined, lease.QuarantineHolder, 0},
		{"raise", func(ctx context.Context, op *k8sstore.Store, n int, nowMs int64) error {
			_, err := op.RaiseMarks(ctx, lease.Range{Lo: n, Hi: n}, nowMs+600_000)
			return err
		}, lease.ErrLost, lease.EndRaised, "", 600_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := k8sstore.Config{Namespace: ns, Prefix: newPrefix()}
			p := newParker(t)
			rc := rest.CopyConfig(srv.Config())
			rc.Wrap(p.wrap)
			s := open(t, rc, cfg)
			op := open(t, srv.Restricted(t, ns), cfg)
			const n = 3
			name := cfg.Prefix + "-r0-3"
			nowMs := time.Now().UnixMilli()
			l := mustExtend(t, s, mustClaim(t, s, on("a", n, nowMs)), nowMs+11_000)
			before := mustGetRecord(t, op, n)

			p.armed.Store(true)
			out := make(chan error, 1)
			go func() {
				_, err := s.Extend(context.WithoutCancel(t.Context()), l, nowMs+12_000, 10*time.Second)
				out <- err
			}()
			select {
			case <-p.parked:
			case <-time.After(30 * time.Second):
				t.Fatal("the renewal never reached its patch")
			}
			if err := c.act(t.Context(), op, n, nowMs); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			after := mustGetRecord(t, op, n)
			if after.Token != before.Token+1 || after.Holder != c.holder {
				t.Errorf("record after the %s = %+v, want holder %q and epoch %d", c.name, after, c.holder, before.Token+1)
			}
			obj, err := leases.Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			written := obj.Annotations["snowfence.io/record"]
			if strings.Contains(written, l.Claim) {
				t.Errorf("the %s kept the holder's claim nonce %s: %s; want a new one", c.name, l.Claim, written)
			}

			p.let()
			var status string
			select {
			case status = <-p.status:
			case <-time.After(time.Minute):
				t.Fatal("the held patch never went out")
			}
			var rerr error
			select {
			case rerr = <-out:
			case <-time.After(time.Minute):
				t.Fatal("the renewal never returned")
			}
			t.Logf("held renewal: %s; Extend: %v", status, rerr)
			if !strings.HasPrefix(status, "422") {
				t.Errorf("the held patch ended %q, want 422 (a failed JSON Patch test)", status)
			}
			if !errors.Is(rerr, c.want) {
				t.Errorf("the renewal planned before the %s: %v, want %v", c.name, rerr, c.want)
			}
			obj, err = leases.Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := obj.Annotations["snowfence.io/record"]; got != written {
				t.Errorf("record after the held renewal = %s, want the %s's %s", got, c.name, written)
			}
			if c.raiseTo > 0 && after.MarkMs != nowMs+c.raiseTo {
				t.Errorf("mark after the raise = %d, want %d", after.MarkMs, nowMs+c.raiseTo)
			}
			h, err := op.History(t.Context(), n)
			if err != nil || len(h) != 1 {
				t.Fatalf("History = %+v, %v; want the one holding", h, err)
			}
			if e := h[0]; e.Claim != l.Claim || e.End != c.end || e.EndMs != l.MarkMs {
				t.Errorf("journal entry %+v, want claim %s ended %s at the holder's mark %d", e, l.Claim, c.end, l.MarkMs)
			}
		})
	}
}

// TestJournalSizeOnServer: the journal annotation the server holds after
// more claims than lease.JournalRetention is about 17 KB with 45-character
// holders, and stays within 64 KiB (the newest entries) with holders of
// 8 KiB, which the server accepts: far below its 256 KiB on annotations.
func TestJournalSizeOnServer(t *testing.T) {
	srv := k8stest.Shared(t)
	ns := srv.Namespace(t)
	leases := srv.Clientset(t).CoordinationV1().Leases(ns)
	for _, c := range []struct {
		name         string
		claims       int
		holderLen    int
		kept, atMost int
	}{
		{"45-character holders", lease.JournalRetention + 4, 45, lease.JournalRetention, 17 << 10},
		{"8 KiB holders", 12, 8 << 10, 7, 64 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := k8sstore.Config{Namespace: ns, Prefix: newPrefix()}
			s := open(t, srv.Config(), cfg)
			nowMs := time.Now().UnixMilli()
			for i := range c.claims {
				holder := strings.Repeat("h", c.holderLen-3) + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
				l := mustClaim(t, s, on(holder, 1, nowMs))
				if err := s.Release(t.Context(), l, nowMs+int64(i)+1); err != nil {
					t.Fatalf("release %d: %v", i, err)
				}
			}
			obj, err := leases.Get(t.Context(), cfg.Prefix+"-r0-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			size := len(obj.Annotations["snowfence.io/journal"])
			total := 0
			for k, v := range obj.Annotations {
				total += len(k) + len(v)
			}
			h, err := s.History(t.Context(), 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d claims: %d entries kept, journal annotation %d bytes, all annotations %d bytes", c.claims, len(h), size, total)
			if len(h) != c.kept || size > c.atMost {
				t.Errorf("journal holds %d entries in %d bytes, want %d in at most %d", len(h), size, c.kept, c.atMost)
			}
			if last := h[len(h)-1]; last.Token != uint64(c.claims) || last.End != lease.EndReleased {
				t.Errorf("newest entry %+v, want token %d released", last, c.claims)
			}
		})
	}
}

// mustGetRecord reads number n's record through s.
func mustGetRecord(t *testing.T, s *k8sstore.Store, n int) lease.Record {
	t.Helper()
	r, err := s.Get(t.Context(), n)
	if err != nil {
		t.Fatalf("Get(%d): %v", n, err)
	}
	return r
}
