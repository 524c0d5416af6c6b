// Package profile lets the load-test servers write a CPU profile and an
// execution trace of a run, the same way for each, so the two can be
// compared with go tool pprof and go tool trace.
package profile

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// Start starts a CPU profile written to cpuPath and an execution trace
// written to tracePath; an empty path starts neither. The returned stop ends
// both and closes their files; call it once, before the process exits.
func Start(cpuPath, tracePath string) (stop func(), err error) {
	var files []*os.File
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
		for _, f := range files {
			f.Close()
		}
	}
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err != nil {
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		files = append(files, f)
		if err := pprof.StartCPUProfile(f); err != nil {
			stop()
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		stops = append(stops, pprof.StopCPUProfile)
	}
	if tracePath != "" {
		f, err := os.Create(tracePath)
		if err != nil {
			stop()
			return nil, fmt.Errorf("-trace: %w", err)
		}
		files = append(files, f)
		if err := trace.Start(f); err != nil {
			stop()
			return nil, fmt.Errorf("-trace: %w", err)
		}
		stops = append(stops, trace.Stop)
	}
	return stop, nil
}
