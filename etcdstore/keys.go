package etcdstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// The three kinds of key kept per machine number (docs/etcd-keys.md).
const (
	kindOwner      = "owner"
	kindMark       = "mark"
	kindQuarantine = "quarantine"
)

// keyspace names the keys of one region, <prefix>/<region>/<kind>/<n>, its
// journal's, <prefix>/journal/<region>/<n>/… (journal.go), and the two keys
// shared by every region under the prefix: the fleet schedule's,
// <prefix>/schedule, and the region registry's, <prefix>/registry. The
// journal lives outside <prefix>/<region>/, which claims read whole.
type keyspace struct {
	base     string // "<prefix>/<region>/"
	journal  string // "<prefix>/journal/<region>/"
	schedule string // "<prefix>/schedule"
	registry string // "<prefix>/registry"
}

func newKeyspace(prefix string, region int) keyspace {
	r := strconv.Itoa(region)
	return keyspace{base: prefix + "/" + r + "/", journal: prefix + "/journal/" + r + "/", schedule: prefix + "/schedule", registry: prefix + "/registry"}
}

// owner is the leased key whose create revision is the fencing token.
func (k keyspace) owner(n int) string { return k.key(kindOwner, n) }

// mark is the plain key holding the high-water mark; it outlives leases.
func (k keyspace) mark(n int) string { return k.key(kindMark, n) }

// quarantine is the plain key whose presence makes n unclaimable.
func (k keyspace) quarantine(n int) string { return k.key(kindQuarantine, n) }

func (k keyspace) key(kind string, n int) string { return k.base + kind + "/" + strconv.Itoa(n) }

// kindPrefix is the prefix of every key of one kind.
func (k keyspace) kindPrefix(kind string) string { return k.base + kind + "/" }

// parse splits a key of this keyspace into its kind and number.
func (k keyspace) parse(key string) (kind string, n int, ok bool) {
	rest, ok := strings.CutPrefix(key, k.base)
	if !ok {
		return "", 0, false
	}
	kind, num, ok := strings.Cut(rest, "/")
	if !ok {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || strconv.Itoa(n) != num {
		return "", 0, false
	}
	switch kind {
	case kindOwner, kindMark, kindQuarantine:
		return kind, n, true
	}
	return "", 0, false
}

// ownerValue is the value of an owner key.
type ownerValue struct {
	Holder      string `json:"holder"`
	ClaimedAtMs int64  `json:"claimed_at_ms"`
}

// markValue is the value of a mark key: the mark, and the claim (token and
// holder) that wrote it. RaiseMarks writes token 0 and holder
// "raise-marks". Renewal is the renewal value an extension wrote
// (lease.Renewals); releases, repairs and RaiseMarks write none, and marks
// written before renewal values read as none.
type markValue struct {
	MarkMs  int64  `json:"mark_ms"`
	Token   uint64 `json:"token"`
	Holder  string `json:"holder"`
	Renewal string `json:"renewal,omitempty"`
}

// raiseMarksHolder is the holder named in marks written by RaiseMarks.
const raiseMarksHolder = "raise-marks"

// quarantineValue is the value of a quarantine key.
type quarantineValue struct {
	QuarantinedAtMs int64 `json:"quarantined_at_ms"`
}

// encode marshals one of the value types above, which cannot fail.
func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// parseOwner decodes an owner key; a nil kv is a free number.
func parseOwner(kv *mvccpb.KeyValue) (ownerValue, error) {
	var v ownerValue
	if kv == nil {
		return v, nil
	}
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return v, fmt.Errorf("etcdstore: key %s holds %q, not an owner record: %w (was it written by hand?)", kv.Key, kv.Value, err)
	}
	return v, nil
}

// parseMark decodes a mark key; a nil kv is a mark of 0.
func parseMark(kv *mvccpb.KeyValue) (markValue, error) {
	var v markValue
	if kv == nil {
		return v, nil
	}
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return v, fmt.Errorf("etcdstore: key %s holds %q, not a mark record: %w (was it written by hand?)", kv.Key, kv.Value, err)
	}
	return v, nil
}

// modRev is a key's mod revision, 0 for a missing key (what etcd compares a
// missing key's revisions with).
func modRev(kv *mvccpb.KeyValue) int64 {
	if kv == nil {
		return 0
	}
	return kv.ModRevision
}

// unchanged compares key with kv, what a read found there (nil: absent):
// its mod revision and, for a key that exists, its value. A decision made
// from that read (a claim's start, the mark a raise replaces) needs the
// value, and a mod revision alone names one write within one history
// only: after etcd is restored without a large enough --bump-revision, a
// later write can land on the same revision with another value.
func unchanged(key string, kv *mvccpb.KeyValue) []clientv3.Cmp {
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", modRev(kv))}
	if kv != nil {
		cmps = append(cmps, clientv3.Compare(clientv3.Value(key), "=", string(kv.Value)))
	}
	return cmps
}

// createRev is a key's create revision, 0 for a missing key.
func createRev(kv *mvccpb.KeyValue) int64 {
	if kv == nil {
		return 0
	}
	return kv.CreateRevision
}

// RawKey names number n's keys in the store's keyspace: the mark key, and
// the owner, mark and quarantine keys (lease.RawKeyer).
func (s *Store) RawKey(n int) (lease.RawKey, error) {
	if n < 0 {
		return lease.RawKey{}, fmt.Errorf("%w: machine number %d is negative", lease.ErrInvalid, n)
	}
	return lease.RawKey{Store: "etcd", Keyspace: s.region, Machine: n, Key: s.keys.mark(n),
		Keys: []string{s.keys.owner(n), s.keys.mark(n), s.keys.quarantine(n)}}, nil
}
