package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/store/sqlite"
)

func TestReadyNeedsEveryMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(t.Context()); err != nil {
		t.Fatalf("Ready after Open: %v", err)
	}
	// Another binary's database, one migration behind this one.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(t.Context()); !fault.Is(fault.Unavailable, err) {
		t.Errorf("Ready with a migration missing: %v, want Unavailable", err)
	}
	s.Close()
	if err := s.Ready(t.Context()); !fault.Is(fault.Unavailable, err) {
		t.Errorf("Ready after Close: %v, want Unavailable", err)
	}
}
