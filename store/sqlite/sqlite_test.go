package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/store/sqlite"
	"github.com/latchkey/latchkey/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		// synchronous=OFF only in tests: durability across power loss is not
		// what the suite checks, and fsyncs would dominate its run time.
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "test.db"), sqlite.Options{Synchronous: "OFF"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestReopenKeepsDataAndSkipsAppliedMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tn := storetest.NewTenant("ACME000001")
	if err := s.CreateTenant(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if _, err := s.GetTenant(t.Context(), tn.ID); err != nil {
		t.Fatalf("tenant lost across reopen: %v", err)
	}
}
