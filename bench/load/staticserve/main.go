// Command staticserve runs the snowfence HTTP service (package server) on a
// generator with a machine number assigned by hand (snowfence.Static) and no
// lease store, for load tests on loopback until `snowfence serve` is used
// instead (bench/load/run.sh takes either through SNOWFENCE_SERVE_CMD).
//
// It listens on loopback only and exits after -max-lifetime.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/snowfence/snowfence/bench/load/internal/loopback"
	"github.com/snowfence/snowfence/bench/load/internal/profile"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "loopback address to listen on")
	machine := flag.Int("machine", 1, "machine number (v1: 0..1023)")
	policy := flag.String("clock-policy", "warn", "clock policy: require, warn or off")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	tracePath := flag.String("trace", "", "write an execution trace of the whole run to this file")
	life := flag.Duration("max-lifetime", 10*time.Minute, "exit after this long (at most 1h)")
	flag.Parse()
	stopProfile, err := profile.Start(*cpuProfile, *tracePath)
	if err != nil {
		log.Fatal(err)
	}
	err = run(*addr, *machine, *policy, min(*life, time.Hour))
	stopProfile()
	if err != nil {
		log.Fatal(err)
	}
}

func run(addr string, machine int, policy string, life time.Duration) error {
	if err := loopback.Check("staticserve", addr); err != nil {
		return err
	}
	cp, err := snowfence.ParseClockPolicy(policy)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gen, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(machine, 0), ClockPolicy: cp, Logger: logger})
	if err != nil {
		return err
	}
	defer gen.Close()
	s, err := server.New(server.Config{Generator: gen, Logger: logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, life)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		s.SetDraining()
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "staticserve: machine %d on http://%s\n", machine, ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-done
	return nil
}
