package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease/registry"
)

// runDecode prints an ID's fields, the ID given in decimal or in its UUIDv8
// form: offline with --schedule, or with the fleet schedule and the region
// names of a lease store (--from-store).
func runDecode(ctx context.Context, e env, args []string) error {
	var sf storeFlags
	fs := newFlags(e, "decode")
	schedText := fs.String("schedule", "", `layout schedule, e.g. "v1,v2@2028-01-01T00:00:00Z" (default v1, or the store's with --from-store)`)
	asJSON := fs.Bool("json", false, "print the JSON object the HTTP decode endpoint returns")
	fromStore := fs.Bool("from-store", false, "read the fleet schedule (unless --schedule is given) and the region names from the lease store the store flags name")
	sf.register(fs)
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one ID, got %d arguments; usage: snowfence decode <id | uuid> [--schedule …] [--from-store [store flags]] [--json]", len(pos))
	}
	// The ID in decimal, or its UUIDv8 form (read once the schedule is
	// known).
	var u snowfence.UUID
	id, err := snowfence.ParseID(pos[0])
	// isUUID rather than u.IsZero(): the Nil UUID parses too, and must
	// meet FromUUID's refusal, not pass for ID 0.
	isUUID := false
	if err != nil {
		var uerr error
		if u, uerr = snowfence.ParseUUID(pos[0]); uerr != nil {
			if len(pos[0]) == len(u.String()) {
				return usageError{uerr}
			}
			return usageError{err}
		}
		isUUID = true
	}
	var names func(int) (string, bool)
	if *fromStore {
		text, reg, err := storeDecodeFacts(ctx, &sf)
		if err != nil {
			return err
		}
		if *schedText == "" {
			*schedText = text
		}
		names = reg.NameOf
	}
	sched, err := snowfence.ParseSchedule(*schedText)
	if err != nil {
		return usageError{err}
	}
	if isUUID && u.Version() == 7 {
		return printUUIDv7(e, u, *asJSON)
	}
	if isUUID {
		if id, err = sched.FromUUID(u); err != nil {
			return usageError{err}
		}
	}
	d, err := sched.DecodeNamed(id, names)
	if err != nil {
		return usageError{err}
	}
	d.UUID = u
	if *asJSON {
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", d.ID)
	if !d.UUID.IsZero() {
		fmt.Fprintf(tw, "uuid\t%s\n", d.UUID)
	}
	fmt.Fprintf(tw, "layout\t%s\n", d.Layout)
	fmt.Fprintf(tw, "created_at\t%s\n", d.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	if d.Region != "" && d.Region != strconv.Itoa(d.RegionNumber) {
		fmt.Fprintf(tw, "region\t%s (%d)\n", d.Region, d.RegionNumber)
	} else {
		fmt.Fprintf(tw, "region\t%d\n", d.RegionNumber)
	}
	fmt.Fprintf(tw, "machine\t%d\n", d.Machine)
	fmt.Fprintf(tw, "sequence\t%d\n", d.Sequence)
	if d.Warning != "" {
		fmt.Fprintf(tw, "warning\t%s\n", d.Warning)
	}
	return tw.Flush()
}

// printUUIDv7 decodes a UUIDv7 (snowfence uuid prints them): its
// timestamp; the rest is random, with no machine or sequence to show.
func printUUIDv7(e env, u snowfence.UUID, asJSON bool) error {
	at, ok := u.Time()
	if !ok {
		return usagef("%s is a version-7 UUID of another variant: nothing to decode", u)
	}
	created := at.Format("2006-01-02T15:04:05.000Z07:00")
	if asJSON {
		b, err := json.Marshal(map[string]any{"uuid": u.String(), "version": 7, "created_at": created})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "uuid\t%s\n", u)
	fmt.Fprintf(tw, "version\t7 (a timestamp and random bits: no machine or sequence)\n")
	fmt.Fprintf(tw, "created_at\t%s\n", created)
	return tw.Flush()
}

// storeDecodeFacts reads, from the lease store sf names, the fleet schedule
// (its text, "" for the default) and the region registry.
func storeDecodeFacts(ctx context.Context, sf *storeFlags) (string, registry.Registry, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := sf.connect(ctx)
	if err != nil {
		return "", registry.Registry{}, err
	}
	defer store.Close()
	fleet, err := store.FleetSchedule(ctx)
	if err != nil {
		return "", registry.Registry{}, fmt.Errorf("read the fleet schedule: %w", err)
	}
	reg, err := store.Registry(ctx)
	if err != nil {
		return "", registry.Registry{}, err
	}
	return fleet.Text, reg, nil
}
