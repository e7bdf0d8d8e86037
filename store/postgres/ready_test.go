package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/latchkey/latchkey/fault"
)

func TestReadyNeedsEveryMigration(t *testing.T) {
	schema := freshSchema(t)
	s := open(t, schema)
	if err := s.Ready(t.Context()); err != nil {
		t.Fatalf("Ready after Open: %v", err)
	}
	conn, err := pgx.Connect(t.Context(), dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	table := pgx.Identifier{schema, "schema_migrations"}.Sanitize()
	if _, err := conn.Exec(t.Context(), `DELETE FROM `+table+` WHERE version = (SELECT max(version) FROM `+table+`)`); err != nil {
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
