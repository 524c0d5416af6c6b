package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

const scheduleUsage = `usage: snowfence schedule <show | set SCHEDULE> [--notice D] [--json] [store flags]
  show           the fleet schedule stored beside the leases, and its version
  set SCHEDULE   make SCHEDULE (e.g. "v1,v2@2030-01-01T00:00:00Z") the fleet schedule; refused if it
                 differs from the stored one at any instant before now + --notice (default and
                 minimum 1h). New holders must start with the new --schedule (claims on another are
                 refused); running ones on the old schedule keep issuing until their next mark would
                 reach the first instant the two differ, and stop there: restart them before it`

// runSchedule shows or sets the fleet schedule: the layout schedule every
// holder of the store must use, stored beside the leases.
func runSchedule(ctx context.Context, e env, args []string) error {
	var sf storeFlags
	fs := newFlags(e, "schedule")
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	notice := fs.Duration("notice", lease.DefaultScheduleNotice, "set: how far ahead of now the new schedule may first differ from the stored one")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("%s", scheduleUsage)
	}
	verb, rest := pos[0], pos[1:]
	var next snowfence.Schedule
	switch {
	case verb == "show" && len(rest) == 0:
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
	store, err := sf.connect(ctx)
	if err != nil {
		return err
	}
	defer store.Close()

	cur, err := store.FleetSchedule(ctx)
	if err != nil {
		return err
	}
	if verb == "show" {
		return printFleetSchedule(e, cur, *asJSON)
	}
	set, err := lease.SetSchedule(ctx, store, next.String(), time.Now(), *notice)
	if err != nil {
		return err
	}
	if set.Version == cur.Version {
		return say(e, *asJSON, set, "the fleet schedule is already %s (version %d): nothing changed", set.Text, set.Version)
	}
	return say(e, *asJSON, set, "fleet schedule set to %s (version %d, was %s): start new holders with --schedule '%s', and restart "+
		"the running ones with it before the first cutover that changed; holders still on %s stop just before it", set.Text, set.Version, cur.Text, set.Text, cur.Text)
}

// printFleetSchedule prints the fleet schedule and the layouts it puts in
// force.
func printFleetSchedule(e env, fsch lease.FleetSchedule, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(fsch)
	}
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
	return tw.Flush()
}
