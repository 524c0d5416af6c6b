package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snowfence/snowfence"
)

// runClock prints the kernel's clock-sync state.
func runClock(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "clock")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("takes no arguments")
	}
	st, err := snowfence.KernelClockStatus()
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.Marshal(st)
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "wall clock  %s\nsync        %s\n", time.Now().UTC().Format(time.RFC3339Nano), st)
	return err
}
