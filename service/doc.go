// Package service runs a snowfence holder that serves HTTP, with the
// lifecycle "snowfence serve" has, for a Go program that embeds it: open the
// lease store (package node's Openers), resolve the region from the store's
// region registry, start the keeper — which checks the region, its home
// store and the fleet schedule itself, and claims its machine number in the
// background — and the generator, serve the HTTP API (package server,
// behind the mutual TLS and quotas of package perimeter), and on shutdown
// drain the requests in flight and release the number at the generator's
// last issued mark.
//
// It is shaped like net/http's Server:
//
//	svc, err := service.New(ctx, service.Config{
//		Node: node.Config{Open: node.Postgres(url, pgstore.Config{}), Keeper: lease.KeeperConfig{Range: &lease.Range{Lo: 0, Hi: 99}}},
//	})
//	go svc.Serve(apiListener, adminListener) // adminListener may be nil
//	<-stop
//	svc.Shutdown(ctx) // drain within ctx, then release
//
// New returns before the keeper holds a number: the service answers 503
// "starting" (reason "starting", or "no-free-number" while every number of
// its range is held and it waits as a spare) until its first grant has
// started, then issues; Ready and Waiting tell the owner which. A first
// claim refused for good (a schedule other than the fleet's) or a failed
// embedded etcd closes Done, and the owner shuts the service down and
// reports Err. Liveness: /healthz and /readyz answer 503 while the holder
// does not issue, a waiting spare included, so a liveness probe should not
// use them (an orchestrator would kill the spare): /livez is the liveness
// probe's, 200 through every refusal that clears on its own and 503 only
// when the lease keeper's loop is wedged.
//
// The package sits above node (the store, keeper and generator) and server
// (the HTTP handler), which know nothing of it: node stays usable without
// HTTP, and server without a lease store.
//
// service.go holds Config, Service and its lifecycle; region.go resolves
// the region from the holder's own store; regionnames.go keeps decode's
// region names fresh; drain.go closes connections that never sent a
// request at shutdown; connlimit.go, connlisten.go and connrefuse.go cap the
// listeners' connections within the process's file-descriptor budget
// (Config.MaxConns, MaxConnsPerPeer), so that no flood of callers takes the
// lease store's descriptors; accepterrors.go rides out a failing accept.
package service
