package registry

import (
	"context"
	"errors"
	"fmt"
)

// A copy of the registry is given by a name its operator types, and the
// same name can reach another store (a DNS name resolving per region, an
// AWS profile or endpoint from the environment, another data directory),
// or two names one store. Then one region's copy is missing from every
// change and two regions could be handed one number. So every change reads
// each copy's identity from the store itself (Store's
// RegistryIdentity), refuses two copies of one identity, and records the
// identities beside the names (Registry.CopyIdentities), refusing a copy
// whose identity is not the one recorded for its name.

// ErrCopyIdentity: a copy of the registry is not the store the registry
// records under its name, or two copies are one store. The error is a
// *CopyIdentityError.
var ErrCopyIdentity = errors.New("lease: a copy of the region registry is not the store it names")

// A CopyIdentityError is ErrCopyIdentity with what was found.
type CopyIdentityError struct {
	// Name is the copy refused.
	Name string
	// Other is, for two copies of one identity, the other copy's name;
	// empty otherwise.
	Other string
	// Identity is the identity Name's store reports.
	Identity string
	// Recorded is, for a copy whose identity differs from the recorded
	// one, the identity the registry records for Name; empty otherwise.
	Recorded string
}

func (e *CopyIdentityError) Error() string {
	if e.Other != "" {
		return fmt.Sprintf("%v: copies %s and %s are one store (%s): each region's copy must be a store of its own; "+
			"give that store once, and every other region's store by a name that reaches it", ErrCopyIdentity, e.Other, e.Name, e.Identity)
	}
	return fmt.Sprintf("%v: copy %s is %s, but the registry records it as %s: the name now reaches another store "+
		"(another cluster or table behind the same address, endpoint or profile, or the store rebuilt or restored); "+
		"give the store recorded under that name, from a place where the name reaches it, and change nothing until it is reachable",
		ErrCopyIdentity, e.Name, e.Identity, e.Recorded)
}

// Unwrap returns ErrCopyIdentity.
func (e *CopyIdentityError) Unwrap() error { return ErrCopyIdentity }

// readIdentities reads the identity of every copy, in copies' order, and
// refuses two copies of one identity.
func readIdentities(ctx context.Context, copies []Copy) ([]string, error) {
	ids := make([]string, len(copies))
	seen := make(map[string]string, len(copies))
	for i, c := range copies {
		id, err := c.Store.RegistryIdentity(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the identity of the registry's copy %s: %w", c.Name, err)
		}
		if id == "" {
			return nil, fmt.Errorf("%w: the store of the registry's copy %s reports an empty identity", ErrInvalid, c.Name)
		}
		if other, dup := seen[id]; dup {
			return nil, &CopyIdentityError{Name: c.Name, Other: other, Identity: id}
		}
		seen[id] = c.Name
		ids[i] = id
	}
	return ids, nil
}

// checkIdentities refuses a copy whose identity (ids, parallel to names)
// is not the one r records for its name. A registry that records no
// identities (written before they were kept, or none written) refuses
// nothing; a name r does not record is left to sameCopies.
func checkIdentities(r Registry, names, ids []string) error {
	for i, name := range names {
		if rec, ok := r.identityOf(name); ok && rec != ids[i] {
			return &CopyIdentityError{Name: name, Identity: ids[i], Recorded: rec}
		}
	}
	return nil
}

// identityOf returns the identity r records for the copy called name.
func (r Registry) identityOf(name string) (string, bool) {
	if len(r.CopyIdentities) != len(r.Copies) {
		return "", false
	}
	for i, c := range r.Copies {
		if c == name {
			return r.CopyIdentities[i], true
		}
	}
	return "", false
}
