package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

const leasesUsage = `usage: snowfence leases <init | list | show N | key N | history N | quarantine N | release N | raise-marks --to T> [--json] [store flags]
  init           create the lease table (--lease-store postgres or dynamodb)
  list           the numbers that matter: held, quarantined, and those held or released within the
                 last hour; free numbers that only carry a mark (raised by raise-marks, or long
                 released) are one summary line; --all lists every record (--json always does)
  show N         one machine number
  key N          the raw key N's record is stored under, alone on stdout, for a command by hand (aws
                 dynamodb --key, a psql WHERE, an etcdctl key, a zkCli.sh znode path, a kubectl
                 namespace/name): it depends on the region and the layout step (--region, --layout), so
                 never write it from N alone; --json says more
  history N      the journal of N: every retained claim, its holder, interval and how it ended
  quarantine N   make N unclaimable and unrenewable (its holder stops at its mark)
  release N      lift the quarantine on N
  raise-marks    NOT ROUTINE — the step after restoring the lease store from a backup, or a failover
                 that lost writes (docs/runbook.md): fence every holder in --machines (each stops at
                 its next renewal and claims again) and raise every mark to at least --to, past
                 anything any holder reserved or may still issue, in the keyspace of every layout of
                 every schedule the fleet may have run (or of --layout only). A running fleet on
                 these numbers stops issuing until about --to (503 fenced). --to is at least the
                 store's restore window from now (etcd now+40s, tables now+6m; the runbook says
                 now+1m and now+10m) and at most an hour more unless --far. It prints what it will
                 do — numbers, keyspaces, the holders it fences — then asks (at a terminal) or
                 needs --yes
  --layout NAME  the layout whose numbers to look at: each layout of the fleet schedule has
                 numbers of its own (default: the layout in force now)`

// runLeases inspects and fences machine-number leases.
func runLeases(ctx context.Context, e env, args []string) error {
	var sf storeFlags
	fs := newFlags(e, "leases")
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	to := fs.String("to", "", "raise-marks: the new minimum mark, RFC 3339 or now+DURATION (e.g. now+1m)")
	machines := fs.String("machines", "0-1023", "raise-marks: the machine numbers to raise")
	all := fs.Bool("all", false, "list: every record, the free numbers that only carry a mark too")
	yes := fs.Bool("yes", false, "raise-marks: go ahead without asking (required without a terminal)")
	far := fs.Bool("far", false, "raise-marks: accept a --to more than an hour past the store's restore window, leaving every number raised unusable until about then")
	layout := fs.String("layout", "", "the layout of the fleet schedule whose numbers to look at or raise (default: list/show/quarantine/release the layout in force now; raise-marks every layout's)")
	verb, rest, err := parseVerb(e, fs, args, leasesUsage)
	if err != nil {
		return err
	}
	wantArgs := map[string]int{"init": 0, "list": 0, "show": 1, "key": 1, "history": 1, "quarantine": 1, "release": 1, "raise-marks": 0}
	n, ok := wantArgs[verb]
	if !ok || len(rest) != n {
		return usagef("%s", leasesUsage)
	}
	machine := -1
	if n == 1 {
		if machine, err = strconv.Atoi(rest[0]); err != nil || machine < 0 {
			return usagef("machine number %q: want a number from 0 up", rest[0])
		}
	}
	var markMs int64
	var rng lease.Range
	if verb == "raise-marks" {
		if markMs, err = parseMarkTime(*to, time.Now()); err != nil {
			return err
		}
		if rng, err = lease.ParseRange(*machines); err != nil {
			return usageError{err}
		}
	}
	// raise-marks writes every number of the range in every layout's
	// keyspace (a table store: one conditional write each).
	limit := 30 * time.Second
	if verb == "raise-marks" {
		limit = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if verb == "init" {
		return initTable(ctx, e, &sf)
	}
	store, err := sf.connect(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	base := store
	if *layout != "" || verb != "raise-marks" {
		if store, err = layoutKeyspace(ctx, base, sf.region, machine, *layout, time.Now()); err != nil {
			return err
		}
		defer store.Close()
	}

	switch verb {
	case "list":
		recs, err := store.List(ctx)
		if err != nil {
			return err
		}
		if *asJSON || *all {
			return printRecords(e, recs, *asJSON)
		}
		shown, quiet := lease.Notable(recs, time.Now().UnixMilli())
		if err := printRecords(e, shown, false); err != nil {
			return err
		}
		return printQuiet(e, quiet)
	case "show":
		rec, err := store.Get(ctx, machine)
		if err != nil {
			return err
		}
		return printRecords(e, []lease.Record{rec}, *asJSON)
	case "key":
		return printRawKey(e, store, sf.region, machine, *asJSON)
	case "history":
		hist, err := store.History(ctx, machine)
		if err != nil {
			return err
		}
		rec, err := store.Get(ctx, machine)
		if err != nil {
			return err
		}
		return printHistory(e, lease.Intervals(hist, rec), *asJSON)
	case "quarantine":
		if err := store.Quarantine(ctx, machine); err != nil {
			return err
		}
		return say(e, *asJSON, map[string]any{"machine": machine, "quarantined": true},
			"machine %d quarantined: it can be neither claimed nor renewed; its holder stops at its mark", machine)
	case "release":
		if err := store.Unquarantine(ctx, machine); err != nil {
			return err
		}
		return say(e, *asJSON, map[string]any{"machine": machine, "quarantined": false},
			"machine %d released from quarantine: it can be claimed again", machine)
	default: // raise-marks
		// The raised mark must be past anything a holder cut off by the
		// restore may still issue: at least the store's restore window
		// (the longest any holder of it may go on issuing) from now. And
		// not much more: every number raised is unusable until about
		// then.
		now := time.Now()
		w := store.MaxRestoreWindow()
		if markMs < now.Add(w).UnixMilli() {
			return usagef("--to %s is too early: a holder the restore cut off may issue for up to %s on this store; "+
				"give at least now+%s", fmtMs(markMs), w, w)
		}
		if bound := w + raiseMargin; markMs > now.Add(bound).UnixMilli() && !*far {
			return usagef("--to %s is %s from now: no number raised could be claimed until about then, so a fleet on them "+
				"stops issuing for that long; past a restore only the store's restore window (%s) is needed: give at most now+%s, "+
				"or pass --far if the numbers are to stay unusable until then",
				fmtMs(markMs), (time.Duration(markMs-now.UnixMilli()) * time.Millisecond).Round(time.Second), w, bound)
		}
		targets := []lease.Admin{store}
		if *layout == "" {
			// A restore takes back every keyspace of the store at once,
			// and the restored fleet schedule may be older than the
			// layouts holders still issue under: raise them all.
			if targets, err = raiseTargets(base, sf.region); err != nil {
				return err
			}
			defer func() {
				for _, t := range targets[1:] {
					t.Close()
				}
			}()
		}
		fenced, err := raisePlan(ctx, e, targets, sf.region, rng, markMs, now)
		if err != nil {
			return err
		}
		if err := confirm(e, *yes, "raise-marks"); err != nil {
			return err
		}
		var changed int
		if *layout != "" {
			changed, err = store.RaiseMarks(ctx, rng, markMs)
		} else {
			changed, err = lease.RaiseAllMarks(ctx, base, sf.region, lease.MaxSteps, rng, markMs)
		}
		if err != nil {
			return err
		}
		return say(e, *asJSON, map[string]any{"raised": changed, "numbers": rng.Size(), "keyspaces": len(targets), "fenced": fenced,
			"mark_ms": markMs, "mark": fmtMs(markMs)},
			"raised the marks of %d %s (%s) in each of %d %s to at least %s (%d %s changed), fencing %d %s: every later claim starts at or after it",
			rng.Size(), plural(rng.Size(), "number", "numbers"), rng, len(targets), plural(len(targets), "keyspace", "keyspaces"), fmtMs(markMs),
			changed, plural(changed, "record", "records"), fenced, plural(fenced, "holder", "holders"))
	}
}

// raiseMargin is how far past the store's restore window raise-marks
// takes --to without --far: enough for clock skew and a slow operator,
// not enough to leave a fleet's numbers unusable for long by a typo.
const raiseMargin = time.Hour

// raiseTargets opens the keyspaces lease.RaiseAllMarks raises for region
// (lease.RaiseKeyspaces over lease.MaxSteps), base first: it is region's
// step-0 keyspace. The caller closes every one but the first.
func raiseTargets(base lease.Admin, region int) ([]lease.Admin, error) {
	idxs, err := lease.RaiseKeyspaces(region, lease.MaxSteps)
	if err != nil {
		return nil, err
	}
	ts := []lease.Admin{base}
	for _, idx := range idxs[1:] {
		ks, err := base.AdminKeyspace(idx)
		if err != nil {
			for _, t := range ts[1:] {
				t.Close()
			}
			return nil, err
		}
		ts = append(ts, ks)
	}
	return ts, nil
}

// raisePlan prints on stderr what raise-marks over rng to markMs will do
// in targets — how many numbers in how many keyspaces, until when they are
// unusable, which live holders it fences — and returns how many holders
// that is.
func raisePlan(ctx context.Context, e env, targets []lease.Admin, region int, rng lease.Range, markMs int64, now time.Time) (int, error) {
	type holder struct {
		keyspace int
		rec      lease.Record
	}
	var live []holder
	for _, t := range targets {
		recs, err := t.List(ctx)
		if err != nil {
			return 0, fmt.Errorf("raise-marks: list keyspace %d to find its holders: %w", t.Region(), err)
		}
		for _, r := range recs {
			if rng.Contains(r.Machine) && r.LiveAt(now.UnixMilli()) {
				live = append(live, holder{t.Region(), r})
			}
		}
	}
	w := e.stderr
	fmt.Fprintf(w, "raise-marks will, in region %d, for machine numbers %s (%d) in each of %d %s:\n", region, rng, rng.Size(), len(targets), plural(len(targets), "keyspace", "keyspaces"))
	fmt.Fprintf(w, "  fence every holder: each stops issuing at its next renewal and claims again;\n")
	fmt.Fprintf(w, "  raise every mark to at least %s (in %s): no ID is issued on these numbers before then, so a holder left only these numbers refuses (503 fenced) until about then\n",
		fmtMs(markMs), (time.Duration(markMs-now.UnixMilli()) * time.Millisecond).Round(time.Second))
	fmt.Fprintf(w, "holders it fences: %d\n", len(live))
	for _, h := range live {
		fmt.Fprintf(w, "  keyspace %d machine %d: %s (token %d)\n", h.keyspace, h.rec.Machine, h.rec.Holder, h.rec.Token)
	}
	return len(live), nil
}

// printRawKey prints the raw key of machine in the keyspace st is: the key
// alone on stdout (for $(…) in a command by hand), what it is on stderr;
// with asJSON, the whole lease.RawKey and the region.
func printRawKey(e env, st lease.Admin, region, machine int, asJSON bool) error {
	rk, ok := st.(lease.RawKeyer)
	if !ok {
		return fmt.Errorf("this lease store (%T) names no raw keys", st)
	}
	k, err := rk.RawKey(machine)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(struct {
			Region int `json:"region"`
			lease.RawKey
		}{region, k})
	}
	var where string
	switch k.Store {
	case "etcd":
		where = "etcd keys " + strings.Join(k.Keys, ", ") + "; the mark key"
	case "postgres":
		where = "PostgreSQL table " + k.Table + ", the row WHERE"
	case "dynamodb":
		where = "DynamoDB table " + k.Table + ", the item with --key"
	case "zookeeper":
		// Keys[0] is the lease znode (Key); the rest, its journal's parent.
		where = "ZooKeeper znode (its claim child c-<claim> beneath it)"
		if len(k.Keys) > 1 {
			where = "ZooKeeper znode (its claim child c-<claim> beneath it; journal under " + strings.Join(k.Keys[1:], ", ") + ")"
		}
	case "kubernetes":
		where = "Kubernetes Lease object, namespace/name (its record in the annotation snowfence.io/record)"
	}
	fmt.Fprintf(e.stderr, "machine %d of region %d (keyspace %d): %s:\n", machine, region, k.Keyspace, where)
	_, err = fmt.Fprintln(e.stdout, k.Key)
	return err
}

// inLayout refuses a region or machine number (-1: none given) that layout
// l has no room for: during an incident a typo must be an error, not a
// quarantine or release of a number no holder can ever hold.
func inLayout(l snowfence.Layout, region, machine int) error {
	if region >= 1<<l.RegionBits {
		return usagef("region %d is outside layout %s's region numbers 0-%d (%d region bits): name a layout that has it with --layout, or check the region",
			region, l.Name, 1<<l.RegionBits-1, l.RegionBits)
	}
	if machine >= 1<<l.MachineBits {
		return usagef("machine number %d is outside layout %s's 0-%d (%d machine bits): check the number, or name another layout with --layout",
			machine, l.Name, 1<<l.MachineBits-1, l.MachineBits)
	}
	return nil
}

// layoutKeyspace opens the keyspace of region's numbers for the fleet
// schedule's layout named name (lease.KeyspaceOf), or for the layout in
// force at now when name is empty. A name the schedule has twice is its
// first step's. A region or machine number (-1: none) the layout has no
// room for is refused (inLayout).
func layoutKeyspace(ctx context.Context, st lease.Admin, region, machine int, name string, now time.Time) (lease.Admin, error) {
	fleet, err := st.FleetSchedule(ctx)
	if err != nil {
		return nil, err
	}
	sched, err := snowfence.ParseSchedule(fleet.Text)
	if err != nil {
		return nil, err
	}
	steps := sched.Steps()
	at := -1
	for i, step := range steps {
		if (name == "" && !step.From.After(now)) || (at < 0 && step.Layout.Name == name) {
			at = i
		}
	}
	if at < 0 {
		return nil, usagef("--layout %q: the fleet schedule %q has no such layout", name, fleet.Text)
	}
	if err := inLayout(steps[at].Layout, region, machine); err != nil {
		return nil, err
	}
	idx := region
	if len(steps) > 1 {
		if idx, err = lease.KeyspaceOf(at, region); err != nil {
			return nil, err
		}
	}
	return st.AdminKeyspace(idx)
}

// initTable creates the lease table of a table store.
func initTable(ctx context.Context, e env, sf *storeFlags) error {
	if err := sf.check(); err != nil {
		return err
	}
	if !sf.isTable() {
		return usagef("init is for --lease-store postgres or dynamodb; etcd and zookeeper need no set-up, and kubernetes only its namespace and RBAC (docs/deployment.md)")
	}
	store, create, err := sf.tableStore(ctx, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := create(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "lease table ready (%s)\n", sf.kind)
	return err
}

// parseMarkTime reads raise-marks' --to: "now+1m" or an RFC 3339 instant.
func parseMarkTime(s string, now time.Time) (int64, error) {
	if s == "" {
		return 0, usagef("raise-marks needs --to, e.g. --to now+1m")
	}
	return parseInstant("to", s, now)
}

// parseInstant reads an instant given to --flag: "now", "now+DURATION" or
// RFC 3339, in Unix ms.
func parseInstant(flag, s string, now time.Time) (int64, error) {
	if s == "now" {
		return now.UnixMilli(), nil
	}
	if d, ok := strings.CutPrefix(s, "now+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			return 0, usagef("--%s %q: after now+ put a positive duration such as 1m", flag, s)
		}
		return now.Add(dur).UnixMilli(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, usagef("--%s %q: use now, now+DURATION or an RFC 3339 instant", flag, s)
	}
	return t.UnixMilli(), nil
}

// fmtMs is lease.FormatMs, with "-" for a mark or expiry never written.
func fmtMs(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return lease.FormatMs(ms)
}

// say prints a confirmation as a sentence or as JSON.
func say(e env, asJSON bool, v any, format string, args ...any) error {
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(v)
	}
	_, err := fmt.Fprintf(e.stdout, format+"\n", args...)
	return err
}

func printRecords(e env, recs []lease.Record, asJSON bool) error {
	if asJSON {
		if recs == nil {
			recs = []lease.Record{}
		}
		return json.NewEncoder(e.stdout).Encode(recs)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MACHINE\tREGION\tHOLDER\tTOKEN\tMARK\tEXPIRES\tQUARANTINED")
	for _, r := range recs {
		holder, token := r.Holder, strconv.FormatUint(r.Token, 10)
		if holder == "" {
			holder, token = "-", "-"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%v\n", r.Machine, r.Region, holder, token, fmtMs(r.MarkMs), fmtMs(r.ExpiresMs), r.Quarantined)
	}
	return tw.Flush()
}

// printQuiet prints the line that stands for the free numbers a listing
// left out (lease.Notable), if any.
func printQuiet(e env, q lease.Quiet) error {
	if q.N == 0 {
		return nil
	}
	_, err := fmt.Fprintf(e.stdout, "%d free %s with marks up to %s (raised by raise-marks, or released over an hour ago): --all lists them\n",
		q.N, plural(q.N, "number", "numbers"), fmtMs(q.MaxMarkMs))
	return err
}

// printHistory prints the intervals of one number's journal, oldest first.
func printHistory(e env, ivs []lease.Interval, asJSON bool) error {
	if asJSON {
		if ivs == nil {
			ivs = []lease.Interval{}
		}
		return json.NewEncoder(e.stdout).Encode(ivs)
	}
	if len(ivs) == 0 {
		_, err := fmt.Fprintf(e.stdout, "no claim of this number is recorded (the journal keeps the newest %d claims of each number)\n", lease.JournalRetention)
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOKEN\tHOLDER\tCLAIMED\tFROM\tUNTIL\tENDED")
	for _, iv := range ivs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", iv.Token, iv.Holder, fmtMs(iv.ClaimedMs), fmtMs(iv.FromMs), untilText(iv), stateText(iv))
	}
	if err := lease.CheckIntervals(ivs); err != nil {
		fmt.Fprintf(tw, "WARNING: %v\n", err)
	}
	return tw.Flush()
}
