package conformance

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/idtable"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// crossRounds and crossPerRound size the cross-language check: each client
// takes crossRounds × crossPerRound IDs.
const (
	crossRounds   = 10
	crossPerRound = 20000
)

// TestCrossLanguageUnique has the four clients fetch IDs at once from the
// three plain holders — each client with the holders in another order, and
// a small buffer so that it refills often — and writes every ID they
// handed out to one PostgreSQL table whose PRIMARY KEY is the ID: any
// duplicate, within a client or across them, fails the copy.
func TestCrossLanguageUnique(t *testing.T) {
	pg := testenv.PostgresURL(t)
	srv := theServers(t)
	var (
		mu  sync.Mutex
		all []int64
		per = map[string]int{}
		wg  sync.WaitGroup
	)
	for k, lang := range languages {
		r := startRunner(t, lang)
		eps := make([]string, len(srv.plain))
		for i := range eps {
			eps[i] = srv.plain[(i+k)%len(srv.plain)]
		}
		a := r.call(map[string]any{"op": "open", "config": map[string]any{"endpoints": eps, "max_buffer": 4096}}, time.Minute)
		if !a.OK {
			t.Fatalf("%s: open: %s", lang, describe(a))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range crossRounds {
				a := r.call(map[string]any{"op": "next", "count": crossPerRound}, 2*time.Minute)
				if !a.OK {
					t.Errorf("%s: next %d: %s", lang, crossPerRound, describe(a))
					return
				}
				ids := make([]int64, len(a.IDs))
				for i, s := range a.IDs {
					v, err := strconv.ParseInt(s, 10, 64)
					if err != nil || v <= 0 {
						t.Errorf("%s: ID %q is not an ID", lang, s)
						return
					}
					ids[i] = v
				}
				mu.Lock()
				all = append(all, ids...)
				per[lang] += len(ids)
				mu.Unlock()
			}
			r.call(map[string]any{"op": "close"}, time.Minute)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, lang := range languages {
		if per[lang] != crossRounds*crossPerRound {
			t.Errorf("%s handed out %d IDs, want %d", lang, per[lang], crossRounds*crossPerRound)
		}
	}
	if n := idtable.PrimaryKeyDuplicates(t, pg, all); n != 0 {
		t.Fatalf("%d duplicate IDs among the %d the four clients handed out", n, len(all))
	}
	t.Logf("%d IDs from %d clients and %d holders, written to one PRIMARY KEY: no duplicate (per client: %v)", len(all), len(languages), len(srv.plain), per)
}
