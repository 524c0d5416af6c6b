package registry

import (
	"errors"
	"fmt"
)

// Every copy of the registry resolves every region, so a holder given
// another region's store would lease that region's machine numbers in a
// second store, independently of the first, and the two could issue the
// same IDs. So a region records its home (Region.Home): the copy whose
// store its holders lease from; and a holder, having resolved its region
// from its own store's copy, compares its own store's identity
// (Store.RegistryIdentity) with the one the registry records for
// that copy (CheckHome).

// ErrWrongHome: a holder was started in a region on a store that is not
// the region's home. The error is a *HomeError.
var ErrWrongHome = errors.New("lease: the lease store is not the region's home")

// A HomeError is ErrWrongHome with what was found.
type HomeError struct {
	// Region is the region the holder was started in.
	Region Region
	// Identity is the identity the holder's own store reports.
	Identity string
	// Recorded is the identity the registry records for the region's home
	// copy (Region.Home); empty if it records none.
	Recorded string
}

func (e *HomeError) Error() string {
	if e.Recorded == "" {
		return fmt.Sprintf("%v: region %s (number %d) leases from copy %s, but the registry records no identity for that copy, so this store (%s) cannot be checked against it: "+
			"run any registry change naming every copy (snowfence regions sync), which records the identities, then start the holder again",
			ErrWrongHome, e.Region.Name, e.Region.Number, e.Region.Home, e.Identity)
	}
	return fmt.Sprintf("%v: region %s (number %d) leases from copy %s (%s), but this holder's store is %s: "+
		"its machine numbers would be leased in two stores independently and IDs could repeat. "+
		"Start the holder with the store flags of the region's own store (copy %s, as snowfence regions list shows it); "+
		"a region cannot be moved to another store yet (no command records a new home)",
		ErrWrongHome, e.Region.Name, e.Region.Number, e.Region.Home, e.Recorded, e.Identity, e.Region.Home)
}

// Unwrap returns ErrWrongHome.
func (e *HomeError) Unwrap() error { return ErrWrongHome }

// CheckHome refuses, with a *HomeError, a holder in region (as reg, read
// from the holder's own store, resolves it) whose own store's identity
// (ownIdentity, from its RegistryIdentity) is not the one reg records for
// the region's home copy. A region with no home recorded (Home empty) is
// not checked.
func CheckHome(reg Registry, region Region, ownIdentity string) error {
	if region.Home == "" {
		return nil
	}
	rec, _ := reg.identityOf(region.Home)
	if rec == "" || rec != ownIdentity {
		return &HomeError{Region: region, Identity: ownIdentity, Recorded: rec}
	}
	return nil
}
