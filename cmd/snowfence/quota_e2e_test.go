package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
)

// The fleet-wide quota's run: one caller's quota of quotaRate IDs/s, three
// holders on one external etcd.
const (
	quotaRate   = 2000
	quotaBurst  = 1000
	quotaBatch  = 100
	quotaWarmup = 2 * time.Second  // drains every bucket's burst before the window opens
	quotaWindow = 10 * time.Second // the measured window
	quotaSlack  = 1.1              // the bound: at most 1.1 × the quota over the window
)

// TestE2EQuotaFleetWide: three serve processes share an external etcd and
// one callers file giving the (anonymous, plain-HTTP) caller 2,000 IDs/s.
// Once each counts three live holders, one caller hammering all three in
// turn is granted at most 1.1 × 2,000 IDs/s in total over a 10 s window
// (per process quotas gave it three times that), and a caller pinned to
// one holder gets that holder's third, at most 1.1 × 2,000/3 IDs/s. The
// figures go to docs/deployment.md.
func TestE2EQuotaFleetWide(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	callers := filepath.Join(t.TempDir(), "callers.json")
	policy := fmt.Sprintf(`{"default": {"rate": %d, "burst": %d}, "callers": {}}`, quotaRate, quotaBurst)
	if err := os.WriteFile(callers, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--etcd-endpoints", strings.Join(etcd.Endpoints(), ","), "--callers", callers}
	var urls []string
	var holders []*service
	for range 3 {
		s := startService(t, t.TempDir(), flags...)
		holders, urls = append(holders, s), append(urls, s.url)
	}
	waitCount(t, urls, 3)

	spread := hammer(t, urls)
	limit := quotaSlack * quotaRate * quotaWindow.Seconds()
	t.Logf("one caller over 3 holders: %d IDs in %s = %.0f IDs/s of a %d IDs/s quota (%.2f×; %d requests refused 429)",
		spread.ids, quotaWindow, float64(spread.ids)/quotaWindow.Seconds(), quotaRate, float64(spread.ids)/(quotaRate*quotaWindow.Seconds()), spread.refused)
	if float64(spread.ids) > limit {
		t.Errorf("one caller took %d IDs from three holders in %s: more than %.1f × its quota (%.0f)", spread.ids, quotaWindow, quotaSlack, limit)
	}
	if spread.refused == 0 {
		t.Errorf("the caller was never refused: the load did not reach the quota, so the bound says nothing")
	}

	pinned := hammer(t, urls[:1])
	share := quotaRate / 3.0
	t.Logf("one caller pinned to 1 holder of 3: %d IDs in %s = %.0f IDs/s (%.2f× of the quota's third, %.0f IDs/s; %d requests refused 429)",
		pinned.ids, quotaWindow, float64(pinned.ids)/quotaWindow.Seconds(), float64(pinned.ids)/(share*quotaWindow.Seconds()), share, pinned.refused)
	if float64(pinned.ids) > quotaSlack*share*quotaWindow.Seconds() {
		t.Errorf("a caller pinned to one holder of three took %d IDs in %s: more than %.1f × a third of its quota", pinned.ids, quotaWindow, quotaSlack)
	}

	// A holder leaves (SIGTERM releases its number): the two left count
	// two and share the quota by halves.
	holders[2].stop(t)
	waitCount(t, urls[:2], 2)
	two := hammer(t, urls[:2])
	t.Logf("one caller over the 2 holders left: %d IDs in %s = %.0f IDs/s (%.2f×; %d requests refused 429)",
		two.ids, quotaWindow, float64(two.ids)/quotaWindow.Seconds(), float64(two.ids)/(quotaRate*quotaWindow.Seconds()), two.refused)
	if float64(two.ids) > limit {
		t.Errorf("after a holder left, one caller took %d IDs from the two left in %s: more than %.1f × its quota (%.0f)", two.ids, quotaWindow, quotaSlack, limit)
	}
}

// waitCount waits, bounded, until every holder of urls counts want live
// holders: each counts within a renewal period (2 s) of a change.
func waitCount(t *testing.T, urls []string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, u := range urls {
		for metricValue(t, u, "snowfence_caller_quota_holders") != fmt.Sprint(want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s counts %s holders after 30 s, want %d", u, metricValue(t, u, "snowfence_caller_quota_holders"), want)
			}
			time.Sleep(100 * time.Millisecond) // polling a process's metric: no event to wait on
		}
	}
}

// hammered is what one load run was granted in the measured window.
type hammered struct{ ids, refused int64 }

// hammer runs one worker per holder of urls, each posting batches to every
// holder in turn (so the caller reaches all of them evenly) at a bounded
// pace and count, and counts the IDs granted by responses that arrive
// within the window that opens quotaWarmup after the start.
func hammer(t *testing.T, urls []string) hammered {
	t.Helper()
	const (
		pace        = 2 * time.Millisecond // per worker: up to 50,000 IDs/s offered each, far above the quota
		maxRequests = 20000                // per worker: bounds the loop whatever the timing
	)
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	start := time.Now()
	open, end := start.Add(quotaWarmup), start.Add(quotaWarmup+quotaWindow)
	var got hammered
	var wg sync.WaitGroup
	var failure atomic.Value
	for w := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for i := 0; i < maxRequests && time.Now().Before(end); i++ {
				<-tick.C
				u := urls[(w+i)%len(urls)]
				resp, err := client.Post(fmt.Sprintf("%s/v1/ids?count=%d", u, quotaBatch), "", nil)
				if err != nil {
					failure.CompareAndSwap(nil, err.Error())
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				at := time.Now()
				in := !at.Before(open) && at.Before(end)
				switch resp.StatusCode {
				case http.StatusOK:
					if in {
						atomic.AddInt64(&got.ids, quotaBatch)
					}
				case http.StatusTooManyRequests:
					if in {
						atomic.AddInt64(&got.refused, 1)
					}
				default:
					failure.CompareAndSwap(nil, fmt.Sprintf("POST %s: %d", u, resp.StatusCode))
					return
				}
			}
		}()
	}
	wg.Wait()
	if f := failure.Load(); f != nil {
		t.Fatalf("load: %v", f)
	}
	if time.Now().Before(end) {
		t.Fatalf("the load ran out of requests before the window closed: raise maxRequests")
	}
	return got
}
