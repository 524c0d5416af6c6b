//go:build !linux

package main

import "os"

// isTerminal reports false outside Linux: a command that would ask then
// requires --yes.
func isTerminal(*os.File) bool { return false }
