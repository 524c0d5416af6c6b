package tablewatch

import "github.com/snowfence/snowfence/internal/revert"

// After judges rows, the answer to a request about sp's numbers sent after
// sp was taken, against sp; rows holds every number of the span that has a
// row when complete is true (a scan: a number missing was found without
// one), and only the numbers the answer is about otherwise. On a sign of a
// rollback it notices a restore (Notice) and returns what it saw; else it
// records the rows for later requests and returns "". An answer to a
// request sent before the last restore was noticed is neither judged nor
// recorded: it may be of either history.
//
// It keeps the holders of a table gone back in time, which the server
// cannot show, from issuing beside those the restored rows let claim.
// Load-bearing for uniqueness: change only with scripts/prove-search tablerestore.
func (w *Watch) After(sp Span, rows map[int]Row, complete bool) string {
	if revert.TableRestore {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if sp.gen != w.gen {
		return ""
	}
	judge := func(n int, now Row) string {
		if before, ok := sp.rows[n]; ok {
			if what := WentBack(n, before, now); what != "" {
				return what
			}
		}
		return ""
	}
	for n, r := range rows {
		if what := judge(n, r); what != "" {
			w.noticeLocked(what)
			return what
		}
	}
	if complete {
		for n := range sp.rows {
			if _, ok := rows[n]; !ok && n >= sp.lo && n <= sp.hi {
				if what := judge(n, Row{}); what != "" {
					w.noticeLocked(what)
					return what
				}
			}
		}
	}
	if w.seen == nil {
		w.seen = map[Key]Row{}
	}
	for n, r := range rows {
		w.recordLocked(Key{sp.region, n}, r)
	}
	if complete {
		for n := range sp.rows {
			if _, ok := rows[n]; !ok {
				w.recordLocked(Key{sp.region, n}, Row{})
			}
		}
	}
	return ""
}

// NoticeAfter records a restore seen, as what describes it, in the answer
// to a request sent after sp was taken, by a sign the rows themselves do
// not carry (a renewal value the holder wrote before its last one back in
// its row: lease.Renewals.Check), with Notice's consequences, unless one
// was noticed since sp was taken; it reports whether it started a new
// generation.
// Load-bearing for uniqueness: change only with scripts/prove-search tablerestore.
func (w *Watch) NoticeAfter(sp Span, what string) bool {
	if revert.TableRestore {
		return false
	}
	return w.Notice(sp.gen, what)
}
