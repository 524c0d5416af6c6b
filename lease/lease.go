package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/snowfence/snowfence/lease/registry"
)

// Errors returned by stores and keepers. Match them with errors.Is.
var (
	// ErrNoFreeNumber: every number in the range is held or quarantined.
	ErrNoFreeNumber = errors.New("lease: no free machine number in range")
	// ErrLost: the lease is no longer this holder's (its token no longer
	// matches, it expired and was taken, or it was revoked). Stop issuing.
	ErrLost = errors.New("lease: lease lost")
	// ErrQuarantined: the number is quarantined and can be neither claimed
	// nor renewed.
	ErrQuarantined = errors.New("lease: machine number quarantined")
	// ErrRestored: the store showed that it went back in time since this
	// holder last looked, as after a restore from an old backup or a
	// failover that lost writes: etcd's revision or raft term fell, its
	// cluster ID changed, a mark the holder wrote vanished or fell, or its
	// owner key came back on another etcd lease; a PostgreSQL server's
	// system identifier or timeline changed; a DynamoDB table's identity
	// changed; a lease table's row went back from what the store saw (gone,
	// a lower epoch, the epoch under another claim, a lower mark under one
	// claim). Every lease claimed before is fenced. Get may return it too,
	// when the record it read is such a sign.
	ErrRestored = errors.New("lease: store restored from an earlier state")
	// ErrNotFound: no record for that number.
	ErrNotFound = errors.New("lease: no such machine number")
	// ErrNotHeld: release or unquarantine of a number that is not in the
	// expected state.
	ErrNotHeld = errors.New("lease: machine number not held")
	// ErrInvalid: a request outside the store's limits (range, number).
	// It is registry.ErrInvalid: one sentinel for an invalid request,
	// whether a store, a keeper or the region registry refuses it.
	ErrInvalid = registry.ErrInvalid
	// ErrSchedule: the claimer's layout schedule differs from the fleet's
	// schedule stored beside the leases. Two layouts can put the same bits
	// in an ID for different machines, so a fleet must share one schedule;
	// set it with "snowfence schedule set" and give every holder the same.
	ErrSchedule = errors.New("lease: layout schedule differs from the fleet's")
	// ErrConflict: a compare-and-set of the fleet schedule found another
	// version than the one it was given; read it again and retry.
	ErrConflict = errors.New("lease: fleet schedule changed concurrently")
	// ErrInUse: a write allowed only on a store that holds no lease
	// record (UnusedScheduleSetter) found one.
	ErrInUse = errors.New("lease: the store holds lease records")
)

// Range is an inclusive range of machine numbers, one per holder class
// (service workers 0–63, embedded callers 64–1023, …), so one class cannot
// exhaust another.
type Range struct {
	Lo, Hi int
}

// Contains reports whether n is in the range.
func (r Range) Contains(n int) bool { return n >= r.Lo && n <= r.Hi }

// Size is the number of machine numbers in the range.
func (r Range) Size() int { return r.Hi - r.Lo + 1 }

// Validate checks that the range is non-empty, non-negative and below limit
// (the number of machine numbers the layout has).
func (r Range) Validate(limit int) error {
	if r.Lo < 0 || r.Hi < r.Lo || r.Hi >= limit {
		return fmt.Errorf("%w: machine range %d–%d must satisfy 0 ≤ lo ≤ hi < %d", ErrInvalid, r.Lo, r.Hi, limit)
	}
	return nil
}

// String formats the range as "lo-hi".
func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// ParseRange reads "lo-hi" or a single number: decimal digits only, lo ≤ hi.
func ParseRange(s string) (Range, error) {
	bad := fmt.Errorf("%w: machine range %q: write lo-hi with lo ≤ hi, e.g. 0-63, or one number", ErrInvalid, s)
	lo, hi, isPair := strings.Cut(s, "-")
	if !isPair {
		hi = lo
	}
	num := func(t string) (int, bool) {
		if t == "" || len(t) > 9 || strings.Trim(t, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.Atoi(t)
		return n, err == nil
	}
	l, ok1 := num(lo)
	h, ok2 := num(hi)
	if !ok1 || !ok2 || l > h {
		return Range{}, bad
	}
	return Range{Lo: l, Hi: h}, nil
}

// A Lease is one holder's claim on one machine number.
type Lease struct {
	// Machine and Region are the leased numbers.
	Machine int
	Region  int
	// Holder is who holds it (see ThisProcess).
	Holder string
	// Token is the fencing token: a new value on every claim, never reused
	// by the store (etcd: the owner key's create revision; tables: the
	// epoch).
	Token uint64
	// StartMs is the first wall-clock millisecond this holder may use: at or
	// above the mark any earlier holder left, and at or above the claimer's
	// clock at the claim.
	StartMs int64
	// MarkMs is the high-water mark recorded in the store for this lease
	// (Unix ms, exclusive): the holder may issue timestamps below it.
	MarkMs int64
	// Schedule is the layout schedule the lease was claimed with
	// (ClaimRequest.Schedule, "v1" for the default). Extend refuses with
	// ErrSchedule once the fleet schedule stored differs from it.
	Schedule string
	// Claim identifies the claim attempt that made this lease, unique to
	// it: the nonce a table store wrote with the claim, the etcd lease the
	// owner key is bound to. A token can repeat once a store went back in
	// time (a restored row's epoch counts up again), and a holder name can
	// be shared, so Extend and Release compare it too, and so does the
	// keeper when it re-reads a record after an error of unknown outcome.
	Claim string
	// Renewal is the renewal value the store's record held after this
	// lease's last acknowledged write: empty after the claim, then the
	// random value each extension writes (Renewals). A cloned process
	// holds the same lease; the copy whose extension lands second finds
	// the other's value and gets ErrLost.
	Renewal string
}

func (l *Lease) String() string {
	return fmt.Sprintf("machine %d region %d holder %s token %d mark %s",
		l.Machine, l.Region, l.Holder, l.Token, FormatMs(l.MarkMs))
}

// A Record is what a store holds for one machine number.
type Record struct {
	Machine int    `json:"machine"`
	Region  int    `json:"region"`
	Holder  string `json:"holder,omitempty"` // empty when free
	Token   uint64 `json:"token,omitempty"`
	// MarkMs is the high-water mark (Unix ms, exclusive): the current holder
	// issues only timestamps below it, and every later holder starts at or
	// above it.
	MarkMs int64 `json:"mark_ms"`
	// ExpiresMs is when the holder's lease runs out, where the store knows
	// it (zero otherwise).
	ExpiresMs int64 `json:"expires_ms,omitempty"`
	// Quarantined numbers can be neither claimed nor renewed.
	Quarantined bool `json:"quarantined,omitempty"`
	// Claim identifies the current holder's claim attempt (Lease.Claim),
	// where the store keeps one.
	Claim string `json:"claim,omitempty"`
	// Renewal is the renewal value the current holder's last extension
	// wrote (Lease.Renewal); empty before its first, or for a store that
	// keeps none.
	Renewal string `json:"renewal,omitempty"`
}

// Held reports whether the record names a holder.
func (r Record) Held() bool { return r.Holder != "" }

// A ClaimRequest asks a store for a machine number. Every store checks it
// with Check first and refuses, with ErrInvalid, what Check refuses.
type ClaimRequest struct {
	// Holder is the claimer's identity.
	Holder string
	// Range is where to look, starting from a random number in it.
	Range Range
	// NowMs is the claimer's wall clock in Unix ms, positive. Table stores
	// claim only numbers whose lease expired by it; every store starts the
	// lease at or above it.
	NowMs int64
	// LeaseFor is how long the lease lasts without renewal (etcd: the TTL of
	// its etcd lease; tables: the expiry written, NowMs + LeaseFor).
	LeaseFor time.Duration
	// MaxAhead: a number whose mark is further than this ahead of NowMs is
	// passed over (released again if already claimed) rather than waited
	// for. Numbers whose mark is behind NowMs are preferred.
	MaxAhead time.Duration
	// Exclude lists numbers not to claim (the one just lost, say).
	Exclude []int
	// Schedule is the claimer's layout schedule in its textual form
	// (snowfence.Schedule.String). Empty means the default schedule, "v1".
	// The store refuses the claim with ErrSchedule unless it equals the
	// fleet schedule it keeps (FleetSchedule; "v1" when never set), and
	// the lease remembers it so that every Extend compares again.
	Schedule string
	// RestoreWindow is the longest a holder cut off from the store may go
	// on issuing after its last acknowledged renewal (the keeper's
	// RestoreWindow: max of Reserve and SelfFence, plus a clock-skew
	// budget). Once a store has noticed that it went back in time, every
	// claim starts at least this long after the moment it noticed, read
	// on the claimer's clock (NowMs). Zero means the store's own default.
	RestoreWindow time.Duration
}

// A Store keeps machine-number leases: the fence contract, what a holder
// needs and all a Keeper calls. Every method is safe for concurrent use.
// Implementations: etcdstore, pgstore, dynamostore and zkstore, each of
// which also implements Admin (the operator's actions) and registry.Store
// (its copy of the region registry); a store of one's own needs only Store
// to be held through a Keeper, and passes leasetest.Run.
//
// After any error other than the typed ones, the write may or may not have
// taken effect; callers re-read with Get before deciding.
type Store interface {
	// Claim takes a free number in req.Range. The returned lease's StartMs is
	// at or above both the stored mark and req.NowMs; its MarkMs may not be
	// above StartMs yet, so call Extend before issuing. Of the region
	// registry's rules it checks only the schedule (the store's record
	// against its copy of the registry's); that the store's region is
	// known, in service and leases from its home store is checked by
	// StartKeeper, so hold numbers through a Keeper, not by calling Claim.
	Claim(ctx context.Context, req ClaimRequest) (*Lease, error)
	// Extend raises the lease's mark to markMs (never lowers it) and keeps
	// the lease alive for leaseFor, comparing on the lease's holder and
	// token: ErrLost if they no longer match, ErrQuarantined if the number
	// was quarantined. Every call writes a fresh renewal value, even one
	// that moves no mark, returned in the lease's Renewal, and compares on
	// the record still holding one this Store value wrote or sent for the
	// claim (Renewals: l.Renewal, or a write whose reply was lost):
	// ErrLost otherwise, since a second process renews the same claim, or
	// ErrRestored for one it wrote before its last (Renewals.Check). Only
	// after it returns may timestamps below markMs be issued.
	Extend(ctx context.Context, l *Lease, markMs int64, leaseFor time.Duration) (*Lease, error)
	// Release gives the number up, recording markMs (the end of the last
	// timestamp issued) as the mark so the next holder starts above it. It
	// may lower the mark from this holder's own reservation, but never
	// below a mark anyone else wrote (RaiseMarks). ErrLost if the lease was
	// no longer held, or if the record holds a renewal value this Store
	// value did not write (as Extend).
	Release(ctx context.Context, l *Lease, markMs int64) error
	// Get returns the record of one number (a zero record, not an error, for
	// a number never claimed).
	Get(ctx context.Context, machine int) (Record, error)
	// MaxRestoreWindow is the longest restore window a holder of this
	// store may have: after a restore it noticed, the store starts every
	// claim at least this long after the moment it noticed, whichever
	// holder's timings the restore cut off, and StartKeeper refuses a
	// keeper whose own window is longer.
	MaxRestoreWindow() time.Duration
	// MaxNoticeWindow is the longest notice window (NoticeWindow of its
	// SelfFence) a holder of this store may have: how long after another
	// claim of its number commits it may still be issuing on it, until its
	// self-fence stops it. The keeper starts the first grant of every claim
	// at least this long after the claim, whichever holder's timings it
	// must outlast (a store restored from an earlier state hands out
	// numbers that running holders still issue on, and a fresh claimer
	// cannot tell), and StartKeeper refuses a keeper whose own window is
	// longer. Every holder of the store must see the same bound: a wrapper
	// may raise it (its holders wait longer), never lower it, since a
	// holder through the plain store may still issue for the store's own
	// bound after a wrapper's holder claimed its number.
	MaxNoticeWindow() time.Duration
	// Keyspace returns a Store on the same connection whose leases live in
	// keyspace index (what the store's Config.Region selects; KeyspaceOf
	// names the keyspace of each layout step), sharing the fleet schedule,
	// the region registry and every table- or prefix-level record with the
	// receiver; its Region() is index. It is checked as a store opened
	// with Config.Region = index would be: ErrInvalid for an index the
	// store cannot address (negative, or beyond the store's own bound).
	// For index equal to the receiver's region it returns a Store on the
	// receiver's own keyspace (a new value). Closing it does not close the
	// connection the receiver owns; the receiver must outlive it.
	Keyspace(index int) (Store, error)
	// Region is the keyspace the store's leases live in (what its
	// Config.Region selected, or the index given to Keyspace). StartKeeper
	// refuses a keeper whose Region differs: it would mint one region's IDs
	// on numbers leased in another's keyspace. A method of the contract,
	// not an optional one, so that a wrapper embedding Store forwards it.
	Region() int
	// RegistryReader returns what StartKeeper reads to enforce the region
	// registry's rules before the first claim (keeperregistry.go): the
	// store's copy of the registry, the identity of where that copy lives,
	// and the store's fleet schedule record; every keyspace of a store
	// reads one copy. A store that keeps no registry returns nil (untyped:
	// a nil pointer in the interface is not nil), and its keepers take the
	// fleet to be one region, as for a store whose registry was never
	// written. It is a method of the contract, not an optional interface,
	// so that a wrapper embedding Store passes the rules on rather than
	// hiding them.
	RegistryReader() RegistryReader
	// Close releases the store's connections (not the leases).
	Close() error
}

// A RegistryReader is what a keeper reads of its store at start to keep
// the region registry's rules (Store.RegistryReader): the store's copy of
// the registry and its identity (registry.Reader), and the store's fleet
// schedule record.
type RegistryReader interface {
	registry.Reader
	// FleetSchedule returns the layout schedule stored beside the leases:
	// version 0 and DefaultFleetSchedule when none was ever set.
	FleetSchedule(ctx context.Context) (FleetSchedule, error)
}

// An Admin is a Store with the operator's actions: listing, quarantine,
// raising marks after a restore, the journal of who held each number, the
// fleet schedule record, and the store's copy of the region registry. The
// CLI (snowfence leases, quarantine, raise-marks, who, schedule, regions)
// and the server's status pages use it; a Keeper never does. Every store
// of this module implements it (leasetest.RunAdmin is its conformance
// suite; registrytest.Run that of the registry's copy).
type Admin interface {
	Store
	// List returns the records of every number that has one, in order.
	List(ctx context.Context) ([]Record, error)
	// Quarantine makes the number unclaimable and unrenewable; its holder
	// stops at its mark. Unquarantine undoes it.
	Quarantine(ctx context.Context, machine int) error
	Unquarantine(ctx context.Context, machine int) error
	// RaiseMarks fences every holder of a number in r and raises the mark
	// of every number in r to at least markMs, in one conditional write per
	// number, so that every later claim starts at or above it: the
	// operator's action after a restore from an old backup
	// (docs/runbook.md). A holder whose claim survived in the restored
	// store gets ErrLost at its next extension and claims again above the
	// raised mark; it issues nothing past the mark it held meanwhile. It
	// returns how many records it changed.
	RaiseMarks(ctx context.Context, r Range, markMs int64) (int, error)
	// SetFleetSchedule writes text as the fleet schedule if the stored
	// version is still prev (0: never set), and returns the new record
	// (version prev+1). ErrConflict if the version moved. It checks
	// nothing else: use SetSchedule, which refuses changes to instants
	// already past or near.
	SetFleetSchedule(ctx context.Context, prev int64, text string) (FleetSchedule, error)
	// Journal is the store's record of who held each number when
	// (journal.go): Claim writes an entry in the same atomic write as the
	// claim, Release, Quarantine and RaiseMarks end it in theirs.
	Journal
	// Store is the store's copy of the region registry, beside the
	// leases of every region it holds; its reads are RegistryReader's.
	registry.Store
	// RegistryReader's FleetSchedule: the fleet schedule record.
	FleetSchedule(ctx context.Context) (FleetSchedule, error)
	// AdminKeyspace is Keyspace with the operator's actions: an Admin on
	// keyspace index, checked and shared as Keyspace's Store is.
	AdminKeyspace(index int) (Admin, error)
}
