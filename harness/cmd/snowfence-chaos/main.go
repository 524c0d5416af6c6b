package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/snowfence/snowfence/harness/chaos"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a child role or runs the suite.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == chaos.RoleEtcdMember || args[0] == chaos.RoleHolder) {
		return chaos.ChildMain(ctx, args[0], args[1:], stdin, stdout, stderr)
	}
	if err := suite(ctx, args, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "snowfence-chaos: %v\n", err)
		if err == errFailed {
			return 1
		}
		return 2
	}
	return 0
}
