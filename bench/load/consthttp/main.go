// Command consthttp is the ceiling for the snowfence load test: a net/http
// server that answers every request with a fixed JSON body the size of a
// single-ID response ({"id":"…","id_num":…} for an ID minted now), with the
// same Content-Type. Comparing its req/s with POST /v1/ids on the same core
// shows what the ID service costs beyond net/http itself.
//
// It listens on loopback only and exits after -max-lifetime.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/snowfence/snowfence/bench/load/internal/loopback"
	"github.com/snowfence/snowfence/bench/load/internal/profile"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/snowfence/snowfence"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "loopback address to listen on")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	tracePath := flag.String("trace", "", "write an execution trace of the whole run to this file")
	life := flag.Duration("max-lifetime", 10*time.Minute, "exit after this long (at most 1h)")
	flag.Parse()
	stopProfile, err := profile.Start(*cpuProfile, *tracePath)
	if err != nil {
		log.Fatal(err)
	}
	err = run(*addr, min(*life, time.Hour))
	stopProfile()
	if err != nil {
		log.Fatal(err)
	}
}

// body returns a single-ID response for an ID minted now on machine 37: the
// size the real service sends today.
func body() ([]byte, error) {
	id, err := snowfence.V1().ComposeAt(time.Now(), 0, 37, 5)
	if err != nil {
		return nil, err
	}
	s := strconv.FormatInt(int64(id), 10)
	return []byte(`{"id":"` + s + `","id_num":` + s + `}`), nil
}

func run(addr string, life time.Duration) error {
	if err := loopback.Check("consthttp", addr); err != nil {
		return err
	}
	b, err := body()
	if err != nil {
		return err
	}
	ct := []string{"application/json"}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = ct
		w.Write(b)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The same timeouts as staticserve: each costs timer work per request.
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, life)
	defer cancel()
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "consthttp: %d-byte body on http://%s\n", len(b), ln.Addr())
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
