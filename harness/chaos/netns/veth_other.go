//go:build !linux

package netns

import "net/netip"

// AddVeth fails: virtual Ethernet pairs need Linux.
func (n *NS) AddVeth(host, inside string, subnet netip.Prefix) (*Veth, error) {
	if err := checkVeth(host, inside, subnet); err != nil {
		return nil, err
	}
	return nil, Available()
}

// Down fails: there is no pair.
func (v *Veth) Down() error { return Available() }

// Up fails: there is no pair.
func (v *Veth) Up() error { return Available() }

// Impair fails: there is no pair.
func (v *Veth) Impair(...string) error { return Available() }

// Clear does nothing: there is no pair.
func (v *Veth) Clear() error { return nil }

// Supports fails: there is no pair.
func (v *Veth) Supports(string) error { return Available() }

// Close does nothing: there is no pair.
func (v *Veth) Close() error { return nil }

// CleanupLinks does nothing: there are no pairs to clean up here.
func CleanupLinks(prefix string) error { return nil }
