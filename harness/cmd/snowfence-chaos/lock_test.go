package main

import (
	"errors"
	"path/filepath"
	"testing"
)

// A second run on the machine is refused while the first holds the lock,
// and may start once it is released.
func TestLockMachineRefusesASecondRun(t *testing.T) {
	old := lockPath
	lockPath = filepath.Join(t.TempDir(), "chaos.lock")
	t.Cleanup(func() { lockPath = old })
	release, err := lockMachine()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockMachine(); !errors.Is(err, errBusy) {
		t.Fatalf("second run while the first holds the lock: %v, want errBusy", err)
	}
	release()
	again, err := lockMachine()
	if err != nil {
		t.Fatalf("run after the first released the lock: %v", err)
	}
	again()
}
