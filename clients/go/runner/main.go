// Command runner is the Go client's conformance runner: it drives package
// client through the requests of clients/conformance/PROTOCOL.md, one JSON
// line in, one JSON line out, and holds no logic of its own beyond that
// translation.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/client"
)

// broken is the test-only fault of SNOWFENCE_CONFORMANCE_BREAK: with it
// the runner misreports what the client did, so that the driver's test
// TestDriverCatches can show each of the driver's checks failing. Empty
// (the default) changes nothing.
var broken = os.Getenv("SNOWFENCE_CONFORMANCE_BREAK")

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := bufio.NewWriter(os.Stdout)
	var c *client.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for in.Scan() {
		var req map[string]any
		start := time.Now()
		var ans map[string]any
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			ans = failure("bad_request", err)
		} else {
			ans = handle(&c, req)
		}
		ans["elapsed_ms"] = float64(time.Since(start).Nanoseconds()) / 1e6
		b, _ := json.Marshal(ans)
		out.Write(append(b, '\n'))
		out.Flush()
	}
}

func handle(c **client.Client, req map[string]any) map[string]any {
	ctx := context.Background()
	op, _ := req["op"].(string)
	if op != "open" && op != "decode" && *c == nil {
		return failure("bad_request", fmt.Errorf("%s before open", op))
	}
	switch op {
	case "open":
		if *c != nil {
			(*c).Close()
			*c = nil
		}
		cfg, err := config(req["config"])
		if err != nil {
			return failure("bad_request", err)
		}
		nc, err := client.New(cfg)
		if err != nil {
			return failure("", err)
		}
		*c = nc
		return ok()
	case "next":
		ids := []string{}
		for range num(req, "count") {
			id, err := (*c).Next(ctx)
			if err != nil {
				a := failure("", err)
				a["ids"] = ids
				return a
			}
			ids = append(ids, id.String())
		}
		return ok("ids", misreport(ids))
	case "next_n":
		got, err := (*c).NextN(ctx, num(req, "n"))
		if err != nil {
			return failure("", err)
		}
		return ok("ids", strs(got))
	case "next_concurrent":
		threads, count := num(req, "threads"), num(req, "count")
		per := make([][]snowfence.ID, threads)
		errs := make([]error, threads)
		var wg sync.WaitGroup
		for k := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range count {
					id, err := (*c).Next(ctx)
					if err != nil {
						errs[k] = err
						return
					}
					per[k] = append(per[k], id)
				}
			}()
		}
		wg.Wait()
		ids := []string{}
		for k := range threads {
			if errs[k] != nil {
				return failure("", errs[k])
			}
			ids = append(ids, strs(per[k])...)
		}
		return ok("ids", ids)
	case "run":
		d := time.Duration(num(req, "ms")) * time.Millisecond
		start := time.Now()
		var n, bad int64
		var first, prev snowfence.ID
		for {
			id, err := (*c).Next(ctx)
			if err != nil {
				return failure("", err)
			}
			if n == 0 {
				first = id
			} else if id <= prev {
				bad++
			}
			prev = id
			n++
			if n%1024 == 0 && time.Since(start) >= d {
				break
			}
		}
		return ok("count", n, "first", first.String(), "last", prev.String(), "not_increasing", bad, "elapsed_ns", time.Since(start).Nanoseconds())
	case "decode":
		text, _ := req["schedule"].(string)
		sched, err := snowfence.ParseSchedule(text)
		if err != nil {
			return failure("invalid_schedule", err)
		}
		s, _ := req["id"].(string)
		id, err := snowfence.ParseID(s)
		if err != nil {
			return failure("invalid_id", err)
		}
		d, err := sched.Decode(id)
		if err != nil {
			return failure("invalid_id", err)
		}
		var m map[string]any
		b, _ := json.Marshal(d)
		json.Unmarshal(b, &m)
		if broken == "decode" {
			m["sequence"] = float64(d.Sequence + 1)
		}
		return ok("decoded", m)
	case "close":
		err := (*c).Close()
		*c = nil
		if err != nil {
			return failure("", err)
		}
		return ok()
	}
	return failure("bad_request", fmt.Errorf("unknown op %q", op))
}

// config reads the protocol's config object into a client.Config.
func config(v any) (client.Config, error) {
	var raw map[string]json.RawMessage
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, &raw); err != nil {
		return client.Config{}, err
	}
	var cfg client.Config
	var err error
	get := func(key string, dst any) {
		if r, ok := raw[key]; ok && err == nil {
			if e := json.Unmarshal(r, dst); e != nil {
				err = fmt.Errorf("config %s: %v", key, e)
			}
		}
	}
	ms := func(key string, dst *time.Duration) {
		var n int64
		if _, ok := raw[key]; ok {
			get(key, &n)
			*dst = time.Duration(n) * time.Millisecond
		}
	}
	get("endpoints", &cfg.Endpoints)
	if cfg.Endpoints == nil {
		cfg.Endpoints = []string{}
	}
	get("health_urls", &cfg.HealthURLs)
	ms("request_timeout_ms", &cfg.RequestTimeout)
	ms("max_age_ms", &cfg.MaxAge)
	ms("refill_period_ms", &cfg.RefillPeriod)
	get("min_refill", &cfg.MinRefill)
	get("max_buffer", &cfg.MaxBuffer)
	get("low_water", &cfg.LowWater)
	get("max_attempts", &cfg.MaxAttempts)
	ms("base_backoff_ms", &cfg.BaseBackoff)
	ms("max_backoff_ms", &cfg.MaxBackoff)
	ms("max_retry_after_ms", &cfg.MaxRetryAfter)
	if broken == "retry_after" {
		cfg.MaxRetryAfter = time.Millisecond
	}
	get("failure_threshold", &cfg.FailureThreshold)
	get("recovery_probes", &cfg.RecoveryProbes)
	ms("probe_interval_ms", &cfg.ProbeInterval)
	var sched string
	get("schedule", &sched)
	if sched != "" {
		s, e := snowfence.ParseSchedule(sched)
		if e != nil {
			return cfg, e
		}
		cfg.Schedule = &s
	}
	var files struct {
		CA   string `json:"ca_file"`
		Cert string `json:"cert_file"`
		Key  string `json:"key_file"`
	}
	get("tls", &files)
	if err != nil {
		return cfg, err
	}
	if files.CA != "" {
		pem, err := os.ReadFile(files.CA)
		if err != nil {
			return cfg, err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		cfg.TLS = &tls.Config{RootCAs: pool}
		if files.Cert != "" {
			pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
			if err != nil {
				return cfg, err
			}
			cfg.TLS.Certificates = []tls.Certificate{pair}
		}
	}
	return cfg, nil
}

// misreport applies the test-only faults of SNOWFENCE_CONFORMANCE_BREAK to
// the IDs of a next answer.
func misreport(ids []string) []string {
	if len(ids) == 0 {
		return ids
	}
	switch broken {
	case "invent": // an ID no server sent
		ids[len(ids)-1] = "4194303" // machine 1023, sequence 4095, at the epoch
	case "twice": // an ID handed out twice
		ids = append(ids, ids[0])
	case "float": // IDs through a float64, as a careless JSON client reads them
		for i, id := range ids {
			v, _ := strconv.ParseInt(id, 10, 64)
			ids[i] = strconv.FormatFloat(float64(v), 'f', 0, 64)
		}
	}
	return ids
}

func num(req map[string]any, key string) int {
	f, _ := req[key].(float64)
	return int(f)
}

func strs(ids []snowfence.ID) []string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(int64(id), 10)
	}
	return s
}

func ok(kv ...any) map[string]any {
	m := map[string]any{"ok": true}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// failure is an answer for err, of kind or, when kind is empty, of the
// kind err's typed error maps to.
func failure(kind string, err error) map[string]any {
	if kind == "" && broken == "error_kind" {
		kind = "other"
	}
	if kind == "" {
		switch {
		case errors.Is(err, client.ErrUnavailable):
			kind = "unavailable"
		case errors.Is(err, client.ErrRejected):
			kind = "rejected"
		case errors.Is(err, client.ErrClosed):
			kind = "closed"
		case errors.Is(err, client.ErrInvalidConfig):
			kind = "invalid_config"
		case errors.Is(err, snowfence.ErrInvalidCount):
			kind = "invalid_count"
		default:
			kind = "other"
		}
	}
	return map[string]any{"ok": false, "error": map[string]any{"kind": kind, "message": err.Error()}}
}
