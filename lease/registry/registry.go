package registry

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/snowfence/snowfence"
)

// Errors of the region registry. Match them with errors.Is.
var (
	// ErrConflict: the stored registry is not at the version the
	// write expected; another change came first.
	ErrConflict = errors.New("lease: the region registry changed since it was read")
	// ErrDiverged: the copies of the registry in the regions'
	// stores differ (a change that stopped half way); see Sync.
	ErrDiverged = errors.New("lease: the copies of the region registry differ")
	// ErrUnknownRegion: no region of that name or number is registered.
	ErrUnknownRegion = errors.New("lease: unknown region")
	// ErrRegionRetired: the region is retired; its number is never used
	// again.
	ErrRegionRetired = errors.New("lease: region retired")
	// ErrNoRegionNumber: every region number of the layout has been used.
	ErrNoRegionNumber = errors.New("lease: no region number left")
)

// A Region is one entry of the registry.
type Region struct {
	// Name is the region's name: lower-case letters, digits and hyphens,
	// starting with a letter (CheckRegionName), such as "eu-west-1".
	Name string `json:"name"`
	// Number is the region number IDs carry in their region bits.
	Number int `json:"number"`
	// CreatedMs is when the region was added, Unix ms.
	CreatedMs int64 `json:"created_ms"`
	// RetiredMs is when it was retired, Unix ms; 0 while it is in service.
	RetiredMs int64 `json:"retired_ms,omitempty"`
	// Home is the name of the copy of the registry (one of
	// Registry.Copies) whose store the region's holders lease from: a
	// holder started in the region on any other store is refused
	// (CheckHome). Empty in a region recorded before homes were kept (or
	// added without one): then where its holders lease is not checked.
	Home string `json:"home,omitempty"`
}

// Retired reports whether the region is retired.
func (r Region) Retired() bool { return r.RetiredMs != 0 }

// A Registry is the list of every region ever added, retired ones
// included, in number order, and the fleet's layout schedule, at a version
// that every change raises by one. The zero value is the registry of a
// store where none was written.
type Registry struct {
	// Version is 0 when no registry was written, else the number of
	// changes made to it.
	Version int64 `json:"version"`
	// Regions are every region ever added, in number order.
	Regions []Region `json:"regions"`
	// Copies names the copies of the registry, in the order every change
	// writes them (by name), as the first change through Update
	// gave them; later changes must name the same copies. Empty until then.
	Copies []string `json:"copies,omitempty"`
	// CopyIdentities are the copies' identities (RegistryIdentity: where
	// each copy lives, as its store reports it), parallel to Copies: the
	// identity of Copies[i] is CopyIdentities[i]. Every change reads each
	// copy's identity and refuses a copy whose identity is not the one
	// recorded for its name, and two copies of one identity. Empty in a
	// registry written before identities were kept: its next change
	// records them.
	CopyIdentities []string `json:"copy_identities,omitempty"`
	// Schedule is the fleet's layout schedule in canonical text
	// (CanonicalSchedule): the one every region's store keeps as its fleet
	// schedule record and every holder of every region must start with
	// (CheckHolderSchedule). Empty means not recorded yet — a registry
	// written before it was kept, or one created without it — and then
	// holders are checked against their own store's record only. Once
	// recorded it is never emptied: changes keep it, and WithSchedule or
	// ChangeFleetSchedule change it.
	Schedule string `json:"schedule,omitempty"`
}

// A Copy is one copy of the registry — one region's store — with
// the name its operator gives it (a store URL, say). The names are
// recorded in the registry (Registry.Copies), so that a change naming
// other copies, or fewer, is refused, and every change writes them in the
// order of their names: the first copy decides between two changes only
// if every change writes it first. Beside each name the registry records
// the identity the store reports (RegistryIdentity), so that a name that
// has come to mean another store, or two names meaning one, is refused
// too.
type Copy struct {
	Name  string
	Store Store
}

// Equal reports whether r and o are the same registry.
func (r Registry) Equal(o Registry) bool {
	return r.Version == o.Version && slices.Equal(r.Regions, o.Regions) && slices.Equal(r.Copies, o.Copies) &&
		slices.Equal(r.CopyIdentities, o.CopyIdentities) && r.Schedule == o.Schedule
}

// Named returns the region called name.
func (r Registry) Named(name string) (Region, bool) {
	for _, g := range r.Regions {
		if g.Name == name {
			return g, true
		}
	}
	return Region{}, false
}

// Numbered returns the region with number n.
func (r Registry) Numbered(n int) (Region, bool) {
	for _, g := range r.Regions {
		if g.Number == n {
			return g, true
		}
	}
	return Region{}, false
}

// NameOf is the name decode gives region number n: the registered name
// (a retired region keeps its name: its IDs still decode to it), false if
// the registry does not have n; while no registry is written (Version 0),
// the number in decimal, as decode gives it without names.
func (r Registry) NameOf(n int) (string, bool) {
	if r.Version == 0 {
		return strconv.Itoa(n), true
	}
	g, ok := r.Numbered(n)
	return g.Name, ok
}

// Resolve finds the region a holder is started in: text is a region's
// name or its number in decimal. The region must be registered and in
// service (ErrUnknownRegion, ErrRegionRetired). With no registry written
// (Version 0) a number is taken as it is, as before regions had names,
// and a name is unknown.
func (r Registry) Resolve(text string) (Region, error) {
	n, numErr := strconv.Atoi(text)
	if numErr == nil && n < 0 {
		return Region{}, fmt.Errorf("%w: region %d is negative", ErrInvalid, n)
	}
	if r.Version == 0 {
		if numErr == nil {
			return Region{Number: n}, nil
		}
		return Region{}, fmt.Errorf("%w: %q: the store has no region registry yet; add the region first (snowfence regions add %s)", ErrUnknownRegion, text, text)
	}
	var g Region
	var ok bool
	if numErr == nil {
		g, ok = r.Numbered(n)
	} else {
		g, ok = r.Named(text)
	}
	switch {
	case !ok:
		return Region{}, fmt.Errorf("%w: %q is not in the region registry (version %d); list the regions with snowfence regions list, or add it with snowfence regions add NAME", ErrUnknownRegion, text, r.Version)
	case g.Retired():
		return Region{}, fmt.Errorf("%w: region %s (number %d) was retired at %s; its number is never used again: start the holder in a region in service (snowfence regions list)", ErrRegionRetired, g.Name, g.Number, FormatMs(g.RetiredMs))
	}
	return g, nil
}

// Left returns how many region numbers below limit no region has had.
func (r Registry) Left(limit int) int {
	used := 0
	for _, g := range r.Regions {
		if g.Number < limit {
			used++
		}
	}
	return max(limit-used, 0)
}

// WithRegion returns r, one version on, with a region called name added
// at nowMs under the lowest number below limit (the layout's 1 <<
// RegionBits) that no region ever had, with no home recorded
// (WithRegionHome records one).
func (r Registry) WithRegion(name string, nowMs int64, limit int) (Registry, Region, error) {
	return r.WithRegionHome(name, "", nowMs, limit)
}

// WithRegionHome is WithRegion recording home as the region's Home: the
// copy whose store its holders lease from. A home that is not one of the
// copies r records is ErrInvalid; in a registry that records no copies yet
// (one being created) Update records them after the change, and
// Check refuses the result if home is not among them.
func (r Registry) WithRegionHome(name, home string, nowMs int64, limit int) (Registry, Region, error) {
	return r.WithRegionNumber(name, home, AnyNumber, nowMs, limit)
}

// AnyNumber asks WithRegionNumber for the lowest region number no region
// ever had.
const AnyNumber = -1

// WithRegionNumber is WithRegionHome under the region number given
// (AnyNumber: the lowest no region ever had), so that a region keeps the
// number it has in another fleet or plan. It is ErrInvalid for a number
// outside the layout's 0..limit-1 and for one any region ever had — a
// retired region's included: its IDs are out there, and a new region's
// would be told from them by nothing. Made through Update, the change is
// written with a version compare on every copy, so two adds of one number
// at once cannot both succeed.
func (r Registry) WithRegionNumber(name, home string, number int, nowMs int64, limit int) (Registry, Region, error) {
	if err := CheckRegionName(name); err != nil {
		return r, Region{}, err
	}
	if home != "" && len(r.Copies) > 0 && !slices.Contains(r.Copies, home) {
		return r, Region{}, fmt.Errorf("%w: home %q of region %s is not a copy of the registry (%s): name one of them", ErrInvalid, home, name, strings.Join(r.Copies, ", "))
	}
	if g, ok := r.Named(name); ok {
		return r, Region{}, fmt.Errorf("%w: region %s exists already (number %d); a retired name is not reused either: choose another name", ErrInvalid, name, g.Number)
	}
	n := number
	switch {
	case number == AnyNumber:
		for n = 0; n < limit; n++ {
			if _, taken := r.Numbered(n); !taken {
				break
			}
		}
	case number < 0 || number >= limit:
		return r, Region{}, fmt.Errorf("%w: region number %d is outside 0-%d, the region numbers of the fleet schedule's last layout (%d region bits)",
			ErrInvalid, number, limit-1, bits.Len(uint(limit-1)))
	default:
		if g, taken := r.Numbered(number); taken {
			was := ""
			if g.Retired() {
				was = " (retired at " + FormatMs(g.RetiredMs) + ")"
			}
			return r, Region{}, fmt.Errorf("%w: region number %d was given to region %s%s; a number is never given twice, retired ones included: "+
				"choose one no region ever had (snowfence regions list shows them)", ErrInvalid, number, g.Name, was)
		}
	}
	if n >= limit {
		return r, Region{}, fmt.Errorf("%w: all %d region numbers of the layout have been used (retired numbers are never reused); a layout with more region bits is needed", ErrNoRegionNumber, limit)
	}
	g := Region{Name: name, Number: n, CreatedMs: nowMs, Home: home}
	next := Registry{Version: r.Version + 1, Regions: append(slices.Clone(r.Regions), g), Copies: r.Copies, CopyIdentities: r.CopyIdentities, Schedule: r.Schedule}
	slices.SortFunc(next.Regions, func(a, b Region) int { return a.Number - b.Number })
	return next, g, nil
}

// WithRetired returns r, one version on, with the region called name
// retired at nowMs. Its number stays taken.
func (r Registry) WithRetired(name string, nowMs int64) (Registry, Region, error) {
	next := Registry{Version: r.Version + 1, Regions: slices.Clone(r.Regions), Copies: r.Copies, CopyIdentities: r.CopyIdentities, Schedule: r.Schedule}
	for i, g := range next.Regions {
		if g.Name != name {
			continue
		}
		if g.Retired() {
			return r, g, fmt.Errorf("%w: region %s was retired already at %s", ErrRegionRetired, name, FormatMs(g.RetiredMs))
		}
		next.Regions[i].RetiredMs = nowMs
		return next, next.Regions[i], nil
	}
	return r, Region{}, fmt.Errorf("%w: %q is not in the region registry", ErrUnknownRegion, name)
}

// CheckRegionName refuses a name that is not 1 to 63 lower-case letters,
// digits and hyphens starting with a letter and not ending with a hyphen
// (so that a name never reads as a region number).
func CheckRegionName(name string) error {
	bad := len(name) == 0 || len(name) > 63 || name[0] < 'a' || name[0] > 'z' || name[len(name)-1] == '-'
	for i := 0; !bad && i < len(name); i++ {
		c := name[i]
		bad = !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')
	}
	if bad {
		return fmt.Errorf("%w: region name %q: use 1 to 63 lower-case letters, digits and hyphens, starting with a letter, such as eu-west-1", ErrInvalid, name)
	}
	return nil
}

// A Reader reads one copy of the region registry and says where it lives:
// what a holder's start-up checks read (lease.StartKeeper).
type Reader interface {
	// Registry returns the stored registry: the zero Registry if none was
	// written.
	Registry(ctx context.Context) (Registry, error)
	// RegistryIdentity returns a stable identity of the place this
	// store's copy of the registry lives, read from the store itself and
	// not from how it was reached: the same for every store value on that
	// copy (every keyspace of a lease store shares it) and different for
	// two copies. etcd: the cluster ID and the key prefix; PostgreSQL: the
	// server's system identifier, the database, schema and table;
	// DynamoDB: the table's ARN and TableId. A store rebuilt or restored
	// into a new cluster or table reports a new identity.
	RegistryIdentity(ctx context.Context) (string, error)
}

// A Store keeps one copy of the region registry: every lease store
// implements it, beside its leases (etcd: the key <prefix>/registry;
// PostgreSQL: the table <table>_region; DynamoDB: an item of the lease
// table). registrytest.Run is its conformance suite.
type Store interface {
	Reader
	// SetRegistry writes next if the stored registry is at version
	// next.Version-1 (none written, for version 1). If it is at another
	// version it returns ErrConflict, unless the stored registry
	// equals next: a retry of a write that committed, or a second copy on
	// the same store, succeeds.
	SetRegistry(ctx context.Context, next Registry) error
	// CreateRegistry writes r if no registry is stored (create if
	// absent), whatever r's version: how a copy joins a registry already
	// at some version (Join, Sync). A stored registry
	// equal to r is success (a retry); any other is ErrConflict.
	CreateRegistry(ctx context.Context, r Registry) error
}

// Conflict is a Store's answer when its conditional write
// of next changed nothing and the stored registry cur was read back: nil
// if cur is next already (a retry of a write that committed, or a second
// copy on the same store), else ErrConflict naming where the copy
// is and the version found there.
func Conflict(where string, cur, next Registry) error {
	if cur.Equal(next) {
		return nil
	}
	return fmt.Errorf("%w: %s is at version %d, not %d; read it again", ErrConflict, where, cur.Version, next.Version-1)
}

// CreateConflict is a Store's answer when its
// create-if-absent write of r (CreateRegistry) changed nothing and the
// stored registry cur was read back: nil if cur is r already (a retry),
// else ErrConflict naming where the copy is and its version.
func CreateConflict(where string, cur, r Registry) error {
	if cur.Equal(r) {
		return nil
	}
	return fmt.Errorf("%w: %s holds a registry already, at version %d; a copy is created only where none is", ErrConflict, where, cur.Version)
}

// registryRetries bounds how often Update re-reads after another
// operator's change won the first copy.
const registryRetries = 8

// waitBehind reports whether err, from readCopies on attempt, says some
// copies are one change behind the first — most likely another operator's
// change between its first copy and the rest — with attempts left; it then
// gives that change a moment to finish before the caller reads again.
func waitBehind(ctx context.Context, err error, attempt int) (bool, error) {
	var behind *copiesBehind
	if !errors.As(err, &behind) || attempt >= registryRetries-1 {
		return false, nil
	}
	return true, snowfence.SystemClock().Sleep(ctx, time.Duration(attempt+1)*registryBackoff)
}

// Update changes the registry of a fleet: it reads every copy's
// identity (RegistryIdentity) and every copy (each region's store, taken
// in the order of their names), refuses with ErrDiverged if they
// differ, with ErrInvalid if they are not the copies the registry records
// (Registry.Copies: the first change records them) and with
// ErrCopyIdentity (a *CopyIdentityError) if two copies are one store or a
// copy's identity is not the one recorded for its name (the first change
// records them, and so does the next change of a registry written before
// identities were kept), applies change to the registry read, refuses a
// result Check refuses (no store would write it), and writes the
// result to every copy in that order, each with its version compare. The
// first copy decides between two operators changing the registry at once:
// the one whose write there fails on its version re-reads and applies its
// change again (so two regions added at once get two numbers). A compare
// that fails on a later copy means the copies diverged meanwhile:
// ErrDiverged.
//
// Not protected: two operators creating the registry at once (no copies
// recorded yet) with different sets of copies; create it once, from one
// place, before anyone else changes it.
func Update(ctx context.Context, copies []Copy, change func(Registry) (Registry, error)) (Registry, error) {
	copies, names, err := sortedCopies(copies)
	if err != nil {
		return Registry{}, err
	}
	ids, err := readIdentities(ctx, copies)
	if err != nil {
		return Registry{}, err
	}
	for attempt := range registryRetries {
		cur, err := readCopies(ctx, copies, names, ids)
		if again, werr := waitBehind(ctx, err, attempt); werr != nil {
			return Registry{}, werr
		} else if again {
			continue
		}
		if err != nil {
			return Registry{}, err
		}
		if err := sameCopies(cur, names); err != nil {
			return cur, err
		}
		if err := checkIdentities(cur, names, ids); err != nil {
			return cur, err
		}
		next, err := change(cur)
		if err != nil {
			return cur, err
		}
		next.Copies, next.CopyIdentities = names, ids
		if next.Version != cur.Version+1 {
			return cur, fmt.Errorf("%w: registry change to version %d from %d; a change raises the version by one", ErrInvalid, next.Version, cur.Version)
		}
		if cur.Schedule != "" && next.Schedule == "" {
			return cur, fmt.Errorf("%w: registry change to version %d drops the fleet schedule %q it records; a change keeps it (WithSchedule changes it)", ErrInvalid, next.Version, cur.Schedule)
		}
		if err := Check(next); err != nil {
			return cur, err // what no store would write (a home that is none of the copies, say): refused before any copy is
		}
		again, later, err := writeCopies(ctx, copies, next)
		switch {
		case again:
			continue // another change won the first copy: start again from it
		case later != "":
			return next, fmt.Errorf("%w: copy %s not written (%w): copy %s, written first, is at version %d; "+
				"start no holder in a region this change named until snowfence regions sync has brought every copy there",
				ErrDiverged, later, err, copies[0].Name, next.Version)
		case err != nil:
			return cur, err
		}
		return next, nil
	}
	return Registry{}, fmt.Errorf("%w: the registry changed under %d attempts in a row; try again", ErrConflict, registryRetries)
}

// writeCopies writes next to every copy in order. The first copy's version
// compare decides between two changes: again reports that another change
// won it (nothing was written; read and try again). A later copy that
// fails is named in later, with its error: the first copies hold next, and
// the change must be finished by sync.
func writeCopies(ctx context.Context, copies []Copy, next Registry) (again bool, later string, err error) {
	err = copies[0].Store.SetRegistry(ctx, next)
	if errors.Is(err, ErrConflict) {
		return true, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("write the registry's copy %s (written first): %w", copies[0].Name, err)
	}
	for _, c := range copies[1:] {
		if err := c.Store.SetRegistry(ctx, next); err != nil {
			return false, c.Name, err
		}
	}
	return false, "", nil
}

// readCopies returns the registry every copy holds, or ErrDiverged.
// With ids (the copies' identities, parallel to names) it first refuses,
// with ErrCopyIdentity, a copy whose identity differs from the one any
// copy's registry records for its name: a copy that is another store
// differs from the others, and that is the cause to report.
func readCopies(ctx context.Context, copies []Copy, names, ids []string) (Registry, error) {
	regs := make([]Registry, len(copies))
	for i, c := range copies {
		r, err := c.Store.Registry(ctx)
		if err != nil {
			return Registry{}, fmt.Errorf("read the registry's copy %s: %w", c.Name, err)
		}
		if ids != nil {
			if err := checkIdentities(r, names, ids); err != nil {
				return Registry{}, err
			}
		}
		regs[i] = r
	}
	var first Registry
	for i, r := range regs {
		c := copies[i]
		if i == 0 {
			first = r
			continue
		}
		if !r.Equal(first) {
			err := fmt.Errorf("%w: copy %s (written first) is at version %d, copy %s at version %d; run snowfence regions sync, which brings every copy to the first one's version when they are one change apart",
				ErrDiverged, copies[0].Name, first.Version, c.Name, r.Version)
			// Every change writes copy 1 first, so a later copy ahead of
			// it was changed after copy 1 was read, and one a change
			// behind is most likely being written: read again.
			if r.Version > first.Version || (r.Version == first.Version-1 && oneChangeAfter(r, first)) {
				return Registry{}, &copiesBehind{err}
			}
			return Registry{}, err
		}
	}
	return first, nil
}

// copiesBehind is ErrDiverged when a change may be under way: a
// copy one change behind the first, or ahead of it.
type copiesBehind struct{ err error }

func (e *copiesBehind) Error() string { return e.err.Error() }
func (e *copiesBehind) Unwrap() error { return e.err }

// registryBackoff is the first wait of Update for another
// operator's change to reach every copy; each retry waits longer.
const registryBackoff = 20 * time.Millisecond

// AddRegion adds a region called name at nowMs to every copy, under the
// lowest region number below limit (1 << RegionBits of the layout) never
// used, and returns it.
func AddRegion(ctx context.Context, copies []Copy, name string, nowMs int64, limit int) (Region, error) {
	var added Region
	_, err := Update(ctx, copies, func(r Registry) (Registry, error) {
		next, g, err := r.WithRegion(name, nowMs, limit)
		added = g
		return next, err
	})
	return added, err
}

// RetireRegion retires the region called name at nowMs in every copy.
func RetireRegion(ctx context.Context, copies []Copy, name string, nowMs int64) (Region, error) {
	var retired Region
	_, err := Update(ctx, copies, func(r Registry) (Registry, error) {
		next, g, err := r.WithRetired(name, nowMs)
		retired = g
		return next, err
	})
	return retired, err
}

// Sync finishes a change that stopped half way. The registry it
// brings every copy to is that of the first copy in name order that holds
// one (the first a change writes; a copy that joined last, Join,
// may be empty still). Every copy whose registry is the one that was made
// from (one version behind, with one region added or retired, the fleet
// schedule changed, or one copy joined since) is given it (with the
// version compare), and so is an empty copy that the registry records with
// the identity its store reports (a join that stopped before writing it).
// Any other difference is refused with ErrDiverged: it needs an
// operator's look. The copies must be the ones the registry names, in its
// order, each the store recorded under its name (ErrCopyIdentity). With
// no copy written it does nothing.
func Sync(ctx context.Context, copies []Copy) (Registry, error) {
	copies, names, err := sortedCopies(copies)
	if err != nil {
		return Registry{}, err
	}
	ids, err := readIdentities(ctx, copies)
	if err != nil {
		return Registry{}, err
	}
	regs := make([]Registry, len(copies))
	first := -1
	for i, c := range copies {
		if regs[i], err = c.Store.Registry(ctx); err != nil {
			return Registry{}, fmt.Errorf("read the registry's copy %s: %w", c.Name, err)
		}
		if err := checkIdentities(regs[i], names, ids); err != nil {
			return regs[i], err
		}
		if first < 0 && regs[i].Version > 0 {
			first = i
		}
	}
	if first < 0 {
		return Registry{}, nil
	}
	reg := regs[first]
	if err := sameCopies(reg, names); err != nil {
		return reg, err
	}
	if err := checkIdentities(reg, names, ids); err != nil {
		return reg, err
	}
	for i, c := range copies {
		r := regs[i]
		switch {
		case r.Equal(reg):
		case r.Version == 0 && len(reg.CopyIdentities) > 0:
			// checkIdentities found c's store to be the one recorded.
			if err := c.Store.CreateRegistry(ctx, reg); err != nil {
				return reg, fmt.Errorf("sync the registry's empty copy %s to version %d: %w", c.Name, reg.Version, err)
			}
		case r.Version == reg.Version-1 && oneChangeAfter(r, reg):
			if err := c.Store.SetRegistry(ctx, reg); err != nil {
				return reg, fmt.Errorf("sync the registry's copy %s to version %d: %w", c.Name, reg.Version, err)
			}
		default:
			return reg, fmt.Errorf("%w: copy %s is at version %d and copy %s (written first) at %d, not one change apart: compare them (snowfence regions list on each store) before writing either, and start no holder meanwhile",
				ErrDiverged, c.Name, r.Version, copies[first].Name, reg.Version)
		}
	}
	return reg, nil
}

// sortedCopies returns copies in the order every change writes them — by
// name, whatever order the caller gave, so that two operators naming the
// same copies write the same one first — and their names, refusing none,
// an empty name or a name given twice.
func sortedCopies(copies []Copy) ([]Copy, []string, error) {
	if len(copies) == 0 {
		return nil, nil, fmt.Errorf("%w: no copy of the registry given: give every region's store", ErrInvalid)
	}
	copies = slices.Clone(copies)
	slices.SortStableFunc(copies, func(a, b Copy) int { return strings.Compare(a.Name, b.Name) })
	names := make([]string, len(copies))
	for i, c := range copies {
		switch {
		case c.Name == "":
			return nil, nil, fmt.Errorf("%w: a copy of the registry has no name", ErrInvalid)
		case i > 0 && names[i-1] == c.Name:
			return nil, nil, fmt.Errorf("%w: copy %s is given twice", ErrInvalid, c.Name)
		}
		names[i] = c.Name
	}
	return copies, names, nil
}

// sameCopies refuses names that are not the copies r records, in its
// order (nothing is recorded before the first change).
func sameCopies(r Registry, names []string) error {
	if len(r.Copies) == 0 || slices.Equal(r.Copies, names) {
		return nil
	}
	return fmt.Errorf("%w: the region registry is kept in %d copies: %s; give exactly those (the store flags and --copy, named as before), not %s",
		ErrInvalid, len(r.Copies), strings.Join(r.Copies, ", "), strings.Join(names, ", "))
}

// oneChangeAfter reports whether next is prev with one change made: one
// region added, one region retired, the fleet schedule changed, or one
// copy joined (oneCopyJoined); the copies and their identities unchanged
// (or recorded for the first time), and the schedule unchanged but for
// that change (or recorded for the first time).
func oneChangeAfter(prev, next Registry) bool {
	if next.Version != prev.Version+1 {
		return false
	}
	if oneCopyJoined(prev, next) {
		return true
	}
	if len(prev.Copies) > 0 && !slices.Equal(prev.Copies, next.Copies) {
		return false
	}
	if len(prev.CopyIdentities) > 0 && !slices.Equal(prev.CopyIdentities, next.CopyIdentities) {
		return false
	}
	if next.Schedule == "" && prev.Schedule != "" {
		return false
	}
	if next.Schedule != prev.Schedule && slices.Equal(prev.Regions, next.Regions) {
		return true // the schedule changed (or was recorded)
	}
	if prev.Schedule != "" && next.Schedule != prev.Schedule {
		return false // a region change that also changed a recorded schedule
	}
	switch len(next.Regions) - len(prev.Regions) {
	case 1: // one added: every old region kept as it was
		for _, g := range prev.Regions {
			if h, ok := next.Numbered(g.Number); !ok || h != g {
				return false
			}
		}
		return true
	case 0: // one retired
		changed := 0
		for i, g := range prev.Regions {
			h := next.Regions[i]
			switch {
			case h == g:
			case !g.Retired() && h.Retired() && h.Name == g.Name && h.Number == g.Number && h.CreatedMs == g.CreatedMs:
				changed++
			default:
				return false
			}
		}
		return changed == 1
	}
	return false
}
