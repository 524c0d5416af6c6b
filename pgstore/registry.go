package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/snowfence/snowfence/lease/registry"
)

var _ registry.Store = (*Store)(nil)

// Registry returns the region registry kept in <table>_region (one row,
// id 1), shared by every region of the table: the zero Registry when no
// row was written.
func (s *Store) Registry(ctx context.Context) (registry.Registry, error) {
	if err := s.open(); err != nil {
		return registry.Registry{}, err
	}
	return s.readRegistry(ctx)
}

// SetRegistry writes next into <table>_region if the stored version is
// next.Version-1, in one statement: an insert of the row for version 1,
// an update on the version otherwise. When it changes nothing, the row is
// read again: equal to next is success (a retry, or a second copy on the
// same table), anything else registry.ErrConflict naming the version
// found.
func (s *Store) SetRegistry(ctx context.Context, next registry.Registry) error {
	return s.writeRegistry(ctx, next, false)
}

// CreateRegistry inserts r into <table>_region if it has no row, whatever
// r's version (the insert of SetRegistry's version 1); a stored registry
// equal to r is success, any other registry.ErrConflict.
func (s *Store) CreateRegistry(ctx context.Context, r registry.Registry) error {
	return s.writeRegistry(ctx, r, true)
}

// RegistryIdentity returns "postgres system <system identifier> database
// <database> table <schema>.<table>_region": the server's system
// identifier (pg_control_system: initdb gives a new cluster a new one,
// and a physical standby keeps its primary's), the current database, and
// the schema and name of the registry's table as the server resolves them
// (search_path included).
func (s *Store) RegistryIdentity(ctx context.Context) (string, error) {
	if err := s.open(); err != nil {
		return "", err
	}
	var sysid, db, schema, table string
	if err := s.pool.QueryRow(ctx, s.queries.registryIdentity).Scan(&sysid, &db, &schema, &table); err != nil {
		return "", fmt.Errorf("pgstore: read where the region registry of %s is: %w", s.name, s.schemaErr(err))
	}
	return fmt.Sprintf("postgres system %s database %s table %s.%s", sysid, db, schema, table), nil
}

// writeRegistry is SetRegistry, or with create CreateRegistry.
func (s *Store) writeRegistry(ctx context.Context, next registry.Registry, create bool) error {
	if err := s.open(); err != nil {
		return err
	}
	body, err := registry.Encode(next)
	if err != nil {
		return fmt.Errorf("pgstore: write the region registry: %w", err)
	}
	stmt := s.queries.registrySet
	if create || next.Version == 1 {
		stmt = s.queries.registryInit
	}
	var version int64
	err = s.pool.QueryRow(ctx, stmt, next.Version, string(body)).Scan(&version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		cur, rerr := s.readRegistry(ctx)
		if rerr != nil {
			return fmt.Errorf("%w: %s%s is no longer at version %d, and reading it failed: %v", registry.ErrConflict, s.name, registrySuffix, next.Version-1, rerr)
		}
		if create {
			return registry.CreateConflict(s.name+registrySuffix, cur, next)
		}
		return registry.Conflict(s.name+registrySuffix, cur, next)
	case err != nil:
		// The statement may have committed: read the row back before
		// saying so.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if cur, rerr := s.readRegistry(rctx); rerr == nil && cur.Equal(next) {
			return nil
		}
		return fmt.Errorf("pgstore: write the region registry at version %d into %s%s: %w; it may have committed: read it again",
			next.Version, s.name, registrySuffix, s.schemaErr(err))
	}
	s.log.Warn("wrote the region registry", "version", version, "regions", len(next.Regions))
	return nil
}

// readRegistry reads the registry's row; none is the zero Registry.
func (s *Store) readRegistry(ctx context.Context) (registry.Registry, error) {
	var version int64
	var body string
	err := s.pool.QueryRow(ctx, s.queries.registry).Scan(&version, &body)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return registry.Registry{}, nil
	case err != nil:
		return registry.Registry{}, fmt.Errorf("pgstore: read the region registry of %s: %w", s.name, s.schemaErr(err))
	}
	r, err := registry.Decode([]byte(body))
	if err == nil && r.Version != version {
		err = fmt.Errorf("its body is at version %d, its version column at %d", r.Version, version)
	}
	if err != nil {
		return registry.Registry{}, fmt.Errorf("pgstore: the row of %s%s holds %q: %v (was it written by hand?); "+
			"put back the row of another region's copy of the registry (snowfence regions list there), or delete the row if no registry was ever meant to be here",
			s.name, registrySuffix, body, err)
	}
	return r, nil
}
