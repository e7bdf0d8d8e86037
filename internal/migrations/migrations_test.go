package migrations_test

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/migrations"
)

func TestLoadOrdersByVersionWithGaps(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0011_b.sql": {Data: []byte("B")},
		"m/0002_a.sql": {Data: []byte("A")},
		"m/README.md":  {Data: []byte("not a migration")},
	}
	got, err := migrations.Load("test", fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := []migrations.Migration{{2, "0002_a.sql", "A"}, {11, "0011_b.sql", "B"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
}

func TestLoadRefusesBadAndDuplicateVersions(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no number": {"m/x_a.sql": {}},
		"duplicate": {"m/0003_a.sql": {}, "m/3_b.sql": {}},
	} {
		if _, err := migrations.Load("test", fsys, "m"); err == nil {
			t.Errorf("%s: Load accepted it", name)
		}
	}
}

func TestCheckApplied(t *testing.T) {
	want := []migrations.Migration{{Version: 1}, {Version: 7}}
	if err := migrations.CheckApplied("test", want, []int{7, 1, 99}); err != nil {
		t.Errorf("all applied: %v", err)
	}
	err := migrations.CheckApplied("test", want, []int{1})
	if !fault.Is(fault.Unavailable, err) || fault.MessageOf(err) != "test: 1 of 2 migrations applied" {
		t.Errorf("one missing: %v", err)
	}
}
