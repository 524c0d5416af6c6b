//go:build !linux

package netns

import (
	"fmt"
	"runtime"
)

// Available reports whether network namespaces can be used here: never on
// this operating system.
func Available() error {
	return fmt.Errorf("%w: %s has no network namespaces", ErrUnavailable, runtime.GOOS)
}

// New fails: network namespaces need Linux.
func New(name string) (*NS, error) {
	if err := checkName(name, false); err != nil {
		return nil, err
	}
	return nil, Available()
}

// Close does nothing: only the host namespace exists here.
func (n *NS) Close() error { return nil }

// Cleanup does nothing: there are no network namespaces to clean up here.
func Cleanup(prefix string) error { return checkName(prefix, true) }

// do fails: there is no namespace to enter.
func (n *NS) do(func() error) error { return Available() }
