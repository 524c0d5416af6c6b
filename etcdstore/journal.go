package etcdstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// The lease journal (docs/etcd-keys.md, "The lease journal"). Per region
// and number n, each claim c (its Claim, the hex etcd lease ID) has
//
//	<prefix>/journal/<region>/<n>/<c>      written by the claim's own transaction; its create revision is the token
//	<prefix>/journal/<region>/<n>/<c>/end  written by the transaction that ended the holding, if one did
//
// The entry key's value holds only what the claimer knew before its
// transaction: the holder, its clock, the mark it compared unchanged and
// the start it computed from it. Its token is the transaction's revision,
// which is also the entry key's create revision. Endings go in a key of
// their own, written by the ending transaction without reading the entry
// first; its nested compare on the entry key's create revision writes it
// only for the holding it ends.
//
// The keys live outside <prefix>/<region>/, which every claim reads
// whole and restore detection walks.

// journalEnd is the suffix of an entry's ending key.
const journalEnd = "/end"

// maxRetire bounds the old entries one claim drops: the claim's
// transaction stays small even when a number's journal holds many more
// entries than JournalRetention (written by hand, say); each claim drops
// up to this many until the journal is back to JournalRetention.
const maxRetire = 8

// entryValue is the value of a journal entry key.
type entryValue struct {
	Holder     string `json:"holder"`
	ClaimedMs  int64  `json:"claimed_ms"`
	PrevMarkMs int64  `json:"prev_mark_ms"`
	StartMs    int64  `json:"start_ms"`
}

// endValue is the value of a journal entry's ending key.
type endValue struct {
	End     string `json:"end"`
	EndMs   int64  `json:"end_ms,omitempty"`
	EndedMs int64  `json:"ended_ms"`
}

// journalOf is the prefix of number n's journal keys, "<prefix>/journal/<region>/<n>/".
func (k keyspace) journalOf(n int) string { return k.journal + strconv.Itoa(n) + "/" }

// entry is the journal entry key of claim c of number n.
func (k keyspace) entry(n int, c string) string { return k.journalOf(n) + c }

// journalKey splits a key under a number's journal prefix into the claim
// it belongs to and whether it is the ending key; ok is false for a key
// of another shape.
func journalKey(prefix, key string) (claim string, isEnd, ok bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", false, false
	}
	claim, isEnd = strings.CutSuffix(rest, journalEnd)
	if claim == "" || strings.ContainsFunc(claim, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef-", r) }) {
		return "", false, false
	}
	return claim, isEnd, true
}

// History implements lease.Journal: the retained journal of one number of
// the store's keyspace, from one linearizable read of its journal keys,
// oldest claim first (by token, the order etcd committed the claims in).
// A value that does not parse is an error, naming the key.
func (s *Store) History(ctx context.Context, machine int) ([]lease.JournalEntry, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return nil, err
	}
	prefix := s.keys.journalOf(machine)
	resp, err := s.get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcdstore: read the journal of machine %d: %w", machine, err)
	}
	entries := map[string]*lease.JournalEntry{}
	ends := map[string]*mvccpb.KeyValue{}
	for _, kv := range resp.Kvs {
		claim, isEnd, ok := journalKey(prefix, string(kv.Key))
		switch {
		case !ok:
			continue
		case isEnd:
			ends[claim] = kv
			continue
		}
		var v entryValue
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return nil, fmt.Errorf("etcdstore: key %s holds %q, not a journal entry: %w (was it written by hand?)", kv.Key, kv.Value, err)
		}
		entries[claim] = &lease.JournalEntry{Machine: machine, Region: s.region, Token: uint64(kv.CreateRevision), Claim: claim,
			Holder: v.Holder, ClaimedMs: v.ClaimedMs, PrevMarkMs: v.PrevMarkMs, StartMs: v.StartMs}
	}
	out := make([]lease.JournalEntry, 0, len(entries))
	for claim, e := range entries {
		if kv := ends[claim]; kv != nil {
			var v endValue
			if err := json.Unmarshal(kv.Value, &v); err != nil {
				return nil, fmt.Errorf("etcdstore: key %s holds %q, not a journal entry's end: %w (was it written by hand?)", kv.Key, kv.Value, err)
			}
			e.End, e.EndMs, e.EndedMs = v.End, v.EndMs, v.EndedMs
		}
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b lease.JournalEntry) int { return cmp.Compare(a.Token, b.Token) })
	return out, nil
}

// retire returns the delete operations a claim of number n adds to its
// transaction so that, with its own entry, the number keeps the newest
// JournalRetention entries: the oldest entries beyond that in kvs (the
// number's journal keys as read before the claim, keys only) and their
// ending keys, at most maxRetire entries. clash reports that kvs already
// hold an entry of claim c (an etcd lease ID repeated, after a restore).
func (k keyspace) retire(n int, c string, kvs []*mvccpb.KeyValue) (drop []clientv3.Op, clash bool) {
	prefix := k.journalOf(n)
	var entries []*mvccpb.KeyValue
	ended := map[string]bool{}
	for _, kv := range kvs {
		claim, isEnd, ok := journalKey(prefix, string(kv.Key))
		switch {
		case !ok:
		case isEnd:
			ended[claim] = true
		default:
			entries = append(entries, kv)
			clash = clash || claim == c
		}
	}
	slices.SortFunc(entries, func(a, b *mvccpb.KeyValue) int { return cmp.Compare(a.CreateRevision, b.CreateRevision) })
	excess := min(len(entries)+1-lease.JournalRetention, maxRetire)
	for _, kv := range entries[:max(excess, 0)] {
		drop = append(drop, clientv3.OpDelete(string(kv.Key)))
		if claim, _, _ := journalKey(prefix, string(kv.Key)); ended[claim] {
			drop = append(drop, clientv3.OpDelete(string(kv.Key)+journalEnd))
		}
	}
	return drop, clash
}

// endOp is the nested transaction an ending write (Release, Quarantine,
// RaiseMarks) adds to its own: it writes the ending key of the entry of
// claim c of number n only if that entry is the claim with the given
// token (the owner key's create revision the outer transaction compares),
// and, if onlyOpen, only if no write ended it before. A holding claimed
// before the journal existed has no entry, and gets no ending.
func (s *Store) endOp(n int, c string, token int64, onlyOpen bool, v endValue) clientv3.Op {
	key := s.keys.entry(n, c)
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", token)}
	if onlyOpen {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key+journalEnd), "=", 0))
	}
	return clientv3.OpTxn(cmps, []clientv3.Op{clientv3.OpPut(key+journalEnd, encode(v))}, nil)
}

// releaseEndOp ends a released entry at the mark the release wrote: as
// quarantined if the number is quarantined (the operator's quarantine ended
// the holding; the holder's release after it only set the final mark, which
// the quarantine's own ending could not know), else as released.
func (s *Store) releaseEndOp(n int, c string, token, markMs int64) clientv3.Op {
	now := s.nowMs()
	return clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(s.keys.quarantine(n)), ">", 0)},
		[]clientv3.Op{s.endOp(n, c, token, false, endValue{End: lease.EndQuarantined, EndMs: markMs, EndedMs: now})},
		[]clientv3.Op{s.endOp(n, c, token, false, endValue{End: lease.EndReleased, EndMs: markMs, EndedMs: now})})
}

// nowMs is the store's wall clock, for the journal's EndedMs.
func (s *Store) nowMs() int64 { return s.clock.Now().WallMs }
