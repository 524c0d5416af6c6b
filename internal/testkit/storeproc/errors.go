package storeproc

import "errors"

// ErrMissing says a server's programs are not installed here: Debian's
// postgresql for Postgres, node and the npm cache of dynalite for
// Dynalite.
var ErrMissing = errors.New("storeproc: server programs not installed")

// ErrNotRunning says the server is stopped (or frozen) when the call needs
// it running, or running when the call needs it stopped.
var ErrNotRunning = errors.New("storeproc: server not in the state the call needs")
