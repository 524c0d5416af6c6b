package registry

import (
	"encoding/json"
	"fmt"
	"slices"
)

// A store keeps its copy of the registry as the JSON of Registry,
// {"version": 2, "regions": [{"name": "eu-west-1", "number": 0,
// "created_ms": 1767225600000, "home": "etcd://10.0.1.5:2379/snowfence"},
// …], "copies": […], "copy_identities":
// […], "schedule":
// "v1,v2@2031-01-01T00:00:00Z"}, beside whatever it compares the
// version on (an etcd revision, a version column, a version attribute).
// Encode and Decode are that form, the same in every
// store.

// Check returns ErrInvalid unless r is a registry a change can
// have written: version 1 or more, regions in increasing number order with
// numbers and names used once, every name a valid one (CheckRegionName),
// no time negative where 0 means unset (RetiredMs), and the fleet
// schedule, if recorded, in its canonical text (CanonicalSchedule), and
// every region's Home, if recorded, one of the copies. A body written
// before the registry kept the schedule has none and decodes with Schedule
// empty; one written before regions had homes decodes with every Home
// empty.
func Check(r Registry) error {
	if r.Version < 1 {
		return fmt.Errorf("%w: region registry version %d: a written registry is at version 1 or more", ErrInvalid, r.Version)
	}
	names := make(map[string]bool, len(r.Regions))
	for i, g := range r.Regions {
		if err := CheckRegionName(g.Name); err != nil {
			return err
		}
		switch {
		case g.Number < 0:
			return fmt.Errorf("%w: region %s has the negative number %d", ErrInvalid, g.Name, g.Number)
		case i > 0 && g.Number <= r.Regions[i-1].Number:
			return fmt.Errorf("%w: region %s (number %d) after region %s (number %d): regions are kept in increasing number order, each number once",
				ErrInvalid, g.Name, g.Number, r.Regions[i-1].Name, r.Regions[i-1].Number)
		case names[g.Name]:
			return fmt.Errorf("%w: region name %s is used twice", ErrInvalid, g.Name)
		case g.RetiredMs < 0:
			return fmt.Errorf("%w: region %s has the negative retirement time %d ms", ErrInvalid, g.Name, g.RetiredMs)
		}
		names[g.Name] = true
	}
	if r.Schedule != "" {
		canon, err := CanonicalSchedule(r.Schedule)
		switch {
		case err != nil:
			return fmt.Errorf("%w: the registry's fleet schedule %q: %v", ErrInvalid, r.Schedule, err)
		case canon != r.Schedule:
			return fmt.Errorf("%w: the registry's fleet schedule %q is not in canonical form (%q)", ErrInvalid, r.Schedule, canon)
		}
	}
	for i, c := range r.Copies {
		if c == "" || (i > 0 && c <= r.Copies[i-1]) {
			return fmt.Errorf("%w: the registry's copies %q: each named once, in name order", ErrInvalid, r.Copies)
		}
	}
	if len(r.CopyIdentities) > 0 {
		if len(r.CopyIdentities) != len(r.Copies) {
			return fmt.Errorf("%w: the registry records %d copies and %d copy identities: one identity for each copy", ErrInvalid, len(r.Copies), len(r.CopyIdentities))
		}
		ids := make(map[string]bool, len(r.CopyIdentities))
		for _, id := range r.CopyIdentities {
			if id == "" || ids[id] {
				return fmt.Errorf("%w: the registry's copy identities %q: each copy has its own, none empty", ErrInvalid, r.CopyIdentities)
			}
			ids[id] = true
		}
	}
	for _, g := range r.Regions {
		if g.Home != "" && !slices.Contains(r.Copies, g.Home) {
			return fmt.Errorf("%w: region %s's home %q is not a copy of the registry (%q): a home names the copy whose store the region leases from", ErrInvalid, g.Name, g.Home, r.Copies)
		}
	}
	return nil
}

// Encode returns the JSON a store keeps for r, or ErrInvalid if r
// fails Check: no store writes a registry a change cannot have
// made.
func Encode(r Registry) ([]byte, error) {
	if err := Check(r); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// Decode parses a stored registry (Encode's JSON). A body
// that is not JSON of a Registry, or one that fails Check, is an
// error, never an empty registry: the caller says where the body was and
// what to do.
func Decode(body []byte) (Registry, error) {
	var r Registry
	if err := json.Unmarshal(body, &r); err != nil {
		return Registry{}, fmt.Errorf("not a region registry: %v", err)
	}
	if err := Check(r); err != nil {
		return Registry{}, fmt.Errorf("not a region registry a change can have written: %v", err)
	}
	return r, nil
}
