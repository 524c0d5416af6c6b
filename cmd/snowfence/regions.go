package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

const regionsUsage = `usage: snowfence regions <list | add NAME [--home COPY] [--number N] | retire NAME --yes | sync | add-copy SPEC> [--copy SPEC]… [--json] [store flags]
  list          every region ever added (retired ones too) with its home, the registry's version
                and copies (numbered: copy 1 is the store flags' store), the region numbers left
                under the fleet schedule's last layout and when its timestamps run out
  add NAME      add a region under the lowest region number no region ever had; start its holders
                with --region NAME. The first add, which creates the registry, asks for --create:
                a store that holds no registry is otherwise refused (join it with add-copy), so
                that a second registry, numbering its regions from 0 again, is never made.
                --home COPY names the copy whose store the region's holders lease from (its
                name as list shows it, or its number there: 1 is the store flags' store);
                every holder of the region (serve, node.Start, lease.StartKeeper) is refused
                on any other store. Required when more than one copy is given; with one,
                that copy is the home. Refused while the home store's fleet schedule record
                is not the one the registry records. --number N gives the region number N
                instead (the number it has elsewhere, say): refused if any region ever had
                it, retired ones included, or it is outside the last layout's region numbers,
                and on the first add (--create), which always takes 0
  retire NAME   retire a region for ever (asks for --yes): its number is never used again, and
                holders are refused in it from then on — every serve of the region, for ever,
                since a retirement cannot be undone. It first prints what it will do and the
                region's live holders, read from its home store (give that copy with --copy):
                refused while any holder is live there, or the home store cannot be read,
                unless --despite-live-holders (they keep running until they stop, and are then
                refused for ever)
  sync          finish a change that stopped half way: every copy one version behind the first
                is brought to it
  add-copy SPEC give a new region's store (SPEC, which holds no registry) a copy of the registry,
                recorded beside the others: every later change names it with --copy too.
                Refused while SPEC's fleet schedule record is not the one the registry records

Every region keeps a copy of the registry in its own lease store, so its holders read it there and
never call another region. The store named by the store flags is copy 1; name every other region's
store with --copy SPEC. The first change records the copies' names; every later change must name
the same copies the same way (any order: they are written in name order, and the first decides
between two changes made at once). Beside each name it records the identity its store reports
(etcd's cluster ID and prefix, PostgreSQL's system identifier, database and table, DynamoDB's table
ARN and ID, ZooKeeper's origin id and path), and refuses a copy whose name now reaches another store, or two copies that are one
store. add and retire write every copy, each with a version compare,
and are refused while the copies differ (then run sync). The registry also records the fleet
schedule: the first change records the one the copies' stores keep (refused while they differ),
and every holder is refused a --schedule, and every claim a store record, that differs from it;
change it with snowfence schedule set and the same copies. SPEC is one of:
` + copySpecHelp

// copyFlags collects the repeatable --copy flag.
type copyFlags []string

func (c *copyFlags) String() string     { return strings.Join(*c, " ") }
func (c *copyFlags) Set(v string) error { *c = append(*c, v); return nil }

// runRegions lists and changes the region registry kept in every region's
// lease store.
func runRegions(ctx context.Context, e env, args []string) error {
	var sf storeFlags
	var specs copyFlags
	fs := newFlags(e, "regions")
	sf.register(fs)
	fs.Var(&specs, "copy", "another region's store holding a copy of the registry, as a URL (repeat it; name each store the same way every time; see snowfence regions)")
	asJSON := fs.Bool("json", false, "print JSON")
	yes := fs.Bool("yes", false, "retire: yes, retire the region for ever")
	despite := fs.Bool("despite-live-holders", false, "retire: retire the region even while holders run in it (or its home store cannot be read): each is refused for ever once it stops")
	create := fs.Bool("create", false, "add: create the region registry (the fleet's first add; once per fleet)")
	home := fs.String("home", "", "add: the copy whose store the region's holders lease from, by its name or number as regions list shows it (required with more than one copy)")
	number := fs.Int("number", registry.AnyNumber, "add: the region number to give the region, one no region ever had (default: the lowest no region ever had)")
	verb, rest, err := parseVerb(e, fs, args, regionsUsage)
	if err != nil {
		return err
	}
	var name, joining string
	switch {
	case (verb == "list" || verb == "sync") && len(rest) == 0:
	case verb == "add-copy" && len(rest) == 1:
		joining = rest[0]
		if _, err := parseCopySpec(joining, sf); err != nil {
			return err
		}
	case (verb == "add" || verb == "retire") && len(rest) == 1:
		name = rest[0]
		if err := registry.CheckRegionName(name); err != nil {
			return usageError{err}
		}
		if verb == "retire" && !*yes {
			return usagef("retiring region %s is permanent: its number is never used again and holders are refused in it from then on (those running keep running until they stop); pass --yes to retire it", name)
		}
	default:
		return usagef("%s", regionsUsage)
	}
	if *home != "" && verb != "add" {
		return usagef("--home is for regions add only: a region's home is recorded when it is added")
	}
	numberGiven := false
	fs.Visit(func(f *flag.Flag) { numberGiven = numberGiven || f.Name == "number" })
	switch {
	case numberGiven && verb != "add":
		return usagef("--number is for regions add only: a region's number is given when it is added, and never changes")
	case numberGiven && *number < 0:
		return usagef("--number %d: region numbers are not negative", *number)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	open := []string(specs)
	if joining != "" {
		open = append(append([]string(nil), specs...), joining)
	}
	cs, err := openCopies(ctx, sf, open)
	defer closeCopies(cs)
	if err != nil {
		return err
	}
	var join registryCopy
	if joining != "" {
		cs, join = cs[:len(cs)-1], cs[len(cs)-1]
	}
	fleet, err := cs[0].store.FleetSchedule(ctx)
	if err != nil {
		return fmt.Errorf("read the fleet schedule from copy 1 (%s): %w", cs[0].name, err)
	}
	r := regionsRun{e: e, copies: cs, fleet: fleet, asJSON: *asJSON, now: time.Now(), create: *create, home: *home, number: *number, numbered: numberGiven, despiteLive: *despite}
	switch verb {
	case "add-copy":
		return r.addCopy(ctx, join)
	case "list":
		return r.list(ctx)
	case "add":
		return r.add(ctx, name)
	case "retire":
		return r.retire(ctx, name)
	}
	return r.sync(ctx)
}

// noNumber is --number not given: add takes the lowest number no region
// ever had.
const noNumber = registry.AnyNumber

// regionsRun is one regions command on opened copies.
type regionsRun struct {
	e      env
	create bool   // add may create the registry
	home   string // add: --home, a copy's name or number; "" for the only copy
	// add: --number when numbered (a zero regionsRun takes the lowest
	// number no region ever had, as add without --number does)
	number   int
	numbered bool
	// retire: --despite-live-holders, retire a region whose home store
	// shows live holders (or cannot be read)
	despiteLive bool
	copies      []registryCopy
	fleet       lease.FleetSchedule
	asJSON      bool
	now         time.Time
}

// stores are the copies, named as the operator named them (the registry
// records the names: every later change must name the same copies).
func (r regionsRun) stores() []registry.Copy {
	rs := make([]registry.Copy, len(r.copies))
	for i, c := range r.copies {
		rs[i] = registry.Copy{Name: c.name, Store: c.store}
	}
	return rs
}

// lastLayout is the last layout of the fleet schedule: the one regions are
// numbered for.
func (r regionsRun) lastLayout() (snowfence.Layout, error) {
	sched, err := snowfence.ParseSchedule(r.fleet.Text)
	if err != nil {
		return snowfence.Layout{}, fmt.Errorf("the stored fleet schedule %q does not parse: %w", r.fleet.Text, err)
	}
	steps := sched.Steps()
	return steps[len(steps)-1].Layout, nil
}

// A copyVersion is the version one copy of the registry is at.
type copyVersion struct {
	Copy    int    `json:"copy"`
	Store   string `json:"store"`
	Version int64  `json:"version"`
	Same    bool   `json:"same_as_first"`
}

// regionsReport is what list prints.
type regionsReport struct {
	registry.Registry
	// Layout is the fleet schedule's last layout; RegionBits its region
	// width, RegionNumbers 1 << RegionBits (0 without region bits) and
	// RegionNumbersLeft how many of those no region ever had.
	Layout            string `json:"layout"`
	RegionBits        int    `json:"region_bits"`
	RegionNumbers     int    `json:"region_numbers"`
	RegionNumbersLeft int    `json:"region_numbers_left"`
	// TimestampsEnd is the first instant the layout's timestamp cannot
	// hold: its epoch + 2^TimeBits units.
	TimestampsEnd time.Time     `json:"timestamps_end"`
	Copies        []copyVersion `json:"copies"`
}

func (r regionsRun) list(ctx context.Context) error {
	l, err := r.lastLayout()
	if err != nil {
		return err
	}
	rep := regionsReport{Layout: l.Name, RegionBits: l.RegionBits, TimestampsEnd: timestampsEnd(l)}
	for i, c := range r.copies {
		reg, err := c.store.Registry(ctx)
		if err != nil {
			return fmt.Errorf("read the registry's copy %d (%s): %w", i+1, c.name, err)
		}
		if i == 0 {
			rep.Registry = reg
		}
		rep.Copies = append(rep.Copies, copyVersion{Copy: i + 1, Store: c.name, Version: reg.Version, Same: reg.Equal(rep.Registry)})
	}
	if rep.Regions == nil {
		rep.Regions = []registry.Region{}
	}
	if l.RegionBits > 0 {
		rep.RegionNumbers = 1 << l.RegionBits
		rep.RegionNumbersLeft = rep.Left(rep.RegionNumbers)
	}
	for _, c := range rep.Copies {
		if !c.Same {
			fmt.Fprintf(r.e.stderr, "snowfence regions: warning: copy %d (%s) is at version %d and differs from copy 1 (version %d): run snowfence regions sync with the same copies\n",
				c.Copy, c.Store, c.Version, rep.Version)
		}
	}
	if r.asJSON {
		return json.NewEncoder(r.e.stdout).Encode(rep)
	}
	w := r.e.stdout
	if len(rep.Regions) == 0 {
		fmt.Fprintln(w, "no regions registered")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tNUMBER\tCREATED\tRETIRED\tHOME")
		for _, g := range rep.Regions {
			retired := "-"
			if g.Retired() {
				retired = lease.FormatMs(g.RetiredMs)
			}
			home := g.Home
			if home == "" {
				home = "- (not recorded: not checked)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", g.Name, g.Number, lease.FormatMs(g.CreatedMs), retired, home)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	version := fmt.Sprint(rep.Version)
	if rep.Version == 0 {
		version = "0 (never written)"
	}
	fmt.Fprintf(w, "\nregistry version %s, in %d %s\n", version, len(rep.Copies), plural(len(rep.Copies), "copy", "copies"))
	for _, c := range rep.Copies {
		fmt.Fprintf(w, "  copy %d: %s (version %d)\n", c.Copy, c.Store, c.Version)
	}
	if l.RegionBits == 0 {
		fmt.Fprintf(w, "region numbers left: no region bits (layout %s, the fleet schedule's last)\n", l.Name)
	} else {
		fmt.Fprintf(w, "region numbers left: %d of %d (layout %s, the fleet schedule's last; retired numbers are never reused)\n", rep.RegionNumbersLeft, rep.RegionNumbers, l.Name)
	}
	switch {
	case rep.Schedule == "":
		fmt.Fprintf(w, "fleet schedule: not recorded in the registry yet (the next change records the stores')\n")
	case rep.Schedule != r.fleet.Text:
		fmt.Fprintf(w, "fleet schedule: %s in the registry, but %s in copy 1's store: finish the change with snowfence schedule set and every copy\n", rep.Schedule, r.fleet.Text)
	default:
		fmt.Fprintf(w, "fleet schedule: %s (the registry's and copy 1's store's)\n", rep.Schedule)
	}
	_, err = fmt.Fprintf(w, "timestamps run out at %s (layout %s: its epoch + 2^%d ticks)\n", rep.TimestampsEnd.UTC().Format("2006-01-02T15:04:05.000Z07:00"), l.Name, l.TimeBits)
	return err
}

func (r regionsRun) add(ctx context.Context, name string) error {
	l, err := r.lastLayout()
	if err != nil {
		return err
	}
	if l.RegionBits == 0 {
		return fmt.Errorf("%w: the fleet schedule's last layout, %s, has no region bits, so it has no region numbers to give: schedule a layout with region bits first (snowfence schedule set, e.g. v1,v2@…)", lease.ErrInvalid, l.Name)
	}
	home, err := r.homeCopy()
	if err != nil {
		return err
	}
	number := noNumber
	if r.numbered {
		number = r.number
	}
	g, err := lease.AddRegionNumber(ctx, r.fleetCopies(), name, home, number, r.create, r.now.UnixMilli(), 1<<l.RegionBits)
	if err != nil {
		return err
	}
	return say(r.e, r.asJSON, g, "region %s added as number %d, written to %d %s: start its holders with --region %s on its home store, copy %s",
		g.Name, g.Number, len(r.copies), plural(len(r.copies), "copy", "copies"), g.Name, g.Home)
}

// homeCopy is the name of the copy --home names: by its name or its
// number (1 the store flags' store, as list numbers them); with no --home,
// the only copy, and a usage error when there are more (which one the
// region's holders lease from is the operator's to say: a wrong home
// refuses every holder of the region, and no command changes it yet).
func (r regionsRun) homeCopy() (string, error) {
	var names []string
	for _, c := range r.copies {
		names = append(names, c.name)
	}
	if r.home == "" {
		if len(names) == 1 {
			return names[0], nil
		}
		return "", usagef("regions add: name the copy whose store the region's holders lease from with --home COPY, by its name or number: %s", numberedCopies(names))
	}
	if n, err := strconv.Atoi(r.home); err == nil {
		if n < 1 || n > len(names) {
			return "", usagef("--home %d: there are %d copies: %s", n, len(names), numberedCopies(names))
		}
		return names[n-1], nil
	}
	if !slices.Contains(names, r.home) {
		return "", usagef("--home %s is none of the copies given: %s", r.home, numberedCopies(names))
	}
	return r.home, nil
}

// numberedCopies is names as list numbers them: "1 NAME, 2 NAME".
func numberedCopies(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d %s", i+1, n)
	}
	return strings.Join(parts, ", ")
}

func (r regionsRun) retire(ctx context.Context, name string) error {
	record, err := r.storesSchedule(ctx)
	if err != nil {
		return err
	}
	if err := r.retirePlan(ctx, name); err != nil {
		return err
	}
	var g registry.Region
	_, err = registry.Update(ctx, r.stores(), func(reg registry.Registry) (registry.Registry, error) {
		next, retired, err := reg.WithRetired(name, r.now.UnixMilli())
		g = retired
		if err != nil {
			return next, err
		}
		return record(next)
	})
	if err != nil {
		return err
	}
	return say(r.e, r.asJSON, g, "region %s (number %d) retired at %s in %d %s: holders are refused in it from now on, and its number is never used again",
		g.Name, g.Number, lease.FormatMs(g.RetiredMs), len(r.copies), plural(len(r.copies), "copy", "copies"))
}

// retirePlan says on stderr what retiring region name will do, and the
// live holders its home store shows in each layout's keyspace of its
// number; it refuses, unless --despite-live-holders, while any is live or
// the home store is not among the copies given (nothing to read them
// from). A retirement cannot be undone: every later serve of the region
// is refused, and a running holder is refused for ever once it stops.
// A region not in the registry, or retired already, is left to the
// registry's own refusal.
func (r regionsRun) retirePlan(ctx context.Context, name string) error {
	reg, err := r.copies[0].store.Registry(ctx)
	if err != nil {
		return fmt.Errorf("read the registry's copy 1 (%s): %w", r.copies[0].name, err)
	}
	g, ok := reg.Named(name)
	if !ok || g.Retired() {
		return nil
	}
	w := r.e.stderr
	fmt.Fprintf(w, "retiring region %s (number %d) in %d %s, for ever: from now on every holder is refused in it (serve, node.Start, lease.StartKeeper), and number %d is never used again\n",
		g.Name, g.Number, len(r.copies), plural(len(r.copies), "copy", "copies"), g.Number)
	force := "; retire it anyway with --despite-live-holders"
	live, home, err := r.liveHolders(ctx, g)
	if err != nil {
		fmt.Fprintf(w, "its live holders: unknown: %v\n", err)
		if r.despiteLive {
			return nil
		}
		return fmt.Errorf("region %s's live holders cannot be read: %w%s", g.Name, err, force)
	}
	if len(live) == 0 {
		fmt.Fprintf(w, "its live holders on its home store (%s): none\n", home)
		return nil
	}
	fmt.Fprintf(w, "its live holders on its home store (%s): %d\n", home, len(live))
	for _, h := range live {
		fmt.Fprintf(w, "  layout %s (keyspace %d) machine %d: %s (token %d)\n", h.layout, h.Region, h.Machine, h.Holder, h.Token)
	}
	if r.despiteLive {
		fmt.Fprintf(w, "retiring it despite them (--despite-live-holders): each is refused for ever once it stops\n")
		return nil
	}
	return fmt.Errorf("%w: region %s has %d live %s on its home store (%s): retired, the region refuses each of them for ever once it stops, "+
		"and every serve of it from then on; stop them (or move them to another region) first%s",
		lease.ErrInvalid, g.Name, len(live), plural(len(live), "holder", "holders"), home, force)
}

// liveHolder is a record held by a live lease, in the keyspace (its
// Region) of layout's numbers.
type liveHolder struct {
	lease.Record
	layout string
}

// liveHolders returns the records of region g's numbers held by a live
// lease in its home store, in the keyspace of every layout of the fleet
// schedule, and the home copy's name. The home must be among the copies
// given (with one copy and no home recorded, that copy).
func (r regionsRun) liveHolders(ctx context.Context, g registry.Region) ([]liveHolder, string, error) {
	var home *registryCopy
	for i := range r.copies {
		if r.copies[i].name == g.Home || (g.Home == "" && len(r.copies) == 1) {
			home = &r.copies[i]
		}
	}
	if home == nil {
		return nil, "", fmt.Errorf("its home store, copy %q, is not among the copies given: name it with --copy", g.Home)
	}
	sched, err := snowfence.ParseSchedule(r.fleet.Text)
	if err != nil {
		return nil, "", fmt.Errorf("the stored fleet schedule %q does not parse: %w", r.fleet.Text, err)
	}
	steps := len(sched.Steps())
	nowMs := r.now.UnixMilli()
	var live []liveHolder
	for step, st := range sched.Steps() {
		idx := g.Number
		if steps > 1 {
			if idx, err = lease.KeyspaceOf(step, g.Number); err != nil {
				return nil, "", err
			}
		}
		ks, err := home.store.AdminKeyspace(idx)
		if err != nil {
			return nil, "", err
		}
		recs, err := ks.List(ctx)
		ks.Close()
		if err != nil {
			return nil, "", fmt.Errorf("list keyspace %d of %s: %w", idx, home.name, err)
		}
		for _, rec := range recs {
			if rec.LiveAt(nowMs) {
				rec.Region = idx
				live = append(live, liveHolder{rec, st.Layout.Name})
			}
		}
	}
	return live, home.name, nil
}

// fleetCopies are the copies with their stores, named as the operator
// named them.
func (r regionsRun) fleetCopies() []lease.FleetCopy {
	cs := make([]lease.FleetCopy, len(r.copies))
	for i, c := range r.copies {
		cs[i] = lease.FleetCopy{Name: c.name, Store: c.store}
	}
	return cs
}

// storesSchedule is lease.RecordStoresSchedule over the copies.
func (r regionsRun) storesSchedule(ctx context.Context) (func(registry.Registry) (registry.Registry, error), error) {
	return lease.RecordStoresSchedule(ctx, r.fleetCopies())
}

func (r regionsRun) sync(ctx context.Context) error {
	reg, err := registry.Sync(ctx, r.stores())
	if err != nil {
		return err
	}
	return say(r.e, r.asJSON, reg, "every copy of the registry (%d) is at version %d", len(r.copies), reg.Version)
}

// addCopy joins the store of c to the registry kept in r's copies
// (lease.JoinRegistry, which refuses a store whose fleet schedule record
// is not the one the registry records, naming the command that sets it).
func (r regionsRun) addCopy(ctx context.Context, c registryCopy) error {
	reg, err := lease.JoinRegistry(ctx, r.fleetCopies(), lease.FleetCopy{Name: c.name, Store: c.store})
	if err != nil {
		return err
	}
	return say(r.e, r.asJSON, reg, "copy %s joined the region registry, at version %d in %d copies: name it with --copy in every later change; add its region with snowfence regions add NAME and every copy",
		c.name, reg.Version, len(reg.Copies))
}

// timestampsEnd is the first instant l's timestamp cannot hold: one unit
// after its last instant (Layout.LastInstant; a zero Unit is 1 ms).
func timestampsEnd(l snowfence.Layout) time.Time {
	unit := l.Unit
	if unit == 0 {
		unit = time.Millisecond
	}
	return l.LastInstant().Add(unit)
}

// plural is one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
