package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise
// the module version from the build info is used.
var version = ""

func runVersion(_ context.Context, e env, args []string) error {
	if len(args) != 0 {
		return usagef("takes no arguments")
	}
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	_, err := fmt.Fprintf(e.stdout, "snowfence %s %s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
