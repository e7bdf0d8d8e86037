package sqlstore_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/postgres"
	"github.com/latchkey/latchkey/store/sqlite"
	"github.com/latchkey/latchkey/store/sqlstore"
	"github.com/latchkey/latchkey/store/storetest"
)

// store is what the tests here use of a database's store.
type store interface {
	storetest.Store
	events.AuditedAppender
	Ready(ctx context.Context) error
}

// database is one database kind the shared SQL store runs on.
type database struct {
	name string
	// open returns a store on a fresh database made by load (nil: empty),
	// and a function that runs SQL on that database behind the store.
	open func(t *testing.T, load func(t *testing.T, exec func(string))) (store, func(string))
	// v11 loads the fixture written by the stores at migration 11.
	v11 func(t *testing.T, exec func(string))
	// rejectsNUL: text may not hold a NUL byte (PostgreSQL).
	rejectsNUL bool
}

// forEach runs test as a subtest on each database; PostgreSQL's skips
// unless PLATFORM_POSTGRES_DSN is set (.ci/postgres.sh fails on skips).
func forEach(t *testing.T, test func(t *testing.T, db database)) {
	for _, db := range []database{sqliteDB, postgresDB} {
		t.Run(db.name, func(t *testing.T) { test(t, db) })
	}
}

var sqliteDB = database{
	name: "sqlite",
	open: func(t *testing.T, load func(*testing.T, func(string))) (store, func(string)) {
		path := filepath.Join(t.TempDir(), "test.db")
		if load != nil {
			if err := os.WriteFile(path, gunzip(t, "v11.db.gz"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		exec := func(q string) {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		if load != nil {
			load(t, exec) // on the copied file, before Open migrates it
		}
		s, err := sqlite.Open(t.Context(), path, sqlite.Options{Synchronous: "OFF"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, exec
	},
	v11: func(*testing.T, func(string)) {}, // open copies the file
}

var postgresDB = database{
	name:       "postgres",
	rejectsNUL: true,
	open: func(t *testing.T, load func(*testing.T, func(string))) (store, func(string)) {
		dsn := os.Getenv("PLATFORM_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("PLATFORM_POSTGRES_DSN not set")
		}
		b := make([]byte, 8)
		rand.Read(b)
		schema := pgx.Identifier{"lk_test_" + hex.EncodeToString(b)}.Sanitize()
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string) {
			// No arguments: the simple protocol, which runs a script.
			if _, err := conn.Exec(context.Background(), q); err != nil {
				t.Fatal(err)
			}
		}
		exec(`CREATE SCHEMA ` + schema + `; SET search_path TO ` + schema)
		t.Cleanup(func() {
			exec(`DROP SCHEMA ` + schema + ` CASCADE`)
			conn.Close(context.Background())
		})
		if load != nil {
			load(t, exec)
		}
		s, err := postgres.Open(t.Context(), dsn, postgres.Options{Schema: schema[1 : len(schema)-1], MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, exec
	},
	v11: func(t *testing.T, exec func(string)) { exec(string(gunzip(t, "v11.sql.gz"))) },
}

// gunzip reads a gzipped file of testdata/upgrade.
func gunzip(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.ReadFile(filepath.Join("testdata", "upgrade", name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := gzip.NewReader(bytes.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadyNeedsEveryMigration(t *testing.T) {
	forEach(t, func(t *testing.T, db database) {
		s, exec := db.open(t, nil)
		if err := s.Ready(t.Context()); err != nil {
			t.Fatalf("Ready after Open: %v", err)
		}
		// Another binary's database, one migration behind this one.
		exec(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`)
		if err := s.Ready(t.Context()); !fault.Is(fault.Unavailable, err) {
			t.Errorf("Ready with a migration missing: %v, want Unavailable", err)
		}
		s.Close()
		if err := s.Ready(t.Context()); !fault.Is(fault.Unavailable, err) {
			t.Errorf("Ready after Close: %v, want Unavailable", err)
		}
	})
}

// TestAppendEventsAuditedIsAtomic checks that AppendEventsAudited stores
// the events and the records together, each with its own numbering, or,
// when any part fails (a record whose meta cannot be encoded, before the
// transaction; an event the database cannot store, inside it), neither.
func TestAppendEventsAuditedIsAtomic(t *testing.T) {
	forEach(t, func(t *testing.T, db database) {
		s, _ := db.open(t, nil)
		tenant := identity.NewGUID()
		now := storetest.Epoch
		event := func(user string) *events.Event {
			return &events.Event{TenantID: tenant, TypeID: "10001", Time: now, ReceivedAt: now, UserIDs: []string{user}, Body: []byte(`{"event_type_id":"10001"}`)}
		}
		record := func(meta map[string]any) *audit.Record {
			return &audit.Record{Time: now, TenantID: tenant, Source: audit.SourceEvents, Action: events.ActionPost, Status: audit.StatusSuccess, Meta: meta}
		}
		evs := []*events.Event{event("u"), event("u")}
		if err := s.AppendEventsAudited(t.Context(), evs, []*audit.Record{record(nil), record(nil)}); err != nil {
			t.Fatal(err)
		}
		if evs[0].Seq != 1 || evs[1].Seq != 2 || evs[1].ID == "" {
			t.Fatalf("events not numbered: %+v", evs)
		}
		bad := record(map[string]any{"x": make(chan int)})
		if err := s.AppendEventsAudited(t.Context(), []*events.Event{event("u")}, []*audit.Record{bad}); err == nil {
			t.Fatal("a record that cannot be encoded did not fail the append")
		}
		if db.rejectsNUL {
			if err := s.AppendEventsAudited(t.Context(), []*events.Event{event("nul\x00user")}, []*audit.Record{record(nil)}); !fault.Is(fault.Invalid, err) {
				t.Fatalf("an event with a NUL user id: %v, want kind %v", err, fault.Invalid)
			}
		}
		got, err := s.ListEventsAfter(t.Context(), tenant, 0, nil, time.Time{}, 10)
		if err != nil || len(got) != 2 {
			t.Fatalf("%d events after failed appends, want 2 (%v)", len(got), err)
		}
		recs, err := s.ListAuditRecords(t.Context(), tenant, 0, 10)
		if err != nil || len(recs) != 2 {
			t.Fatalf("%d audit records after failed appends, want 2 (%v)", len(recs), err)
		}
		storetest.CheckChain(t, recs)
		next := []*events.Event{event("u")}
		if err := s.AppendEventsAudited(t.Context(), next, []*audit.Record{record(nil)}); err != nil || next[0].Seq != 3 {
			t.Fatalf("next append: seq %d, %v", next[0].Seq, err)
		}
		if recs, _ := s.ListAuditRecords(t.Context(), tenant, 0, 10); len(recs) != 3 {
			t.Errorf("%d audit records, want 3", len(recs))
		} else {
			storetest.CheckChain(t, recs)
		}
	})
}

// TestScanAuditRecordsAcrossBatches exports a log whose batch rows do not
// line up with the scan's windows: a commit of more records than a window
// holds, then commits of one. Every record comes once, in order, and an
// export from a time inside the big batch starts at the first record of
// that time.
func TestScanAuditRecordsAcrossBatches(t *testing.T) {
	forEach(t, func(t *testing.T, db database) {
		s, _ := db.open(t, nil)
		ctx := t.Context()
		tenant := identity.NewGUID()
		at := func(i int) time.Time { return storetest.Epoch.Add(time.Duration(i) * time.Millisecond) }
		big := make([]*audit.Record, sqlstore.ScanChunk+200)
		for i := range big {
			big[i] = storetest.NewRecord(tenant, i)
			big[i].Time = at(i)
		}
		if err := s.AppendAuditRecords(ctx, big); err != nil {
			t.Fatal(err)
		}
		for i := len(big); i < len(big)+5; i++ {
			r := storetest.NewRecord(tenant, i)
			r.Time = at(i)
			if err := s.AppendAuditRecords(ctx, []*audit.Record{r}); err != nil {
				t.Fatal(err)
			}
		}
		scan := func(from, to time.Time) []int64 {
			t.Helper()
			var seqs []int64
			for r, err := range s.ScanAuditRecords(ctx, tenant, audit.ExportRequest{From: from, To: to}) {
				if err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, r.Seq)
			}
			return seqs
		}
		want := func(first, last int64) []int64 {
			var out []int64
			for seq := first; seq <= last; seq++ {
				out = append(out, seq)
			}
			return out
		}
		n := int64(len(big) + 5)
		for _, c := range []struct {
			name        string
			from, to    time.Time
			first, last int64
		}{
			{"all", at(-1), at(int(n)), 1, n},
			{"from inside the big batch", at(1100), at(int(n)), 1101, n},
			{"within the big batch", at(10), at(20), 11, 21},
			{"the small batches", at(len(big) + 1), at(len(big) + 3), int64(len(big) + 2), int64(len(big) + 4)},
			{"after the last record", at(int(n) + 1), at(int(n) + 5), 1, 0},
		} {
			if d := cmp.Diff(want(c.first, c.last), scan(c.from, c.to)); d != "" {
				t.Errorf("%s: seqs (-want +got):\n%s", c.name, d)
			}
		}
	})
}
