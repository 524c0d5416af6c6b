package explore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// journalMarker starts the failure message of the journal oracle: an ID the
// store's lease journal attributes to another holder than the one that
// minted it, a number whose intervals overlap, or an ID the journal does
// not cover in a world where nothing took history away.
const journalMarker = "EXPLORE JOURNAL"

// journalSample is how many IDs, drawn at random from the ledger, each
// journal check looks up, besides the first and last ID of every holder
// generation.
const journalSample = 300

// journalEvery is how many steps apart the journal is checked during a
// world (besides before each restore, at the end, and after every holder
// has closed).
const journalEvery = 50

// restoreEvent is one restore: the step of the snapshot it wrote back, its
// own step, and beforeMs, the operator's raise mark at the restore (the
// latest clock plus the longest restore window, whether or not the raise
// was made): no claim the restore took away has a mark above it, so every
// ID at or above it was minted under a claim made after the restore.
//
// snapshotMs is the latest clock of the fleet at the snapshot: a claim
// whose journal entry the restore brought back was made on a clock no
// later than it (give or take ntpThreshold: worlds that restore keep
// every clock that close to true time).
type restoreEvent struct {
	snapshot, at         int
	beforeMs, snapshotMs int64
}

// Reasons an ID may legitimately be missing from the journal, as the
// figures name them. Anything else missing is a failure.
//
// A raise of the marks on its own takes nothing away: it ends the newest
// entry at the mark the holder held, above every timestamp it issued. It
// leaves IDs in its gap only over marks a restore rolled back, so those
// count under notRaised, and only in a world that restored.
const (
	// notRetention: the number's journal holds lease.JournalRetention
	// entries and the ID is older than the oldest.
	notRetention = "retention"
	// notLostClaim: a claim of the number succeeded with its reply lost
	// (the faultyStore wrapper), or the DynamoDB shim dropped a reply,
	// which may have been a claim's.
	notLostClaim = "lost claim reply"
	// notRestore: the ID was minted at or after the step of a snapshot a
	// restore wrote back, below that restore's raise mark (restoreEvent);
	// the claim it was minted under may be gone.
	notRestore = "restore"
	// notRaised: as notRestore, and the ID falls in the gap a raise of
	// the marks left after ending an entry at the restored mark.
	notRaised = "raise-marks after a restore"
)

// checkJournal is the journal oracle: it looks a sample of the world's IDs
// up in the lease journal of the keyspace that leased their numbers, as
// snowfence who does, and fails the world if a number's intervals overlap,
// if the journal names another holder (string) than the minter's, or if
// an ID is not in the journal without a reason the world gives (see the
// not* reasons). at says where in the world the check runs.
func (w *world) checkJournal(at string) {
	if !*flagJournal || w.failure != "" || len(w.led.batches) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	jr := &journalReader{w: w, roots: map[[2]int]lease.Admin{}, spaces: map[[2]int]lease.Admin{}, ivs: map[[3]int]numberJournal{}}
	defer jr.close()
	w.fig.add("journal: checks", 1)
	for _, s := range w.journalSample() {
		if !w.checkID(ctx, jr, s, at) {
			return
		}
	}
}

// sampled is one ID the oracle looks up, and who minted it.
type sampled struct {
	id snowfence.ID
	by minted
}

// journalSample draws up to journalSample IDs from the ledger, with the
// world's journal random source, and adds the first and last ID of every
// holder generation, in a reproducible order.
func (w *world) journalSample() []sampled {
	l := w.led
	ends := make([]int, len(l.batches)) // ends[i]: IDs in batches 0..i
	total := 0
	for i, b := range l.batches {
		total += len(b.ids)
		ends[i] = total
	}
	var out []sampled
	for range min(journalSample, total) {
		x := w.jr.IntN(total)
		i := sort.SearchInts(ends, x+1)
		b := l.batches[i]
		out = append(out, sampled{b.ids[x-(ends[i]-len(b.ids))], b.by})
	}
	keys := make([][2]int, 0, len(l.ends))
	for k := range l.ends {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	for _, k := range keys {
		for _, id := range l.ends[k] {
			out = append(out, sampled{id, l.ids[id]})
		}
	}
	return out
}

// checkID looks one ID up. It returns false once the world has failed (or
// its store turned out to have no journal).
func (w *world) checkID(ctx context.Context, jr *journalReader, s sampled, at string) bool {
	h := w.all[s.by.holder]
	p := h.p
	sched, err := w.schedule(p.cfg.Schedule)
	if err != nil {
		return true // the holder never started
	}
	d, err := sched.Decode(s.id)
	if err != nil {
		w.fail(journalMarker, "%s: ID %d of holder %d does not decode under its own schedule %s: %v", at, s.id, h.idx, sched, err)
		return false
	}
	steps := sched.Steps()
	step := 0
	for i, st := range steps {
		if !st.From.After(d.CreatedAt) {
			step = i
		}
	}
	ks := p.cfg.Region
	if len(steps) > 1 {
		if ks, err = lease.KeyspaceOf(step, p.cfg.Region); err != nil {
			w.fail(journalMarker, "%s: ID %d of holder %d: keyspace of step %d region %d: %v", at, s.id, h.idx, step, p.cfg.Region, err)
			return false
		}
	}
	if steps[step].Layout.RegionBits > 0 && d.RegionNumber != p.cfg.Region {
		// snowfence who takes the region of such an ID from the ID itself.
		w.fail(journalMarker, "%s: ID %d (%s) of holder %d carries region %d, but the holder leases in region %d: snowfence who would read another keyspace",
			at, s.id, decode(s.id), h.idx, d.RegionNumber, p.cfg.Region)
		return false
	}
	nj, err := jr.read(ctx, p.cfg.Store, ks, d.Machine)
	switch {
	case err != nil:
		w.fail(setupMarker, "%s: reading the journal of machine %d keyspace %d of store %d: %v", at, d.Machine, ks, p.cfg.Store, err)
		return false
	case w.failure != "":
		return false // its intervals overlap
	}
	w.fig.add("journal: IDs checked", 1)
	want := w.holderNames[[2]int{s.by.holder, s.by.gen}]
	ms := d.CreatedAt.UnixMilli()
	iv, err := lease.Who(nj.ivs, ms)
	switch {
	case err == nil && iv.Holder == want:
		w.fig.add("journal: IDs answered with their holder", 1)
		return true
	case err == nil && w.restoredOver(s.by.step, ms, iv):
		// The restore brought back an entry whose holder reserved past
		// the timestamps issued, in the history it took away, by the
		// minter: the journal cannot know the number changed hands.
		w.fig.add("journal: other holder named: restore", 1)
		return true
	case err == nil && w.unnoticedRestore(s.by, ms, iv):
		// The minter issued after the restore, before it noticed it,
		// on a claim the restore took away; the named holder claimed
		// the number after the restore and issues only once its
		// claim's notice window has passed: the journal cannot know
		// the minter held it.
		w.fig.add("journal: other holder named: restore not noticed yet", 1)
		return true
	case err == nil:
		w.fail(journalMarker, "%s: ID %d (%s, %s) minted by holder %d (generator %d, holder %q) at step %d: the journal of machine %d keyspace %d names holder %q (token %d, %s–%s, %s)\n%s",
			at, s.id, decode(s.id), lease.FormatMs(ms), h.idx, s.by.gen, want, s.by.step, d.Machine, ks,
			iv.Holder, iv.Token, lease.FormatMs(iv.FromMs), lease.FormatMs(iv.UntilMs), iv.State, nj)
		return false
	case !errors.Is(err, lease.ErrNotInJournal):
		w.fail(journalMarker, "%s: ID %d (%s) minted by holder %d (generator %d) at step %d: Who on machine %d keyspace %d: %v\n%s",
			at, s.id, decode(s.id), h.idx, s.by.gen, s.by.step, d.Machine, ks, err, nj)
		return false
	}
	why := w.notInJournalWhy(nj, p.cfg.Store, ks, d.Machine, ms, s.by.step)
	if why == "" {
		w.fail(journalMarker, "%s: ID %d (%s, %s) minted by holder %d (generator %d, holder %q) at step %d is not in the journal of machine %d keyspace %d, and nothing in this world took history away: %v\n%s",
			at, s.id, decode(s.id), lease.FormatMs(ms), h.idx, s.by.gen, want, s.by.step, d.Machine, ks, err, nj)
		return false
	}
	w.fig.add("journal: not in it: "+why, 1)
	return true
}

// notInJournalWhy returns the reason (a not* constant) an ID of timestamp ms
// on machine in keyspace ks of store, minted at step, may be missing from
// the journal nj, or "" if the world gives none.
func (w *world) notInJournalWhy(nj numberJournal, store, ks, machine int, ms int64, step int) string {
	if len(nj.hist) >= lease.JournalRetention && len(nj.ivs) > 0 && ms < nj.ivs[0].FromMs {
		return notRetention
	}
	for _, r := range w.restoreEvents {
		if r.snapshot <= step && ms < r.beforeMs {
			for i, iv := range nj.ivs {
				if iv.State == lease.EndRaised && ms >= iv.UntilMs && (i+1 == len(nj.ivs) || ms < nj.ivs[i+1].FromMs) {
					return notRaised
				}
			}
			return notRestore
		}
	}
	if w.sp.dropped() > 0 {
		return notLostClaim
	}
	for _, p := range w.procs {
		if p.cfg.Store != store {
			continue
		}
		for _, st := range p.stores {
			if st.lostClaimOn(ks, machine) {
				return notLostClaim
			}
		}
	}
	return ""
}

// restoredOver reports whether a restore explains Who naming iv's holder
// for an ID of timestamp ms minted at step by another: the ID was minted
// at or after the snapshot the restore wrote back, below its raise mark,
// and iv's claim was made before that snapshot (the restore brought it
// back, with the mark its holder had reserved then, while in the history
// the restore took away the number went on to the minter).
func (w *world) restoredOver(step int, ms int64, iv lease.Interval) bool {
	for _, r := range w.restoreEvents {
		if r.snapshot <= step && ms < r.beforeMs && iv.ClaimedMs <= r.snapshotMs+ntpThreshold.Milliseconds() {
			return true
		}
	}
	return false
}

// unnoticedRestore reports whether a restore explains Who naming iv's
// holder for an ID of timestamp ms minted by another holder generation,
// by: the minter's generation started before the restore and minted the ID
// after the snapshot — before the restore, or after it before noticing it —
// on a claim the restore took away with the history since the snapshot
// (the notice floor keeps that from being a duplicate), while iv's claim
// was made after the restore (after the snapshot: the restore brought back
// no later claim), and its holder issues nothing before its claim plus the
// store's notice window, which ms is below. snowfence who cannot know of a
// claim the restore took away (docs/runbook.md: the journal after a
// restore).
func (w *world) unnoticedRestore(by minted, ms int64, iv lease.Interval) bool {
	started, ok := w.genStarted[[2]int{by.holder, by.gen}]
	if !ok {
		return false
	}
	for _, r := range w.restoreEvents {
		if started < r.at && r.snapshot <= by.step && iv.ClaimedMs > r.snapshotMs+ntpThreshold.Milliseconds() &&
			ms < iv.ClaimedMs+noticeWindow(w.cfg.Store).Milliseconds() {
			return true
		}
	}
	return false
}

// numberJournal is the journal of one number and the intervals derived
// from it and the number's record.
type numberJournal struct {
	hist []lease.JournalEntry
	rec  lease.Record
	ivs  []lease.Interval
}

func (nj numberJournal) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "record: holder %q token %d mark %s held %v; %d journal entries:", nj.rec.Holder, nj.rec.Token, lease.FormatMs(nj.rec.MarkMs), nj.rec.Held(), len(nj.hist))
	for _, iv := range nj.ivs {
		fmt.Fprintf(&b, "\n  token %d holder %q claimed %s prev mark %s: %s–%s %s (end %q at %s)", iv.Token, iv.Holder,
			lease.FormatMs(iv.ClaimedMs), lease.FormatMs(iv.PrevMarkMs), lease.FormatMs(iv.FromMs), lease.FormatMs(iv.UntilMs), iv.State, iv.End, lease.FormatMs(iv.EndMs))
	}
	return b.String()
}

// journalReader reads, once per check, the journal and record of each
// number looked up, on store objects of its own (no faults, no cut-off).
// In a world of several stores (a registry world) it reads the store the
// minter leased from, which is not always its region's home (what
// snowfence who would ask): see the package doc.
type journalReader struct {
	w      *world
	roots  map[[2]int]lease.Admin // by (store, region)
	spaces map[[2]int]lease.Admin // by (store, keyspace), siblings of a root
	ivs    map[[3]int]numberJournal
}

// read returns the journal of machine in keyspace ks of store, failing the world if
// its intervals overlap (the error is then nil and the world's failure
// set; the caller sees it through w.failure on its next look-up). Store
// calls are retried until ctx ends: a store just restored may refuse the
// first ones while it reconnects.
func (jr *journalReader) read(ctx context.Context, store, ks, machine int) (numberJournal, error) {
	key := [3]int{store, ks, machine}
	if nj, ok := jr.ivs[key]; ok {
		return nj, nil
	}
	var nj numberJournal
	var err error
	for {
		var st lease.Admin
		if st, err = jr.store(ctx, store, ks); err == nil {
			if nj.hist, err = st.History(ctx, machine); err == nil {
				nj.rec, err = st.Get(ctx, machine)
			}
		}
		if err == nil || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return nj, err
	}
	nj.ivs = lease.Intervals(nj.hist, nj.rec)
	jr.w.fig.add("journal: numbers read", 1)
	if err := lease.CheckIntervals(nj.ivs); err != nil {
		jr.w.fail(journalMarker, "the intervals of machine %d keyspace %d of store %d overlap: %v\n%s", machine, ks, store, err, nj)
	}
	jr.ivs[key] = nj
	return nj, nil
}

// store returns keyspace ks of store: a new store object on its region, or
// that object's sibling for a later layout step's keyspace.
func (jr *journalReader) store(ctx context.Context, store, ks int) (lease.Admin, error) {
	if st, ok := jr.spaces[[2]int{store, ks}]; ok {
		return st, nil
	}
	region := ks % lease.KeyspaceStride
	root, ok := jr.roots[[2]int{store, region}]
	if !ok {
		var err error
		if root, err = jr.w.sp.open(ctx, store, region); err != nil {
			return nil, err
		}
		jr.roots[[2]int{store, region}] = root
	}
	st := root
	if ks != region {
		var err error
		if st, err = root.AdminKeyspace(ks); err != nil {
			return nil, err
		}
	}
	jr.spaces[[2]int{store, ks}] = st
	return st, nil
}

// close closes the siblings, then the stores they were opened from.
func (jr *journalReader) close() {
	for key, st := range jr.spaces {
		if key[1] >= lease.KeyspaceStride {
			st.Close()
		}
	}
	for _, st := range jr.roots {
		st.Close()
	}
}
