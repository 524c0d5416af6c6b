package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockPath is the file whose lock one run of the suite holds on a machine.
// Two runs cannot share one: each begins by deleting the network
// namespaces a crashed run left (the other's live ones among them), and
// their namespaces' links take the same private addresses.
var lockPath = filepath.Join(os.TempDir(), "snowfence-chaos.lock")

// errBusy is returned when another run holds the lock.
var errBusy = errors.New("another snowfence-chaos run is in progress on this machine")

// lockMachine takes the machine's lock for this run, or fails with errBusy
// naming the run that holds it. The lock goes with the process (a run
// killed with SIGKILL leaves none); release closes it.
func lockMachine() (release func(), err error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos lock %s: %w", lockPath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(lockPath)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (pid %s, lock %s): its network namespaces and addresses would collide with this one's; wait for it to end",
				errBusy, strings.TrimSpace(string(holder)), lockPath)
		}
		return nil, fmt.Errorf("chaos lock %s: %w", lockPath, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { f.Close() }, nil
}
