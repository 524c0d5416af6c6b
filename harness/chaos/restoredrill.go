package chaos

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// The restore drills (tableRestore, 9d; zkRestore, 12d) share their
// steps around the store-specific restore: a late service whose claim the
// backup does not know of, the runbook's raise-marks, and the checks once
// the holders may reach the store again. How the store is backed up,
// restored and kept from the holders while the operator works stays in
// each drill.

// lateService adds a service on one number of its own, after the backup
// (its claim is not in it), waits until it serves and starts a light
// load on it that runs up to deadline; it then lets the store move on
// for a while. The drill adds the service to its fleet.
func (e *Env) lateService(sc serviceConfig, deadline time.Duration) (*service, *load, error) {
	late := sc
	late.machines = e.machines("late service", 1, 1)
	ls, err := e.addService(late)
	if err != nil {
		return nil, nil, err
	}
	if err := ls.waitServing(e.ctx, 60*time.Second); err != nil {
		return nil, nil, err
	}
	lateLoad := e.startLoad([]*service{ls}, loadConfig{callers: 1, rate: 2000, count: 10, deadline: deadline})
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return nil, nil, err
	}
	return ls, lateLoad, nil
}

// raiseMarks is the operator's step: `snowfence leases raise-marks --to
// now+window` over every number of the restored store, reached through
// storeFlags (--lease-store and its own flags), with env added to the
// command's environment. stopped is when the store crashed. It returns
// the raised mark.
func (e *Env) raiseMarks(window time.Duration, stopped time.Time, storeFlags, env []string) (time.Time, error) {
	args := append([]string{"leases", "raise-marks", "--to", "now+" + window.String()}, storeFlags...)
	args = append(args, "--machines", "0-1023", "--json", "--yes")
	raise := exec.CommandContext(e.ctx, e.opts.Snowfence, args...)
	if len(env) > 0 {
		raise.Env = append(raise.Environ(), env...)
	}
	out, err := raise.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return time.Time{}, fmt.Errorf("snowfence leases raise-marks: %v: %s%s", err, out, stderr)
	}
	var raised struct {
		Raised int   `json:"raised"`
		MarkMs int64 `json:"mark_ms"`
	}
	if err := json.Unmarshal(out, &raised); err != nil {
		return time.Time{}, fmt.Errorf("raise-marks --json: %v: %s", err, out)
	}
	mark := time.UnixMilli(raised.MarkMs)
	e.note("operator step: raise-marks --to now+%v raised %d marks to %s, %v after the crash", window, raised.Raised,
		mark.UTC().Format(time.RFC3339), time.Since(stopped).Round(time.Millisecond))
	return mark, nil
}

// checkRaised checks the fleet once the holders may reach the restored,
// raised store again (since back): every holder refuses at its first
// renewal — raise-marks took its number, or its keeper stopped at its
// self-fence while the store was away — every service issues again
// within the raised window, the holders were refused, and nothing was
// issued between the cut-off holders' self-fence after the crash
// (stopped) and the raised mark. It stops the late service's load.
func (e *Env) checkRaised(t lease.Timings, svcs []*service, lateLoad *load, refusedSince func() (int64, int64),
	window time.Duration, stopped, back, mark time.Time) error {
	e.logf("the holders may reach it again; they must refuse until %s", mark.UTC().Format(time.TimeOnly))
	// A renewal comes within a renewal period, or a quarter of one after a
	// failure, plus the request timeout; the generator stops at once.
	noticeBy := 2*t.RenewEvery + 2*time.Second
	var missed []string
	for _, s := range svcs {
		if _, err := e.waitFenced(s, noticeBy); err != nil {
			missed = append(missed, s.name)
		}
	}
	e.check("every service stopped issuing at its first renewal after the operator's step", len(missed) == 0,
		"still issuing %v after the store came back: %v", noticeBy, missed)
	last, err := e.waitAllIssuing(svcs, window+3*time.Minute)
	if err != nil {
		return err
	}
	e.recovered(last.Sub(back), "every service issuing again after the restore and raise-marks")
	e.note("every service issuing again %v after the store came back (the raised mark is %v after the operator's step)",
		last.Sub(back).Round(time.Millisecond), window)
	r, l := refusedSince()
	e.check("the holders refused after the restore", r > 0 && l > 0, "%d refused requests, %d refused library calls", r, l)
	lateLoad.stop()
	// A holder cut off by the crash issues until its self-fence, at most
	// self-fence (×1.08 for a slow clock) after its last renewal; the
	// claims after the restore start at the raised mark.
	quiet := stopped.Add(t.SelfFence*108/100 + time.Second)
	n := e.col.countBetween(quiet, mark)
	e.check("nothing issued between the cut-off holders' self-fence and the raised mark", n == 0,
		"%d IDs stamped %s … %s", n, quiet.UTC().Format(time.TimeOnly), mark.UTC().Format(time.TimeOnly))
	return nil
}
