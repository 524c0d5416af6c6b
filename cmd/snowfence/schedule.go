package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

const scheduleUsage = `usage: snowfence schedule <show | set SCHEDULE> [--copy SPEC]… [--notice D] [--json] [store flags]
  show           the fleet schedule stored beside the leases and its version, and the one the region
                 registry records when it differs
  set SCHEDULE   make SCHEDULE (e.g. "v1,v2@2030-01-01T00:00:00Z") the fleet schedule of every region;
                 refused if it differs from a store's at any instant before now + --notice (default and
                 minimum 1h), or before a mark of that store + --notice. New holders must start with the
                 new --schedule (claims on another are refused); running ones on the old schedule keep
                 issuing until their next mark would reach the first instant the two differ, and stop
                 there: restart them before it. The notice protects what exists: on an etcd,
                 PostgreSQL or ZooKeeper store that holds no lease record at all (no holder, mark or
                 quarantine in any region, nothing ever claimed) the change applies at once, checked
                 in the write itself (DynamoDB keeps the notice); a refusal says how many holders,
                 marks and quarantines there are

Every region's store keeps the fleet schedule, and the region registry records it too; a holder
starts only where its --schedule, its store's record and its store's copy of the registry agree.
set names every region's store as snowfence regions does: the store flags are copy 1, every other
region's store a --copy SPEC; once the registry records its copies, set must name exactly those.
It checks the change on every store, then sets every store's record (in the copies' name order),
then the registry's (every copy, with a version compare). Stopped half way, it lets holders start
on one schedule only — the old one where the store is not changed yet, or the new one where the
registry's copy has it — and running the same set again finishes it (or snowfence regions sync,
when it stopped in the registry's copies); run it again soon, while the notice still admits it.
SPEC is one of:
` + copySpecHelp

// runSchedule shows or sets the fleet schedule: the layout schedule every
// holder of every region must use, kept in each region's store beside the
// leases and recorded in the region registry.
func runSchedule(ctx context.Context, e env, args []string) error {
	var sf storeFlags
	var specs copyFlags
	fs := newFlags(e, "schedule")
	sf.register(fs)
	fs.Var(&specs, "copy", "set: another region's store, as a URL (repeat it; name each store as snowfence regions does)")
	asJSON := fs.Bool("json", false, "print JSON")
	notice := fs.Duration("notice", lease.DefaultScheduleNotice, "set: how far ahead of now the new schedule may first differ from the stored one")
	verb, rest, err := parseVerb(e, fs, args, scheduleUsage)
	if err != nil {
		return err
	}
	var next snowfence.Schedule
	switch {
	case verb == "show" && len(rest) == 0:
		if len(specs) > 0 {
			return usagef("schedule show reads one store: give its store flags, not --copy")
		}
	case verb == "set" && len(rest) == 1:
		if next, err = snowfence.ParseSchedule(rest[0]); err != nil {
			return usageError{err}
		}
		if *notice <= 0 {
			return usagef("--notice %s: give a positive duration such as 1h", *notice)
		}
	default:
		return usagef("%s", scheduleUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if verb == "show" {
		store, err := sf.connect(ctx)
		if err != nil {
			return err
		}
		defer store.Close()
		cur, err := store.FleetSchedule(ctx)
		if err != nil {
			return err
		}
		reg, err := store.Registry(ctx)
		if err != nil {
			return fmt.Errorf("read the region registry: %w", err)
		}
		return printFleetSchedule(e, scheduleReport{FleetSchedule: cur, Registry: reg.Schedule, RegistryVersion: reg.Version}, *asJSON)
	}
	cs, err := openCopies(ctx, sf, specs)
	defer closeCopies(cs)
	if err != nil {
		return err
	}
	fcs := make([]lease.FleetCopy, len(cs))
	for i, c := range cs {
		fcs[i] = lease.FleetCopy{Name: c.name, Store: c.store}
	}
	ch, err := lease.ChangeFleetSchedule(ctx, fcs, next.String(), time.Now(), *notice)
	if err != nil {
		return err
	}
	return reportScheduleChange(e, ch, cs[0].name, *asJSON)
}

// scheduleSet is what set prints with --json: copy 1's record (as before
// there were copies), then every copy's and the registry's.
type scheduleSet struct {
	lease.FleetSchedule
	Copies          []scheduleCopy `json:"copies"`
	RegistryVersion int64          `json:"registry_version"`
}

// A scheduleCopy is one copy's record before and after set.
type scheduleCopy struct {
	Store string              `json:"store"`
	Was   lease.FleetSchedule `json:"was"`
	Now   lease.FleetSchedule `json:"now"`
}

// reportScheduleChange says what set did. first names copy 1, the store
// the flags name, whatever its place in ch's order (the names').
func reportScheduleChange(e env, ch lease.ScheduleChange, first string, asJSON bool) error {
	out := scheduleSet{RegistryVersion: ch.Registry.Version}
	changed := 0
	var was []string
	for i, name := range ch.Names {
		c := scheduleCopy{Store: name, Was: ch.Was[i], Now: ch.Now[i]}
		out.Copies = append(out.Copies, c)
		if name == first {
			out.FleetSchedule = c.Now
		}
		if c.Now.Version != c.Was.Version {
			changed++
			was = append(was, c.Was.Text)
		}
	}
	slices.Sort(was)
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(out)
	}
	where := fmt.Sprintf("%d %s", len(ch.Names), plural(len(ch.Names), "store", "stores"))
	registry := "no region registry is written"
	if ch.Registry.Version > 0 {
		registry = fmt.Sprintf("the region registry records it (version %d)", ch.Registry.Version)
	}
	if changed == 0 {
		_, err := fmt.Fprintf(e.stdout, "the fleet schedule is already %s in %s: nothing changed; %s\n", ch.Schedule, where, registry)
		return err
	}
	_, err := fmt.Fprintf(e.stdout, "fleet schedule set to %s in %d of %s (was %s); %s: start new holders with --schedule '%s', and restart "+
		"the running ones with it before the first cutover that changed; holders still on the old schedule stop just before it\n",
		ch.Schedule, changed, where, strings.Join(slices.Compact(was), ", "), registry, ch.Schedule)
	return err
}

// scheduleReport is what show prints: a store's fleet schedule record and
// the schedule its copy of the region registry records ("" if none).
type scheduleReport struct {
	lease.FleetSchedule
	Registry        string `json:"registry_schedule,omitempty"`
	RegistryVersion int64  `json:"registry_version,omitempty"`
}

// printFleetSchedule prints the fleet schedule and the layouts it puts in
// force.
func printFleetSchedule(e env, rep scheduleReport, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	fsch := rep.FleetSchedule
	sched, err := snowfence.ParseSchedule(fsch.Text)
	if err != nil {
		return fmt.Errorf("the stored fleet schedule %q does not parse: %w", fsch.Text, err)
	}
	version := fmt.Sprint(fsch.Version)
	if fsch.Version == 0 {
		version = "0 (never set: the default)"
	}
	fmt.Fprintf(e.stdout, "schedule  %s\nversion   %s\nlayouts:\n", fsch.Text, version)
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	for i, st := range sched.Steps() {
		from := "from the epoch"
		if i > 0 {
			from = "from " + st.From.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", from, st.Layout)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Registry != "" && rep.Registry != fsch.Text {
		fmt.Fprintf(e.stdout, "registry  %s (region registry version %d): differs from this store's record\n", rep.Registry, rep.RegistryVersion)
		fmt.Fprintf(e.stderr, "snowfence schedule: warning: the region registry records the fleet schedule %s, this store %s: a change reached one and not the other; "+
			"holders of this region are refused at start until snowfence schedule set '%s' with every region's store (--copy …) finishes it, or snowfence regions sync when the registry's copies differ\n",
			rep.Registry, fsch.Text, rep.Registry)
	}
	return nil
}
