package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/client"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/server"
)

// Example takes IDs from the real server package, here in process on a
// generator for machine 37 whose clock is fixed at 2026-09-26T12:00:00Z so
// that the output is the same every run; a program would give the URL of
// `snowfence serve`.
func Example() {
	clk := fakeclock.New(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC))
	clk.AutoAdvance(true)
	gen, _ := snowfence.New(snowfence.Config{Lease: snowfence.Static(37, 0), Clock: clk, ClockPolicy: snowfence.ClockOff})
	defer gen.Close()
	srv, _ := server.New(server.Config{Generator: gen, Registerer: prometheus.NewRegistry()})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	c, err := client.New(client.Config{Endpoints: []string{ts.URL}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	for range 3 {
		id, err := c.Next(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(id, id.Time().UTC().Format(time.RFC3339))
	}
	ids, _ := c.NextN(ctx, 2)
	fmt.Println(ids)
	// Output:
	// 97301141913751552 2026-09-26T12:00:00Z
	// 97301141913751553 2026-09-26T12:00:00Z
	// 97301141913751554 2026-09-26T12:00:00Z
	// [97301141913751555 97301141913751556]
}
