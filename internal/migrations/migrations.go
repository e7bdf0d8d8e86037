// Package migrations reads the numbered SQL migrations a SQL store embeds
// and checks that a database has applied them, so that the SQLite and
// PostgreSQL stores share one reading of "0007_notify.sql" and one
// readiness rule.
package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/fault"
)

// Migration is one embedded migration file.
type Migration struct {
	Version int    // the file name's leading number
	Name    string // the file name, e.g. "0007_notify.sql"
	SQL     string
}

// Load returns the migrations dir/*.sql of fsys in version order. Numbers
// need not be contiguous (they are reserved per area), but each must be a
// number and appear once. store names the store in errors.
func Load(store string, fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	out := make([]Migration, 0, len(names))
	for _, name := range names {
		base := path.Base(name)
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("%s: migration %s: bad version", store, name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: base, SQL: string(body)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("%s: migrations %s and %s share version %d", store, out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

// CheckApplied returns nil when every one of want is among the applied
// versions, else fault.Unavailable saying how many are: a readiness probe
// answers 503 until the migrations are in place.
func CheckApplied(store string, want []Migration, applied []int) error {
	n := 0
	for _, m := range want {
		if slices.Contains(applied, m.Version) {
			n++
		}
	}
	if n != len(want) {
		return fault.E(fault.Unavailable, fmt.Sprintf("%s: %d of %d migrations applied", store, n, len(want)))
	}
	return nil
}
