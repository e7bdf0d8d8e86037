package sqlite

import (
	"context"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/migrations"
)

// Ready reports whether the database answers and every migration built
// into this binary is applied (fault.Unavailable otherwise). It runs one
// small query on a reader connection, for a readiness probe.
func (s *Store) Ready(ctx context.Context) error {
	want, err := migrations.Load("sqlite", migrationFiles, "migrations")
	if err != nil {
		return err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fault.E(fault.Unavailable, "sqlite: the database does not answer", err)
	}
	defer rows.Close()
	var applied []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return fault.E(fault.Unavailable, "sqlite: the database does not answer", err)
		}
		applied = append(applied, v)
	}
	if err := rows.Err(); err != nil {
		return fault.E(fault.Unavailable, "sqlite: the database does not answer", err)
	}
	return migrations.CheckApplied("sqlite", want, applied)
}
