package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/metrics"
	"github.com/snowfence/snowfence/node"
)

// A service that embeds the library registers the collector of its node's
// generator and keeper on its own registry and serves /metrics; the series
// are serve's, and ops/'s alert rules and dashboard read them unchanged.
// The node runs on an embedded etcd of its own (one host only).
func Example() {
	dir, err := os.MkdirTemp("", "snowfence-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	n, err := node.Start(ctx, node.Config{
		Open:   node.EmbeddedEtcd(embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"}, etcdstore.Config{}),
		Keeper: lease.KeeperConfig{Range: &lease.Range{Lo: 37, Hi: 37}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close(ctx)

	c, err := metrics.New(metrics.Config{Generator: n.Generator, Keeper: n.Keeper})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := prometheus.NewRegistry() // the service's own, beside its own metrics
	reg.MustRegister(c)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)
	defer hs.Close()

	if _, err := n.Generator.NextN(ctx, 3); err != nil {
		fmt.Println(err)
		return
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		for _, series := range []string{"snowfence_generator_info{", "snowfence_ids_issued_total ", `snowfence_lease_state{state="held"} `} {
			if strings.HasPrefix(sc.Text(), series) {
				fmt.Println(sc.Text())
			}
		}
	}
	// Output:
	// snowfence_generator_info{layout="v1",machine="37",region="0"} 1
	// snowfence_ids_issued_total 3
	// snowfence_lease_state{state="held"} 1
}
