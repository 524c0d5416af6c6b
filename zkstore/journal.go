package zkstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

// The journal (lease.Journal) of number n of a keyspace is the children of
// <path>/journal/<region>/<n>: one znode per claim, named by its sequence
// number (ten digits, 0000000001 for the number's first claim journaled),
// holding the entry's JSON (entry). A claim creates its entry in the same
// multi-op as its write of the lease znode, numbered one past the highest
// it listed, and deletes in that multi-op the entries that fall out of the
// newest lease.JournalRetention; a release, a quarantine and a raise of the
// marks end the newest entry (End, EndMs, EndedMs) in their own multi-op,
// when it is the holding they end: the entry of the record's epoch and
// claim nonce, not ended yet. Renewals write nothing to it.

// entry is a journal entry as its znode holds it.
type entry struct {
	Token      uint64 `json:"token"`
	Claim      string `json:"claim,omitempty"`
	Holder     string `json:"holder"`
	ClaimedMs  int64  `json:"claimed_ms"`
	PrevMarkMs int64  `json:"prev_mark_ms"`
	StartMs    int64  `json:"start_ms"`
	End        string `json:"end,omitempty"`
	EndMs      int64  `json:"end_ms,omitempty"`
	EndedMs    int64  `json:"ended_ms,omitempty"`
}

// journalDir is the parent of number n's journal entries.
func (s *Store) journalDir(n int) string {
	return s.cfg.Path + "/journal/" + strconv.Itoa(s.region) + "/" + strconv.Itoa(n)
}

// entryPath is the znode of number n's entry seq.
func (s *Store) entryPath(n int, seq int64) string {
	return fmt.Sprintf("%s/%010d", s.journalDir(n), seq)
}

// journalSeqs lists the sequence numbers of number n's entries, in order
// (none if its journal was never written), after the caller's sync.
func (s *Store) journalSeqs(ctx context.Context, n int) ([]int64, error) {
	names, err := call(ctx, func() ([]string, error) {
		kids, _, err := s.c.Children(s.journalDir(n))
		return kids, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zkstore: list the journal %s: %w; retry", s.journalDir(n), err)
	}
	seqs := make([]int64, 0, len(names))
	for _, name := range names {
		seq, err := strconv.ParseInt(name, 10, 64)
		if err != nil || seq < 1 || fmt.Sprintf("%010d", seq) != name {
			continue // not an entry: never written by this store
		}
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	return seqs, nil
}

// readEntry reads number n's entry seq: exists false if it is gone.
func (s *Store) readEntry(ctx context.Context, n int, seq int64) (e entry, version int32, exists bool, err error) {
	type got struct {
		data []byte
		st   *zk.Stat
	}
	g, err := call(ctx, func() (got, error) {
		d, st, err := s.c.Get(s.entryPath(n, seq))
		return got{d, st}, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return entry{}, 0, false, nil
	case err != nil:
		return entry{}, 0, false, fmt.Errorf("zkstore: read the journal entry %s: %w; retry", s.entryPath(n, seq), err)
	}
	if err := json.Unmarshal(g.data, &e); err != nil {
		return entry{}, 0, false, fmt.Errorf("zkstore: %s holds %q, not a journal entry this store wrote: %v; delete it, "+
			"or give the store a Path of its own", s.entryPath(n, seq), g.data, err)
	}
	return e, g.st.Version, true, nil
}

// History implements lease.Journal: the retained entries of number machine
// in the store's keyspace, oldest claim first, read after a sync: the
// newest lease.JournalRetention of them.
func (s *Store) History(ctx context.Context, machine int) ([]lease.JournalEntry, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return nil, err
	}
	if err := s.sync(ctx); err != nil {
		return nil, fmt.Errorf("zkstore: journal of machine %d region %d: %w", machine, s.region, err)
	}
	seqs, err := s.journalSeqs(ctx, machine)
	if err != nil {
		return nil, err
	}
	if len(seqs) > lease.JournalRetention {
		seqs = seqs[len(seqs)-lease.JournalRetention:]
	}
	out := make([]lease.JournalEntry, len(seqs))
	have := make([]bool, len(seqs))
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, scanParallel)
	var wg sync.WaitGroup
	for i, seq := range seqs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			e, _, ok, err := s.readEntry(ctx, machine, seq)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if ok {
				out[i], have[i] = e.public(machine, s.region), true
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	kept := out[:0]
	for i, e := range out {
		if have[i] { // an entry deleted between the list and the read (retention) is left out
			kept = append(kept, e)
		}
	}
	return kept, nil
}

// public is e as lease.JournalEntry, of number n of keyspace region.
func (e entry) public(n, region int) lease.JournalEntry {
	return lease.JournalEntry{Machine: n, Region: region, Token: e.Token, Claim: e.Claim, Holder: e.Holder,
		ClaimedMs: e.ClaimedMs, PrevMarkMs: e.PrevMarkMs, StartMs: e.StartMs, End: e.End, EndMs: e.EndMs, EndedMs: e.EndedMs}
}

// journalPlan is what a claim of number n read of its journal (after its
// sync) to write its entry: the sequence numbers there.
type journalPlan struct {
	seqs []int64
}

// planJournal lists number n's journal for a claim, creating its parent
// znodes if absent.
func (s *Store) planJournal(ctx context.Context, n int) (journalPlan, error) {
	seqs, err := s.journalSeqs(ctx, n)
	if err != nil {
		return journalPlan{}, err
	}
	if seqs == nil {
		if err := s.ensure(ctx, s.journalDir(n)); err != nil {
			return journalPlan{}, err
		}
	}
	return journalPlan{seqs: seqs}, nil
}

// ops is a claim's journal ops: the create of its entry e, one past the
// highest listed, and the deletes of the entries that fall out of the
// newest lease.JournalRetention with it. A delete of an entry gone
// meanwhile, or a create of one made meanwhile, fails the claim's
// multi-op: only another claim of the number writes there, whose write of
// the lease znode fails this claim's anyway.
func (p journalPlan) ops(s *Store, n int, e entry) []any {
	next := int64(1)
	if len(p.seqs) > 0 {
		next = p.seqs[len(p.seqs)-1] + 1
	}
	b, _ := json.Marshal(e)
	ops := []any{&zk.CreateRequest{Path: s.entryPath(n, next), Data: b, Acl: s.acl()}}
	for _, seq := range p.seqs {
		if seq <= next-lease.JournalRetention {
			ops = append(ops, &zk.DeleteRequest{Path: s.entryPath(n, seq), Version: -1})
		}
	}
	return ops
}

// endOps returns the op that ends the holding of record r of number n in
// the journal — the newest entry, if it is r's claim (epoch and nonce) and
// not ended yet — as end (lease.End*) at the mark endMs, on the entry's
// version read; none if there is no such entry (a record older than the
// journal, or an entry already ended). Call it after a sync, for a write
// whose multi-op the op joins.
func (s *Store) endOps(ctx context.Context, n int, r record, end string, endMs int64) ([]any, error) {
	if r.Claim == "" {
		return nil, nil
	}
	seqs, err := s.journalSeqs(ctx, n)
	if err != nil || len(seqs) == 0 {
		return nil, err
	}
	seq := seqs[len(seqs)-1]
	e, ver, ok, err := s.readEntry(ctx, n, seq)
	if err != nil || !ok || e.Token != r.Epoch || e.Claim != r.Claim || e.End != lease.EndNone {
		return nil, err
	}
	e.End, e.EndMs, e.EndedMs = end, endMs, time.Now().UnixMilli()
	b, _ := json.Marshal(e)
	return []any{&zk.SetDataRequest{Path: s.entryPath(n, seq), Data: b, Version: ver}}, nil
}
