//go:build !unix

package service

// openFilesLimit is the open-files limit where the system has no
// RLIMIT_NOFILE: a budget for the connection caps of
// Config.MaxConns and MaxConnsPerPeer, which should then be set.
func openFilesLimit() (uint64, error) { return 16384, nil }
