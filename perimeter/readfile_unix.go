//go:build unix

package perimeter

import "syscall"

// openFlags make opening a named pipe return at once instead of waiting
// for a writer, and opening a terminal take no controlling terminal.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
