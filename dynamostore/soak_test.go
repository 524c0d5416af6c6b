//go:build linux

package dynamostore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
)

// Child holder processes for the soak: the parent re-executes this test
// binary with soakChildEnv set to a JSON soakConfig, and TestSoakChild
// runs keepers and generators on the table, printing one flushed line per
// event:
//
//	ids <holder> <id> …        one batch, in issue order
//	refused <holder> <error>   a refused batch
//	reqs <n> <ms>              DynamoDB requests sent so far, in ms of life
const soakChildEnv = "SNOWFENCE_DYNAMO_SOAK_CHILD"

type soakConfig struct {
	Endpoint, Table                 string
	Range                           lease.Range
	Holders                         int
	Every                           time.Duration
	Lifetime                        time.Duration
	LeaseFor, RenewEvery, SelfFence time.Duration
}

// countingClient counts the HTTP requests the SDK sends (retries included).
type countingClient struct {
	n atomic.Int64
	c *http.Client
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.c.Do(r)
}

// TestSoakChild is not a test: it is the body of a soak child process.
func TestSoakChild(t *testing.T) {
	js := os.Getenv(soakChildEnv)
	if js == "" {
		t.Skip("soak child process: runs only when re-executed by TestSoakKilledHoldersNeverDuplicate")
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	printf := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(w, format+"\n", args...)
		w.Flush()
		mu.Unlock()
	}
	var cfg soakConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		printf("fatal %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Lifetime)
	defer cancel()
	go func() { // stdin closing means: release and exit
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
		}
		cancel()
	}()
	hc := &countingClient{c: &http.Client{}}
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		printf("fatal %v", err)
		return
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.BaseEndpoint, o.HTTPClient = aws.String(cfg.Endpoint), hc
	})
	s, err := dynamostore.New(client, dynamostore.Config{Table: cfg.Table, RequestTimeout: time.Second})
	if err != nil {
		printf("fatal %v", err)
		return
	}
	born := time.Now()
	go func() {
		for ctx.Err() == nil {
			printf("reqs %d %d", hc.n.Load(), time.Since(born).Milliseconds())
			time.Sleep(200 * time.Millisecond)
		}
	}()
	me, _ := lease.ThisProcess()
	var wg sync.WaitGroup
	for i := range cfg.Holders {
		wg.Go(func() {
			rng := cfg.Range
			clk := snowfence.SystemClock()
			var k *lease.Keeper
			for k == nil && ctx.Err() == nil {
				kctx, kcancel := context.WithTimeout(ctx, 2*time.Second)
				k, _ = lease.StartKeeper(kctx, lease.KeeperConfig{Store: s, Holder: fmt.Sprintf("%s/h%d", me, i), Range: &rng,
					Clock: clk, LeaseFor: cfg.LeaseFor, RenewEvery: cfg.RenewEvery, SelfFence: cfg.SelfFence})
				kcancel()
				if k == nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
			if k == nil {
				return
			}
			defer k.Close(context.Background())
			g, err := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
			if err != nil {
				printf("fatal %v", err)
				return
			}
			k.SetLastIssued(g.LastIssued)
			for ctx.Err() == nil {
				ids, err := g.NextN(ctx, 10)
				if err != nil {
					if ctx.Err() == nil {
						printf("refused %d %s", i, strings.ReplaceAll(err.Error(), "\n", " "))
					}
				} else {
					var b strings.Builder
					fmt.Fprintf(&b, "ids %d", i)
					for _, id := range ids {
						fmt.Fprintf(&b, " %d", int64(id))
					}
					printf("%s", b.String())
				}
				time.Sleep(cfg.Every)
			}
		})
	}
	wg.Wait()
	printf("reqs %d %d", hc.n.Load(), time.Since(born).Milliseconds())
}

// TestSoakKilledHoldersNeverDuplicate runs 8 child processes of 2 holders
// each on machine numbers 0–11 of one table, minting continuously, while the
// parent SIGKILLs a random process every 0.3–1.5 s and starts a fresh one in
// its place. No ID may be printed twice and no two holders may stamp the
// same millisecond on one number. It logs the DynamoDB request rate per
// holder. SNOWFENCE_SOAK_SEED replays a kill schedule.
func TestSoakKilledHoldersNeverDuplicate(t *testing.T) {
	ep := endpoint(t)
	const procs, perProc = 8, 2
	dur := 15 * time.Second
	if testing.Short() {
		dur = 4 * time.Second
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("SNOWFENCE_SOAK_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("soak: seed %d, %v", seed, dur)
	prng := rand.New(rand.NewPCG(seed, 0))
	s := newStore(t)
	cfg := soakConfig{Endpoint: ep, Table: s.Table(), Range: lease.Range{Lo: 0, Hi: 11}, Holders: perProc,
		Every: 10 * time.Millisecond, Lifetime: dur + 30*time.Second,
		LeaseFor: 3 * time.Second, RenewEvery: 500 * time.Millisecond, SelfFence: 1200 * time.Millisecond}
	js, _ := json.Marshal(cfg)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	type rec struct {
		id     int64
		holder int
	}
	var (
		mu             sync.Mutex
		recs           []rec
		refused, fatal int
		reqs           = map[int][2]int64{} // incarnation → last (count, ms)
		incarnations   int
		readers        sync.WaitGroup
	)
	type child struct {
		cmd   *exec.Cmd
		stdin interface{ Close() error }
	}
	start := func() *child {
		mu.Lock()
		inc := incarnations
		incarnations++
		mu.Unlock()
		cmd := exec.Command(exe, "-test.run=^TestSoakChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), soakChildEnv+"="+string(js))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		stdin, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		readers.Go(func() {
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) == 0 {
					continue
				}
				mu.Lock()
				switch f[0] {
				case "ids":
					h, _ := strconv.Atoi(f[1])
					for _, x := range f[2:] {
						id, _ := strconv.ParseInt(x, 10, 64)
						recs = append(recs, rec{id, inc*perProc + h})
					}
				case "refused":
					refused++
				case "reqs":
					n, _ := strconv.ParseInt(f[1], 10, 64)
					ms, _ := strconv.ParseInt(f[2], 10, 64)
					reqs[inc] = [2]int64{n, ms}
				case "fatal":
					fatal++
					t.Errorf("child: %s", sc.Text())
				}
				mu.Unlock()
			}
		})
		c := &child{cmd: cmd, stdin: stdin}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return c
	}
	children := make([]*child, procs)
	for i := range children {
		children[i] = start()
	}
	kills := 0
	deadline := time.Now().Add(dur)
	for {
		gap := 300*time.Millisecond + time.Duration(prng.Int64N(int64(1200*time.Millisecond)))
		if time.Now().Add(gap).After(deadline) {
			break
		}
		time.Sleep(gap) // the kill schedule, not synchronisation
		i := prng.IntN(procs)
		children[i].cmd.Process.Kill()
		children[i].cmd.Wait()
		kills++
		children[i] = start()
	}
	time.Sleep(time.Until(deadline))
	for _, c := range children {
		c.stdin.Close()
	}
	for _, c := range children {
		done := make(chan struct{})
		go func() { c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			c.cmd.Process.Kill()
			<-done
		}
	}
	readers.Wait()

	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(recs, func(a, b rec) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	dups, shared := 0, 0
	holders := map[int]bool{}
	for i, r := range recs {
		holders[r.holder] = true
		if i == 0 {
			continue
		}
		p := recs[i-1]
		switch {
		case p.id == r.id:
			dups++
		case p.id>>12 == r.id>>12 && p.holder != r.holder:
			shared++
		}
	}
	var nreq, ms int64
	for _, v := range reqs {
		nreq += v[0]
		ms += v[1]
	}
	perHolder := 0.0
	if ms > 0 {
		perHolder = float64(nreq) / (float64(ms) / 1000) / perProc
	}
	t.Logf("soak: %d IDs from %d holders in %d processes, %d kills, %d duplicates, %d shared milliseconds, %d refused batches; "+
		"%d DynamoDB requests, %.1f per second per holder (lease 3 s, renewal every 0.5 s)",
		len(recs), len(holders), incarnations, kills, dups, shared, refused, nreq, perHolder)
	if dups != 0 || shared != 0 {
		t.Errorf("%d duplicate IDs, %d milliseconds stamped by two holders on one number", dups, shared)
	}
	if kills == 0 || len(recs) < 1000 || len(holders) < procs {
		t.Errorf("soak too thin: %d kills, %d IDs, %d holders", kills, len(recs), len(holders))
	}
}
