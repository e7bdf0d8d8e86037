package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/postgres"
	"github.com/latchkey/latchkey/store/storetest"
)

// dsn returns the test database's DSN, skipping the test when none is
// configured (CI sets PLATFORM_POSTGRES_DSN and fails on skips).
func dsn(t testing.TB) string {
	t.Helper()
	d := os.Getenv("PLATFORM_POSTGRES_DSN")
	if d == "" {
		t.Skip("PLATFORM_POSTGRES_DSN not set")
	}
	return d
}

// freshSchema names a schema no other test uses and drops it, with
// everything in it, when the test ends (after the stores' Close, which the
// caller registers later and so runs first).
func freshSchema(t testing.TB) string {
	t.Helper()
	d := dsn(t)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "lk_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		// t.Context is already cancelled in cleanups.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, d)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return schema
}

func open(t *testing.T, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: schema, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	dsn(t)
	storetest.Run(t, func(t *testing.T) storetest.Store {
		return open(t, freshSchema(t))
	})
}

// TestTwoProcessesKeepOneChain opens two Stores (two pools, as two server
// processes would) on one schema and appends to the same tenants from both
// at once: each tenant's chain must still be whole, gap-free and unforked.
func TestTwoProcessesKeepOneChain(t *testing.T) {
	schema := freshSchema(t)
	a, b := open(t, schema), open(t, schema)
	t.Cleanup(func() { a.Close(); b.Close() })

	tenants := []string{identity.NewGUID(), identity.NewGUID()}
	const writersPerStore, batches = 4, 15
	var wg sync.WaitGroup
	for _, s := range []*postgres.Store{a, b} {
		for w := range writersPerStore {
			wg.Go(func() {
				for i := range batches {
					// Both tenants in one call, in an order that differs by
					// writer, so lock ordering across tenants is exercised.
					x, y := tenants[0], tenants[1]
					if (w+i)%2 == 1 {
						x, y = y, x
					}
					recs := []*audit.Record{storetest.NewRecord(x, i), storetest.NewRecord(y, i), storetest.NewRecord(x, i+1)}
					if err := s.AppendAuditRecords(t.Context(), recs); err != nil {
						t.Errorf("append: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	total := 0
	for _, tn := range tenants {
		for _, s := range []*postgres.Store{a, b} {
			got, err := s.ListAuditRecords(t.Context(), tn, 0, 10000)
			if err != nil {
				t.Fatal(err)
			}
			storetest.CheckChain(t, got)
			if s == a {
				total += len(got)
			}
		}
	}
	if want := 2 * writersPerStore * batches * 3; total != want {
		t.Errorf("%d records in all, want %d", total, want)
	}
}

// TestConcurrentOpensMigrateOnce starts several Opens on one new schema at
// the same moment, as several processes booting together would: all must
// succeed, and each migration must be recorded once.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	schema := freshSchema(t)
	const n = 6
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			stores[i], errs[i] = postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: schema, MaxConns: 2})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	cfg, err := pgx.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	// Every embedded migration, each recorded once. Numbers are reserved per
	// area, so a branch may have gaps (1..5 and 11): take them from the files.
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) < 3 {
		t.Fatalf("migration files %v: %v", files, err)
	}
	want := make([]int, 0, len(files))
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(f), "_", 2)[0])
		if err != nil {
			t.Fatalf("migration file %s: %v", f, err)
		}
		want = append(want, v)
	}
	slices.Sort(want)
	if d := cmp.Diff(want, versions); d != "" {
		t.Errorf("schema_migrations (-want +got):\n%s", d)
	}
	// Reopening an up-to-date schema applies nothing and keeps the data.
	tn := storetest.NewTenant("ACME000001")
	if err := stores[0].CreateTenant(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	again := open(t, schema)
	defer again.Close()
	if _, err := again.GetTenant(t.Context(), tn.ID); err != nil {
		t.Errorf("tenant lost across reopen: %v", err)
	}
}

// TestTimesAreUTCMicroseconds pins the time contract the conformance
// suite relies on: a nanosecond time in another zone comes back as the
// same instant truncated to the microsecond, in UTC.
func TestTimesAreUTCMicroseconds(t *testing.T) {
	s := open(t, freshSchema(t))
	defer s.Close()
	zone := time.FixedZone("UTC+5", 5*3600)
	in := time.Date(2026, 3, 4, 10, 6, 7, 123456789, zone)
	tn := storetest.NewTenant("ACME000001")
	tn.CreatedAt = in
	if err := s.CreateTenant(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTenant(t.Context(), tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := in.Truncate(time.Microsecond).UTC()
	if got.CreatedAt != want { // == also compares the location
		t.Errorf("CreatedAt = %v, want %v", got.CreatedAt, want)
	}
}

// TestAuditMetaKeepsAnyString checks that meta is stored as json, not
// jsonb: a NUL character in a meta string must not stop a record from
// being stored, and the chain must verify after the round trip.
func TestAuditMetaKeepsAnyString(t *testing.T) {
	s := open(t, freshSchema(t))
	defer s.Close()
	tenant := identity.NewGUID()
	r := storetest.NewRecord(tenant, 1)
	r.Meta["odd"] = "a\x00b\u2028c"
	r.Meta["big"] = 1e21
	if err := s.AppendAuditRecords(t.Context(), []*audit.Record{r}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListAuditRecords(t.Context(), tenant, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	storetest.CheckChain(t, got)
	if len(got) != 1 || got[0].Meta["odd"] != "a\x00b\u2028c" {
		t.Errorf("meta = %#v", got)
	}
}

// TestErrorsMapToFaultKinds checks kinds the conformance suite does not
// reach: a cancelled context is Unavailable and text PostgreSQL cannot
// store is Invalid, not Internal; a bad DSN is Invalid.
func TestErrorsMapToFaultKinds(t *testing.T) {
	s := open(t, freshSchema(t))
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.GetTenant(ctx, identity.NewGUID())
	if !fault.Is(fault.Unavailable, err) {
		t.Errorf("cancelled GetTenant: %v, want kind %v", err, fault.Unavailable)
	}
	u := identity.User{ID: identity.NewObjectID(), TenantID: identity.NewGUID(), Name: "nul\x00name", CreatedAt: storetest.Epoch}
	if err := s.CreateUser(t.Context(), u); !fault.Is(fault.Invalid, err) {
		t.Errorf("NUL in a text column: %v, want kind %v", err, fault.Invalid)
	}
	if _, err := postgres.Open(t.Context(), "postgres://%zz", postgres.Options{}); !fault.Is(fault.Invalid, err) {
		t.Errorf("bad DSN: %v, want kind %v", err, fault.Invalid)
	}
}

// TestFailedAppendRollsBack checks the failure path of the two-round-trip
// append (BEGIN folded into the first batch, COMMIT into the second): an
// event whose user id PostgreSQL cannot store fails in the second batch,
// after the head row was locked; nothing of it stays, the head is not
// advanced, and with one connection in the pool the next append (which
// must get that connection back, out of any transaction) takes seq 1.
func TestFailedAppendRollsBack(t *testing.T) {
	s, err := postgres.Open(t.Context(), dsn(t), postgres.Options{Schema: freshSchema(t), MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tenant := identity.NewGUID()
	ev := func(user string) *events.Event {
		at := storetest.Epoch
		return &events.Event{TenantID: tenant, TypeID: "10001", Time: at, ReceivedAt: at, UserIDs: []string{user},
			Body: []byte(`{"event_type_id":"10001","end_user":{"id":"u"},"timestamp":"` + at.Format(events.TimeLayout) + `"}`)}
	}
	if err := s.AppendEvents(t.Context(), []*events.Event{ev("ok"), ev("nul\x00user")}); !fault.Is(fault.Invalid, err) {
		t.Fatalf("append with a NUL user id: %v, want kind %v", err, fault.Invalid)
	}
	good := ev("ok")
	if err := s.AppendEvents(t.Context(), []*events.Event{good}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListEventsAfter(t.Context(), tenant, 0, nil, time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if good.Seq != 1 || len(got) != 1 || got[0].ID != good.ID {
		t.Errorf("after a failed append: seq %d, log %v; want only the next event, at seq 1", good.Seq, got)
	}
}

// BenchmarkAppendAuditRecords measures appends of one record and of a
// group-committed batch of 32, for one tenant (the serialised case) and
// spread over many tenants (the parallel case).
func BenchmarkAppendAuditRecords(b *testing.B) {
	for _, bc := range []struct {
		name    string
		batch   int
		tenants int
	}{{"1rec/1tenant", 1, 1}, {"32recs/1tenant", 32, 1}, {"1rec/64tenants", 1, 64}} {
		b.Run(bc.name, func(b *testing.B) {
			schema := freshSchema(b)
			s, err := postgres.Open(b.Context(), dsn(b), postgres.Options{Schema: schema, MaxConns: 16})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			tenants := make([]string, bc.tenants)
			for i := range tenants {
				tenants[i] = identity.NewGUID()
			}
			b.SetParallelism(4)
			b.ResetTimer()
			var n sync.Mutex
			next := 0
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n.Lock()
					tn := tenants[next%len(tenants)]
					next++
					n.Unlock()
					recs := make([]*audit.Record, bc.batch)
					for i := range recs {
						recs[i] = storetest.NewRecord(tn, i)
					}
					if err := s.AppendAuditRecords(b.Context(), recs); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*bc.batch)/b.Elapsed().Seconds(), "recs/s")
		})
	}
}
