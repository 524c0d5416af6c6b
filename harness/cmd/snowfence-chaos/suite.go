package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/snowfence/snowfence/harness/chaos"
	"github.com/snowfence/snowfence/harness/chaos/netns"
)

// errFailed says a scenario failed (exit 1), as opposed to a usage or
// set-up error (exit 2).
var errFailed = errors.New("a scenario failed; see the report")

func suite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("snowfence-chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	long := fs.Bool("long", false, "long mode: every scenario at full length, ≥ 100 million IDs in all")
	seed := fs.Uint64("seed", 1, "seed of the run's random choices (which holder is killed when, …)")
	only := fs.String("scenarios", "", `comma-separated scenarios to run, e.g. "1,5b" ("5" is 5a–5h); empty: every one of the mode on the store`)
	store := fs.String("store", chaos.StoreEtcd, "lease store: "+strings.Join(chaos.Stores(), ", ")+", several comma-separated, or all (side by side)")
	out := fs.String("out", "chaos-out", "folder for report.md and report.json")
	pg := fs.String("postgres", os.Getenv("SNOWFENCE_TEST_POSTGRES_URL"), "PostgreSQL URL of the oracle (default $SNOWFENCE_TEST_POSTGRES_URL)")
	bin := fs.String("snowfence", "", "snowfence binary the services run (default: go build ./cmd/snowfence)")
	noFence := fs.Bool("unsafe-no-fence", false, "TEST ONLY: run the library holders without the fence; the suite must then report duplicates (scenario 4)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	lanes := fs.Int("lanes", 2, "etcd scenarios run at once (1 or 2), each on an etcd cluster of its own; the table stores run theirs one at a time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *pg == "" {
		return errors.New(`no PostgreSQL for the oracle: pass -postgres or set SNOWFENCE_TEST_POSTGRES_URL (export SNOWFENCE_TEST_POSTGRES_URL="$(scripts/services/postgres.sh start)")`)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	unlock, err := lockMachine()
	if err != nil {
		return err
	}
	defer unlock()
	work, err := os.MkdirTemp("", "snowfence-chaos-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if *bin == "" {
		*bin = filepath.Join(work, "snowfence")
		build := exec.CommandContext(ctx, "go", "build", "-tags", "snowfence_testbound", "-o", *bin, "github.com/snowfence/snowfence/cmd/snowfence")
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building snowfence: %w", err)
		}
	}
	netns.Cleanup(chaos.NamespacePrefix)
	var scen []string
	if *only != "" {
		scen = strings.Split(*only, ",")
	}
	var log io.Writer = stderr
	if *quiet {
		log = nil
	}
	stores := strings.Split(*store, ",")
	if *store == "all" {
		stores = chaos.Stores()
	}
	// The stores run side by side: each has servers, tables, namespaces
	// and addresses of its own (chaos.Run keeps them apart), and most of
	// a table store's time is its holders waiting out the notice window
	// of their claims (7.6 s in the short mode, 4 min 40 s in the long),
	// not work. The report keeps the stores' order.
	reps := make([]*chaos.Report, len(stores))
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	var logMu sync.Mutex
	for i, st := range stores {
		wg.Go(func() {
			var storeLog io.Writer
			if log != nil && len(stores) > 1 {
				storeLog = &prefixLines{mu: &logMu, w: log, prefix: st + " "}
			} else if log != nil {
				storeLog = log
			}
			reps[i], errs[i] = chaos.Run(ctx, chaos.Options{
				Long: *long, Seed: *seed, Scenarios: scen, NoFence: *noFence, Store: st,
				PostgresURL: *pg, Snowfence: *bin, Dir: work, Log: storeLog, Lanes: *lanes,
				Command: func(role string, args ...string) *exec.Cmd {
					return exec.Command(self, append([]string{role}, args...)...)
				},
			})
		})
	}
	wg.Wait()
	var rep *chaos.Report
	for i, r := range reps {
		if r != nil {
			if rep == nil {
				rep = r
			} else {
				rep.Merge(r)
			}
		}
		if errs[i] != nil && err == nil {
			err = fmt.Errorf("store %s: %w", stores[i], errs[i])
		}
	}
	if rep == nil {
		return err
	}
	rep.Elapsed = time.Since(rep.Started).Round(time.Millisecond).String()
	rep.Machine = machine()
	rep.Command = "snowfence-chaos " + strings.Join(args, " ")
	if werr := rep.Write(*out); werr != nil {
		return werr
	}
	fmt.Fprint(stdout, rep.Markdown())
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(*out, "report.md"))
	if err != nil {
		return err
	}
	if !rep.Pass() {
		return errFailed
	}
	return nil
}

// machine describes the host for the report: CPU model, cores, memory.
func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &kb)
		mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
	}
	return fmt.Sprintf("%s, %d cores%s, %s", model, runtime.NumCPU(), mem, runtime.Version())
}

// prefixLines starts every write to w with prefix (the store's name, when
// the stores run side by side). A write is one progress line, or a chunk
// of an etcd member's stderr, already prefixed with its scenario; the
// stores' writers share w, and mu keeps their writes whole.
type prefixLines struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
}

func (p *prefixLines) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.w.Write(append([]byte(p.prefix), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}
