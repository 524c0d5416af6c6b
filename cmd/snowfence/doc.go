// Command snowfence is the ID service and the operator's tool: serve IDs over
// HTTP, decode IDs, say who minted an ID (from the lease journal), find
// duplicate IDs in exported data, inspect and fence machine-number leases, show and set the
// fleet's layout schedule, keep the region registry, and read the clock's
// sync state. Run "snowfence
// help" for the subcommands.
//
// # Where things are
//
// One file per subcommand — serve.go (with serveflags.go, serveperimeter.go,
// servepublicids.go, the flags it turns into a service.Config, and
// testclock.go for the test-only clock offset), decode.go, who.go (who, and the journal
// lookup dups --who shares), dups.go (the finder itself is internal/dups),
// leases.go, schedule.go,
// regions.go (with copyspec.go, the --copy SPEC of each store), clock.go,
// version.go — and the shared
// parts: main.go and run.go (dispatch, exit statuses), envflags.go (every
// flag's SNOWFENCE_* variable), storeflags.go (where the leases live: one
// table of the stores, their flags, timings and openers). serve's lifecycle
// — open the store, resolve --region, start the keeper (which claims in the
// background, as a spare while every number is held) and the generator,
// serve, drain, release — is package service, its HTTP API package server,
// the holder package node; this command only wires flags to them and says
// on stdout where it runs.
package main
