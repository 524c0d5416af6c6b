package registry

import "context"

// Read reads the registry every copy holds, as a change does before
// writing: it takes the copies in the order of their names (the order
// every change writes them), reads every copy's identity and every copy,
// and refuses with ErrDiverged if the copies differ, with ErrInvalid if
// they are not the copies the registry records, and with ErrCopyIdentity
// if two are one store or one is not the store recorded under its name.
// It returns the registry (the zero Registry if none is written) and the
// copies in name order. It writes nothing: lease.ChangeFleetSchedule reads
// with it before checking every store.
func Read(ctx context.Context, copies []Copy) (Registry, []Copy, error) {
	sorted, names, err := sortedCopies(copies)
	if err != nil {
		return Registry{}, nil, err
	}
	ids, err := readIdentities(ctx, sorted)
	if err != nil {
		return Registry{}, sorted, err
	}
	reg, err := readCopies(ctx, sorted, names, ids)
	if err != nil {
		return Registry{}, sorted, err
	}
	if reg.Version > 0 {
		if err := sameCopies(reg, names); err != nil {
			return reg, sorted, err
		}
		if err := checkIdentities(reg, names, ids); err != nil {
			return reg, sorted, err
		}
	}
	return reg, sorted, nil
}
