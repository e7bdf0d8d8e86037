package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/migrations"
)

// Ready reports whether the database answers and every migration built
// into this binary is applied (fault.Unavailable otherwise). It runs one
// small query, for a readiness probe.
func (s *Store) Ready(ctx context.Context) error {
	want, err := migrations.Load("postgres", migrationFiles, "migrations")
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fault.E(fault.Unavailable, "postgres: the database does not answer", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fault.E(fault.Unavailable, "postgres: the database does not answer", err)
	}
	return migrations.CheckApplied("postgres", want, applied)
}
