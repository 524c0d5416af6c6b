package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/snowfence/snowfence"
)

// runDecode prints an ID's fields.
func runDecode(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "decode")
	schedText := fs.String("schedule", "", `layout schedule, e.g. "v1,v2@2028-01-01T00:00:00Z" (default v1)`)
	asJSON := fs.Bool("json", false, "print the JSON object the HTTP decode endpoint returns")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one ID, got %d arguments; usage: snowfence decode <id> [--schedule …] [--json]", len(pos))
	}
	sched, err := snowfence.ParseSchedule(*schedText)
	if err != nil {
		return usageError{err}
	}
	id, err := snowfence.ParseID(pos[0])
	if err != nil {
		return usageError{err}
	}
	d, err := sched.Decode(id)
	if err != nil {
		return usageError{err}
	}
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
	fmt.Fprintf(tw, "layout\t%s\n", d.Layout)
	fmt.Fprintf(tw, "created_at\t%s\n", d.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	fmt.Fprintf(tw, "region\t%d\n", d.RegionNumber)
	fmt.Fprintf(tw, "machine\t%d\n", d.Machine)
	fmt.Fprintf(tw, "sequence\t%d\n", d.Sequence)
	return tw.Flush()
}
