package service_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/service"
)

// A service on an embedded etcd of its own (one host only), serving the API
// on one listener and health, metrics and the status page on another; it
// mints one ID over HTTP and shuts down, releasing its number.
func Example() {
	dir, err := os.MkdirTemp("", "snowfence-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	svc, err := service.New(ctx, service.Config{
		Node: node.Config{
			Open:   node.EmbeddedEtcd(embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"}, etcdstore.Config{}),
			Keeper: lease.KeeperConfig{Range: &lease.Range{Lo: 7, Hi: 7}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	api, _ := net.Listen("tcp", "127.0.0.1:0")
	admin, _ := net.Listen("tcp", "127.0.0.1:0")
	go svc.Serve(api, admin)

	select {
	case <-svc.Ready(): // the keeper holds machine 7 and its first grant has started
	case <-svc.Done():
		fmt.Println(svc.Err())
		return
	case <-time.After(time.Minute):
		fmt.Println("not ready")
		return
	}
	resp, err := http.Post("http://"+api.Addr().String()+"/v1/ids", "", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println("POST /v1/ids:", resp.Status, "machine", svc.Node().Keeper.Status().Machine)

	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fmt.Println("shutdown:", svc.Shutdown(sctx))
	// Output:
	// POST /v1/ids: 200 OK machine 7
	// shutdown: <nil>
}
