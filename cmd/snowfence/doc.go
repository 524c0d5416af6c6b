// Command snowfence is the ID service and the operator's tool: serve IDs over
// HTTP, decode IDs, inspect and fence machine-number leases, show and set the
// fleet's layout schedule, and read the clock's sync state. Run "snowfence
// help" for the subcommands.
//
// # Where things are
//
// One file per subcommand — serve.go (with serveflags.go, drain.go for a
// graceful stop and testclock.go for the test-only clock offset),
// decode.go, leases.go, schedule.go, clock.go, version.go — and the shared
// parts: main.go and run.go (dispatch, exit statuses), envflags.go (every
// flag's SNOWFENCE_* variable), storeflags.go (where the leases live: one
// table of the stores, their flags, timings and openers). The service
// itself is package server, the holder package node; this command only
// wires flags to them.
package main
