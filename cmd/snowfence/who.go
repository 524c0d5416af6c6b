package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

const whoUsage = `usage: snowfence who <id | uuid> [--schedule …] [--region R] [--json] [store flags]
  Decodes the ID and answers, from the lease journal the store keeps, which holder minted it:
  host, pid, process start, token, the holder's interval and how it ended. An ID no retained
  journal entry covers is reported as NOT IN THE JOURNAL (exit status 1), with where it falls.
  --region R is the holders' region for a layout without region bits (v1); a v2 ID carries its own.`

// runWho answers "who minted this ID" from the store's lease journal.
func runWho(ctx context.Context, e env, args []string) error {
	var sf storeFlags
	fs := newFlags(e, "who")
	schedText := fs.String("schedule", "", `layout schedule (default: the fleet schedule stored beside the leases)`)
	asJSON := fs.Bool("json", false, "print JSON")
	sf.register(fs)
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one ID, got %d arguments\n%s", len(pos), whoUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := openWho(ctx, &sf, *schedText)
	if err != nil {
		return err
	}
	defer w.Close()
	id, err := w.parseID(pos[0])
	if err != nil {
		return err
	}
	ans, err := w.lookup(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(ans)
	}
	return ans.print(e)
}

// whoAnswer is what who prints: the decoded ID and the interval of the
// holder that minted it, or why the journal cannot say.
type whoAnswer struct {
	Decoded  snowfence.Decoded `json:"decoded"`
	Keyspace int               `json:"keyspace"`
	// Interval is the holder's, nil when NotInJournal is set.
	Interval *lease.Interval `json:"interval,omitempty"`
	// Host, PID and ProcessStartMs are the holder's name taken apart
	// (lease.HolderParts), when it is one ThisProcess made.
	Host           string `json:"host,omitempty"`
	PID            int    `json:"pid,omitempty"`
	ProcessStartMs int64  `json:"process_start_ms,omitempty"`
	// NotInJournal says where the ID falls when no entry covers it.
	NotInJournal string `json:"not_in_journal,omitempty"`
}

// errNotInJournal is the exit of who for an ID the journal does not cover:
// the answer is printed, and the command fails (status 1).
var errNotInJournal = errors.New("not in the journal")

func (a whoAnswer) print(e env) error {
	d := a.Decoded
	fmt.Fprintf(e.stdout, "ID %s: layout %s, created %s, region %d, machine %d, sequence %d\n", d.ID, d.Layout,
		d.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"), d.RegionNumber, d.Machine, d.Sequence)
	if a.Interval == nil {
		fmt.Fprintf(e.stdout, "NOT IN THE JOURNAL (machine %d, keyspace %d): %s\n", d.Machine, a.Keyspace, a.NotInJournal)
		return errNotInJournal
	}
	iv := a.Interval
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "minted by\t%s\n", iv.Holder)
	if a.Host != "" {
		fmt.Fprintf(tw, "host\t%s\n", a.Host)
		fmt.Fprintf(tw, "pid\t%d\n", a.PID)
		fmt.Fprintf(tw, "process start\t%s\n", fmtMs(a.ProcessStartMs))
	}
	fmt.Fprintf(tw, "token\t%d\n", iv.Token)
	if iv.Claim != "" {
		fmt.Fprintf(tw, "claim\t%s\n", iv.Claim)
	}
	fmt.Fprintf(tw, "claimed at\t%s\n", fmtMs(iv.ClaimedMs))
	fmt.Fprintf(tw, "interval\t%s – %s\n", fmtMs(iv.FromMs), untilText(*iv))
	fmt.Fprintf(tw, "ended\t%s\n", stateText(*iv))
	return tw.Flush()
}

// untilText is an interval's end, saying when it still moves.
func untilText(iv lease.Interval) string {
	if iv.State == lease.StateHolding {
		return fmtMs(iv.UntilMs) + " (its mark now; still held)"
	}
	return fmtMs(iv.UntilMs)
}

// stateText says how a holding ended.
func stateText(iv lease.Interval) string {
	at := ""
	if iv.EndedMs != 0 {
		at = " at " + fmtMs(iv.EndedMs)
	}
	switch iv.State {
	case lease.StateHolding:
		return "no: still held"
	case lease.StateLost:
		return "lost: its lease ran out or it was taken over; the next claim read its final mark"
	case lease.EndReleased:
		return "released" + at
	case lease.EndQuarantined:
		return "quarantined" + at + " (the holder stopped at its mark)"
	case lease.EndRaised:
		return "fenced by raise-marks" + at
	}
	return iv.State
}

// whoLookup answers who for many IDs against one store, reading each
// number's journal once.
type whoLookup struct {
	store  lease.Admin
	sched  snowfence.Schedule
	region int // for layouts without region bits
	spaces map[int]lease.Admin
	ivs    map[[2]int][]lease.Interval
}

// openWho connects to the store sf names and reads the fleet schedule
// (unless schedText gives one).
func openWho(ctx context.Context, sf *storeFlags, schedText string) (*whoLookup, error) {
	store, err := sf.connect(ctx)
	if err != nil {
		return nil, err
	}
	if schedText == "" {
		fleet, err := store.FleetSchedule(ctx)
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("read the fleet schedule: %w", err)
		}
		schedText = fleet.Text
	}
	sched, err := snowfence.ParseSchedule(schedText)
	if err != nil {
		store.Close()
		return nil, usageError{err}
	}
	return &whoLookup{store: store, sched: sched, region: sf.region, spaces: map[int]lease.Admin{}, ivs: map[[2]int][]lease.Interval{}}, nil
}

// Close closes the keyspaces opened and the store.
func (w *whoLookup) Close() {
	for _, s := range w.spaces {
		s.Close()
	}
	w.store.Close()
}

// parseID reads an ID in decimal or in its UUIDv8 form.
func (w *whoLookup) parseID(text string) (snowfence.ID, error) {
	id, err := snowfence.ParseID(text)
	if err == nil {
		return id, nil
	}
	u, uerr := snowfence.ParseUUID(text)
	if uerr != nil {
		return 0, usageError{err}
	}
	if id, err = w.sched.FromUUID(u); err != nil {
		return 0, usageError{err}
	}
	return id, nil
}

// keyspaceOf returns the keyspace whose leases minted IDs decoded as d:
// the step of the schedule in force at its timestamp, and its region (the
// ID's, or w.region for a layout without region bits).
func (w *whoLookup) keyspaceOf(d snowfence.Decoded) (int, error) {
	steps := w.sched.Steps()
	step := 0
	for i, s := range steps {
		if !s.From.After(d.CreatedAt) {
			step = i
		}
	}
	region := d.RegionNumber
	if steps[step].Layout.RegionBits == 0 {
		region = w.region
	}
	if len(steps) == 1 {
		return region, nil
	}
	return lease.KeyspaceOf(step, region)
}

// lookup decodes id and finds the interval that covers its timestamp.
func (w *whoLookup) lookup(ctx context.Context, id snowfence.ID) (whoAnswer, error) {
	d, err := w.sched.Decode(id)
	if err != nil {
		return whoAnswer{}, usageError{err}
	}
	ks, err := w.keyspaceOf(d)
	if err != nil {
		return whoAnswer{}, err
	}
	ivs, err := w.intervals(ctx, ks, d.Machine)
	if err != nil {
		return whoAnswer{}, err
	}
	ans := whoAnswer{Decoded: d, Keyspace: ks}
	iv, err := lease.Who(ivs, d.CreatedAt.UnixMilli())
	switch {
	case errors.Is(err, lease.ErrNotInJournal):
		ans.NotInJournal = err.Error()
		return ans, nil
	case err != nil:
		return whoAnswer{}, err
	}
	ans.Interval = &iv
	if host, pid, start, ok := lease.HolderParts(iv.Holder); ok {
		ans.Host, ans.PID, ans.ProcessStartMs = host, pid, start
	}
	return ans, nil
}

// intervals reads (once) the journal and record of machine in keyspace ks.
func (w *whoLookup) intervals(ctx context.Context, ks, machine int) ([]lease.Interval, error) {
	key := [2]int{ks, machine}
	if ivs, ok := w.ivs[key]; ok {
		return ivs, nil
	}
	st, ok := w.spaces[ks]
	if !ok {
		var err error
		if st, err = w.store.AdminKeyspace(ks); err != nil {
			return nil, err
		}
		w.spaces[ks] = st
	}
	hist, err := st.History(ctx, machine)
	if err != nil {
		return nil, fmt.Errorf("read the journal of machine %d (keyspace %d): %w", machine, ks, err)
	}
	rec, err := st.Get(ctx, machine)
	if err != nil {
		return nil, err
	}
	// Overlaps are not refused here: Who names both holders, which is
	// what an operator chasing a duplicate needs to see.
	ivs := lease.Intervals(hist, rec)
	w.ivs[key] = ivs
	return ivs, nil
}

// summary is the one-line who of an ID, for dups.
func (a whoAnswer) summary() string {
	if a.Interval == nil {
		return "NOT IN THE JOURNAL: " + a.NotInJournal
	}
	iv := a.Interval
	return fmt.Sprintf("%s token %s %s–%s %s", iv.Holder, strconv.FormatUint(iv.Token, 10), fmtMs(iv.FromMs), fmtMs(iv.UntilMs), iv.State)
}
