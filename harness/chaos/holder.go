package chaos

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/offsetclock"
	"github.com/snowfence/snowfence/internal/testkit/wire"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/pgstore"
	"github.com/snowfence/snowfence/zkstore"
)

// holderFlags configure a library holder: a process that embeds the
// library the way a service does (node.Start on an external etcd) and is its
// own caller, minting at a paced rate and streaming every ID it got to the
// harness.
type holderFlags struct {
	store      string // StoreEtcd, StorePostgres, StoreDynamoDB, StoreZooKeeper or StoreKubernetes
	etcd       string
	pgURL      string
	dynamo     string // DynamoDB endpoint
	table      string // lease table of postgres or dynamodb; zookeeper's path
	zkServers  string // comma-separated host:port (zookeeper)
	zkSession  time.Duration
	kubeconfig string // the holders' service account (kubernetes)
	k8sNS      string // the leases' namespace (kubernetes)
	k8sPrefix  string // the leases' name prefix (kubernetes; "": k8sstore's)
	k8sServer  string // the API server's URL, instead of the kubeconfig's (kubernetes)
	machines   string
	generators int
	rate       int // IDs per second per generator; 0: as fast as it goes
	batch      int
	leaseTTL   time.Duration
	renewEvery time.Duration
	selfFence  time.Duration
	margin     time.Duration // negative: the store's
	noFence    bool
	// maxSelfFence is the table stores' Config.TestBound (0: none).
	maxSelfFence time.Duration
	// maxReserve is the test bound's reserve (zookeeper, kubernetes; 0: none).
	maxReserve time.Duration
}

// flushEvery is how often a holder flushes its frames.
const flushEvery = 5 * time.Millisecond

// HolderMain runs a library holder until ctx ends or standard input says
// "quit": --generators keepers and generators on one store client (etcd,
// or a PostgreSQL or DynamoDB lease table: --lease-store), with the
// store's timings for those not given, one wall
// clock the harness can step ("step <ms>" on standard input), frames on
// stdout (see package internal/testkit/wire), logs on stderr.
//
// --unsafe-no-fence is the suite's proof that it can fail: each generator
// keeps using the last grant it saw, with no self-fence and no mark, after
// its lease is gone — what a Snowflake service without fencing does. It
// exists only in this test binary; snowfence serve has no such switch.
func HolderMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f holderFlags
	fs := flag.NewFlagSet("holder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.store, "lease-store", StoreEtcd, "etcd, postgres, dynamodb, zookeeper or kubernetes")
	fs.StringVar(&f.etcd, "etcd", "", "comma-separated etcd client URLs")
	fs.StringVar(&f.pgURL, "postgres-url", "", "PostgreSQL URL of the lease table (--lease-store postgres)")
	fs.StringVar(&f.dynamo, "dynamodb-endpoint", "", "DynamoDB endpoint of the lease table (--lease-store dynamodb)")
	fs.StringVar(&f.table, "table", "", "lease table (postgres, dynamodb), or the znode path (zookeeper)")
	fs.StringVar(&f.zkServers, "zk-servers", "", "comma-separated host:port of the ZooKeeper servers (--lease-store zookeeper)")
	fs.DurationVar(&f.zkSession, "zk-session-timeout", 10*time.Second, "ZooKeeper session timeout (--lease-store zookeeper)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the holders' service account (--lease-store kubernetes)")
	fs.StringVar(&f.k8sNS, "k8s-namespace", "", "namespace of the Lease objects (--lease-store kubernetes)")
	fs.StringVar(&f.k8sPrefix, "k8s-prefix", "", "name prefix of the Lease objects (--lease-store kubernetes; default k8sstore's)")
	fs.StringVar(&f.k8sServer, "k8s-server", "", "the API server's URL, instead of the kubeconfig's (--lease-store kubernetes)")
	fs.StringVar(&f.machines, "machines", "0-1023", "machine-number range")
	fs.IntVar(&f.generators, "generators", 1, "keeper+generator pairs")
	fs.IntVar(&f.rate, "rate", 1000, "IDs per second per generator (0: as fast as possible)")
	fs.IntVar(&f.batch, "batch", 100, "IDs per call")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 0, "lease TTL (0: the library default)")
	fs.DurationVar(&f.renewEvery, "renew-every", 0, "renewal period (0: default)")
	fs.DurationVar(&f.selfFence, "self-fence", 0, "self-fence (0: default)")
	fs.DurationVar(&f.margin, "fence-margin", -1, "margin below the mark (negative: the store's)")
	fs.DurationVar(&f.maxSelfFence, "table-max-self-fence", 0, "the lease table's longest self-fence of any holder (postgres, dynamodb, zookeeper; 0: the store's default)")
	fs.DurationVar(&f.maxReserve, "table-max-reserve", 0, "the lease table's longest reserve of any holder, with --table-max-self-fence (zookeeper, kubernetes: their restore window; 0: the store's default)")
	fs.BoolVar(&f.noFence, "unsafe-no-fence", false, "TEST ONLY: ignore the lease fence once a number was held")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.generators < 1 || f.generators > 64 || f.batch < 1 || f.batch > snowfence.MaxBatch || f.rate < 0 {
		return fmt.Errorf("holder: bad --generators %d, --batch %d or --rate %d", f.generators, f.batch, f.rate)
	}
	rng, err := lease.ParseRange(f.machines)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	store, err := openStore(ctx, f, log)
	if err != nil {
		return err
	}
	defer store.Close()
	clock := offsetclock.New(snowfence.SystemClock())
	out := wire.NewWriter(stdout)

	nodes := make([]*node.Node, f.generators)
	var wg sync.WaitGroup
	errs := make([]error, f.generators)
	for i := range nodes {
		wg.Go(func() { nodes[i], errs[i] = startNode(ctx, f, store, clock, &rng, log) })
	}
	wg.Wait()
	defer func() {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer ccancel()
		for _, n := range nodes {
			if n != nil {
				n.Close(cctx)
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	out.Write(wire.KindReady, 0, nil)
	out.Flush()

	stats := make([]holderStats, f.generators)
	for i, n := range nodes {
		g := n.Generator
		if f.noFence {
			if g, err = unfencedGenerator(n, clock, log); err != nil {
				return err
			}
		}
		wg.Go(func() { mint(ctx, g, f, clock, out, i, &stats[i]) })
	}
	wg.Go(func() { report(ctx, nodes, stats, out) })
	err = control(ctx, stdin, clock, out)
	cancel()
	wg.Wait()
	out.Flush()
	return err
}

// openStore connects to the store the flags name.
func openStore(ctx context.Context, f holderFlags, log *slog.Logger) (lease.Store, error) {
	switch f.store {
	case StoreEtcd:
		return etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: strings.Split(f.etcd, ",")}, etcdstore.Config{Logger: log})
	case StorePostgres:
		return pgstore.Connect(ctx, f.pgURL, pgstore.Config{Table: f.table, Logger: log, TestBound: testbound.Of(f.maxSelfFence)})
	case StoreDynamoDB:
		return dynamostore.Connect(ctx, dynamoClient(f.dynamo), dynamostore.Config{Table: f.table, Logger: log, TestBound: testbound.Of(f.maxSelfFence)})
	case StoreZooKeeper:
		return zkstore.Connect(strings.Split(f.zkServers, ","), f.zkSession, zkstore.Config{Path: f.table, Logger: log, TestBound: testbound.Of(f.maxSelfFence).WithMaxReserve(f.maxReserve)})
	case StoreKubernetes:
		rc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("holder: --kubeconfig %s: %w", f.kubeconfig, err)
		}
		if f.k8sServer != "" {
			// Set here, not as clientcmd's override, which drops the
			// kubeconfig's tls-server-name: a relay's address is not one
			// the API server's certificate names.
			rc.Host = f.k8sServer
		}
		rc.QPS = -1 // the keepers' requests are few; never queue a renewal behind a client-side limit
		return k8sstore.Open(ctx, k8sstore.Config{Namespace: f.k8sNS, Prefix: f.k8sPrefix, Logger: log,
			TestBound: testbound.Of(f.maxSelfFence).WithMaxReserve(f.maxReserve)}, rc)
	}
	return nil, fmt.Errorf("holder: --lease-store %q: use etcd, postgres, dynamodb, zookeeper or kubernetes", f.store)
}

// startNode claims a number for one generator, waiting (as a supervisor
// restarting the process would) while the whole range is taken.
func startNode(ctx context.Context, f holderFlags, store lease.Store, clock snowfence.Clock, rng *lease.Range, log *slog.Logger) (*node.Node, error) {
	for {
		kc := lease.KeeperConfig{
			Range: rng, LeaseFor: f.leaseTTL, RenewEvery: f.renewEvery, SelfFence: f.selfFence,
			Clock: clock, Boottime: lease.Boottime,
		}
		storeTimings(f.store).Apply(&kc)
		if f.margin >= 0 {
			kc.Margin = f.margin
		}
		n, err := node.Start(ctx, node.Config{
			Store:     store,
			Logger:    log,
			Keeper:    kc,
			Generator: snowfence.Config{ClockPolicy: snowfence.ClockOff},
		})
		if !errors.Is(err, lease.ErrNoFreeNumber) {
			return n, err
		}
		if err := clock.Sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// holderStats are one generator's counters, read by report.
type holderStats struct {
	refused, issued atomic.Int64
}

// mint is one generator's caller: every millisecond it asks for what the
// rate owes (or, at rate 0, for batch after batch) and streams what it got.
// When it falls behind it drops the debt rather than burst to catch up.
func mint(ctx context.Context, g *snowfence.Generator, f holderFlags, clock snowfence.Clock, out *wire.Writer, idx int, st *holderStats) {
	buf := make([]snowfence.ID, 0, snowfence.MaxBatch)
	vals := make([]int64, 0, snowfence.MaxBatch)
	start := clock.Now().Mono
	var minted int64
	for ctx.Err() == nil {
		want := f.batch
		if f.rate > 0 {
			if clock.Sleep(ctx, time.Millisecond) != nil {
				return
			}
			owed := int64(float64(f.rate)*(clock.Now().Mono-start).Seconds()) - minted
			if owed > int64(f.rate)/10 { // more than 100 ms behind
				minted += owed - int64(f.batch)
				owed = int64(f.batch)
			}
			if owed <= 0 {
				continue
			}
			want = int(min(owed, int64(f.batch)))
		}
		ids, err := g.AppendN(ctx, buf[:0], want)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			st.refused.Add(1)
			minted += int64(want) // a refused request is not retried
			if clock.Sleep(ctx, time.Millisecond) != nil {
				return
			}
			continue
		}
		minted += int64(len(ids))
		vals = vals[:0]
		for _, id := range ids {
			vals = append(vals, int64(id))
		}
		out.Write(wire.KindIDs, idx, vals)
		st.issued.Add(int64(len(ids)))
	}
}

// report flushes the frames every flushEvery and sends each generator's
// counters every tenth flush.
func report(ctx context.Context, nodes []*node.Node, stats []holderStats, out *wire.Writer) {
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if i%10 == 0 {
			for g, n := range nodes {
				machine := int64(-1)
				st := n.Keeper.Status()
				if st.State == lease.StateHeld {
					machine = int64(st.Machine)
				}
				var renewed int64 // ms since the epoch, holder's wall clock; 0: none yet
				if !st.LastRenewal.IsZero() {
					renewed = st.LastRenewal.UnixMilli()
				}
				out.Write(wire.KindStats, g, []int64{stats[g].refused.Load(), machine, stats[g].issued.Load(), renewed, int64(st.RenewFailures)})
			}
		}
		if out.Flush() != nil {
			return // the harness is gone
		}
	}
}

// control reads commands from the harness: "step <ms> <seq>" steps the
// wall clock, "slew <ms> <over-ms> <seq>" slews it (offsetclock.Clock.Slew),
// "quit" ends the holder. Each command is acknowledged with its
// sequence number once done.
func control(ctx context.Context, stdin io.Reader, clock *offsetclock.Clock, out *wire.Writer) error {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		close(lines)
	}()
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case line, ok = <-lines:
		}
		if !ok || line == "quit" {
			return nil
		}
		fields := strings.Fields(line)
		if !(len(fields) == 3 && fields[0] == "step" || len(fields) == 4 && fields[0] == "slew") {
			return fmt.Errorf("holder: unknown command %q", line)
		}
		nums := make([]int64, len(fields)-1)
		var errs []error
		for i, f := range fields[1:] {
			var err error
			nums[i], err = strconv.ParseInt(f, 10, 64)
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("holder: command %q: %w", line, err)
		}
		ms, seq := time.Duration(nums[0])*time.Millisecond, nums[len(nums)-1]
		if fields[0] == "slew" {
			if err := clock.Slew(ms, time.Duration(nums[1])*time.Millisecond); err != nil {
				return fmt.Errorf("holder: command %q: %w", line, err)
			}
		} else {
			clock.Step(ms)
		}
		out.Write(wire.KindAck, 0, []int64{seq})
		out.Flush()
	}
}

// unfencedGenerator returns a generator on n's machine number that ignores
// the fence: it keeps the last grant n's keeper published, with the
// self-fence off and no mark, for ever. Test only (see HolderMain).
func unfencedGenerator(n *node.Node, clock snowfence.Clock, log *slog.Logger) (*snowfence.Generator, error) {
	v := &unfenced{inner: n.Keeper}
	if _, err := v.GrantAt(clock.Now().WallMs); err != nil {
		return nil, err
	}
	return snowfence.New(snowfence.Config{Lease: v, Clock: clock, Logger: log, ClockPolicy: snowfence.ClockOff})
}

// unfenced is a LeaseView that outlives its lease. It tells New nothing of
// the keeper's (no schedule, clock or placements) and binds nothing: it is
// a second generator on the keeper's number, which is what it is for.
type unfenced struct {
	inner snowfence.LeaseView
	last  atomic.Pointer[snowfence.Grant]
}

func (u *unfenced) Schedule() snowfence.Schedule      { return snowfence.Schedule{} }
func (u *unfenced) Clock() snowfence.Clock            { return nil }
func (u *unfenced) Placements() []snowfence.Placement { return nil }
func (u *unfenced) Bind() error                       { return nil }
func (u *unfenced) MarkReached(*snowfence.Grant)      {}

func (u *unfenced) GrantAt(wallMs int64) (*snowfence.Grant, error) {
	if g, err := u.inner.GrantAt(wallMs); err == nil {
		if l := u.last.Load(); l == nil || l.Token != g.Token {
			c := *g
			c.SelfFence, c.LimitMs = 0, math.MaxInt64/2
			u.last.Store(&c)
		}
	}
	if l := u.last.Load(); l != nil {
		return l, nil
	}
	return u.inner.GrantAt(wallMs)
}
