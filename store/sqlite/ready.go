package sqlite

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/fault"
)

// embeddedVersions lists the migration versions built into this binary.
var embeddedVersions = sync.OnceValues(func() (map[int]bool, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	vs := make(map[int]bool, len(names))
	for _, name := range names {
		v, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(name, "migrations/"), "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("sqlite: migration %s: bad version", name)
		}
		vs[v] = true
	}
	return vs, nil
})

// Ready reports whether the database answers and every migration built
// into this binary is applied (fault.Unavailable otherwise). It runs one
// small query on a reader connection, for a readiness probe.
func (s *Store) Ready(ctx context.Context) error {
	want, err := embeddedVersions()
	if err != nil {
		return err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fault.E(fault.Unavailable, "sqlite: the database does not answer", err)
	}
	defer rows.Close()
	applied := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return fault.E(fault.Unavailable, "sqlite: the database does not answer", err)
		}
		if want[v] {
			applied++
		}
	}
	if err := rows.Err(); err != nil {
		return fault.E(fault.Unavailable, "sqlite: the database does not answer", err)
	}
	if applied != len(want) {
		return fault.E(fault.Unavailable, fmt.Sprintf("sqlite: %d of %d migrations applied", applied, len(want)))
	}
	return nil
}
