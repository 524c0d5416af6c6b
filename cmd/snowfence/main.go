// Command snowfence is the ID service and the operator's tool: serve IDs over
// HTTP, decode IDs, inspect and fence machine-number leases, show and set the
// fleet's layout schedule, and read the clock's sync state. Run "snowfence
// help" for the subcommands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
