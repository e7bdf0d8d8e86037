package bench_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/sqlite"
)

// eventsSchemaVersion names the cached seed databases; bump it when the
// events schema or the seeded rows change.
const eventsSchemaVersion = "events-v1"

// eventBody is the normalised body of the i-th seeded or posted event:
// ten types, four segments, 1000 users.
func eventBody(i int, at time.Time) (typeID, user, body string) {
	typeID = fmt.Sprintf("1000%d", i%10)
	user = fmt.Sprintf("user-%d", i%1000)
	seg := []string{"gold", "silver", "bronze", "blue"}[(i/10)%4]
	body = fmt.Sprintf(`{"count":%d,"end_user":{"id":%q,"segment":%q},"event_type_id":%q,"timestamp":%q}`, i, user, seg, typeID, at.UTC().Format(events.TimeLayout))
	return
}

// eventsEnv is newEnv plus an OAuth client of the root tenant holding both
// events scopes, and its access token.
func newEventsBenchEnv(b *testing.B) (*env, string) {
	b.Helper()
	e := newEnv(b, identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1})
	ctx := context.Background()
	c, secret, err := e.p.Identity.CreateOAuthClient(ctx, e.admin, e.root.ID, "bench", []string{identity.ScopeEventProducer, identity.ScopeEventConsumer}, "")
	if err != nil {
		b.Fatal(err)
	}
	resp, err := postForm(e.client, e.srv.URL+"/oauth/v1/token", map[string][]string{"grant_type": {"client_credentials"}, "client_id": {c.ID}, "client_secret": {secret}})
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := jsonDecode(resp, &tok); err != nil || tok.AccessToken == "" {
		b.Fatalf("token: %v", err)
	}
	return e, tok.AccessToken
}

// postBody is a post of n events, numbered from first.
func postBody(first, n int) []byte {
	var buf bytes.Buffer
	buf.WriteString("{")
	for i := range n {
		if i > 0 {
			buf.WriteString(",")
		}
		_, _, body := eventBody(first+i, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(first+i)*time.Second))
		fmt.Fprintf(&buf, `"e%d":%s`, i, body)
	}
	buf.WriteString("}")
	return buf.Bytes()
}

func doPost(b *testing.B, c *http.Client, url, token string, body []byte) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	drain(b, resp, err)
}

// BenchmarkEventsPost100 is P3: POST /events/v1/events with 100 events per
// request (HTTP on loopback, validation, group-commit ingest, audit record,
// SQLite synchronous=FULL), against "raw": the same rows inserted with
// prepared statements into the same schema, 100 per transaction, in the
// same run. Compare events/s.
func BenchmarkEventsPost100(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		ctx := context.Background()
		path := filepath.Join(b.TempDir(), "raw.db")
		st, err := sqlite.Open(ctx, path, sqlite.Options{}) // creates the schema
		if err != nil {
			b.Fatal(err)
		}
		st.Close()
		db := openRaw(b, path, "FULL")
		tenant := identity.NewGUID()
		b.ResetTimer()
		seq := 0
		for i := range b.N {
			tx, err := db.Begin()
			if err != nil {
				b.Fatal(err)
			}
			insertRaw(b, tx, tenant, &seq, i*100, 100)
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("http", func(b *testing.B) {
		e, tok := newEventsBenchEnv(b)
		benchPost100(b, e, tok)
	})
}

// benchPost100 posts bodies of 100 events, one request at a time, to e's
// events route and reports events/s; the SQLite and PostgreSQL P3
// benchmarks share it.
func benchPost100(b *testing.B, e *env, tok string) {
	url := e.srv.URL + "/events/v1/events"
	bodies := make([][]byte, 16)
	for i := range bodies {
		bodies[i] = postBody(i*100, 100)
	}
	b.ResetTimer()
	for i := range b.N {
		doPost(b, e.client, url, tok, bodies[i%len(bodies)])
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkEventsPostSingle64 is P3's second half: single-event posts from
// 64 parallel clients; group commit gathers them into few transactions.
func BenchmarkEventsPostSingle64(b *testing.B) {
	e, tok := newEventsBenchEnv(b)
	benchPostSingle64(b, e, tok)
}

// benchPostSingle64 posts single events from 64 parallel clients to e's
// events route and reports events/s and posts per ingest commit.
func benchPostSingle64(b *testing.B, e *env, tok string) {
	url := e.srv.URL + "/events/v1/events"
	var n atomic.Int64
	b.SetParallelism(max(1, 64/max(1, runtimeProcs())))
	b.ResetTimer()
	before := e.p.Events.IngestStats()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			doPost(b, e.client, url, tok, postBody(int(n.Add(1)), 1))
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	reportBatches(b, before, e.p.Events.IngestStats())
}

// reportBatches reports the mean number of posts per ingest transaction
// (the group-commit size) between two snapshots.
func reportBatches(b *testing.B, before, after events.IngestStats) {
	if n := after.Batches - before.Batches; n > 0 {
		b.ReportMetric(float64(after.Requests-before.Requests)/float64(n), "posts/commit")
	}
}

// openRaw opens a plain connection to a store's file.
func openRaw(b *testing.B, path, sync string) *sql.DB {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	return db
}

// insertRaw inserts n events (and their user rows) numbered from first
// into tenant's log in tx, and advances the head.
func insertRaw(b *testing.B, tx *sql.Tx, tenant string, seq *int, first, n int) {
	ins, err := tx.Prepare(`INSERT INTO events (tenant_id, seq, id, type_id, occurred_at, received_at, user_ids, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	insU, err := tx.Prepare(`INSERT INTO event_users (tenant_id, user_id, seq) VALUES (?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer insU.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := first; i < first+n; i++ {
		*seq++
		at := start.Add(time.Duration(i) * time.Second)
		typeID, user, body := eventBody(i, at)
		if _, err := ins.Exec(tenant, *seq, identity.NewGUID(), typeID, at.Format(events.TimeLayout), at.UnixMicro(), `["`+user+`"]`, body); err != nil {
			b.Fatal(err)
		}
		if _, err := insU.Exec(tenant, user, *seq); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := tx.Exec(`INSERT INTO event_heads (tenant_id, seq) VALUES (?, ?) ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq`, tenant, *seq); err != nil {
		b.Fatal(err)
	}
}

// seededEvents returns the path of a SQLite store holding n events of one
// tenant (and the tenant id), built once and cached under os.TempDir keyed
// by eventsSchemaVersion and n, so reruns skip the seeding.
func seededEvents(b *testing.B, n int) (string, string) {
	return seededLog(b, eventsSchemaVersion, "6f1d2c3b-0000-4000-8000-00000000e001", n)
}

// seededLog builds (once) and returns the path of a SQLite store whose
// tenant holds n events made by insertRaw, 50 000 per transaction with
// synchronous=OFF, cached under os.TempDir as <version>-<n>.db.
func seededLog(b *testing.B, version, tenant string, n int) (string, string) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "latchkey-bench")
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.db", version, n))
	if _, err := os.Stat(path); err == nil {
		return path, tenant
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	tmp := path + ".seeding"
	os.Remove(tmp)
	st, err := sqlite.Open(context.Background(), tmp, sqlite.Options{Synchronous: "OFF"})
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	db := openRaw(b, tmp, "OFF")
	seq := 0
	for first := 0; first < n; first += 50_000 {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		insertRaw(b, tx, tenant, &seq, first, min(50_000, n-first))
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	db.Close()
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	os.Remove(tmp + "-wal")
	os.Remove(tmp + "-shm")
	return path, tenant
}

// BenchmarkEventsQuery is P4: a page of 20 with a filter on an indexed
// column and a body attribute, through events.Service.Query (parse,
// compile, page and capped count) on SQLite, at 10k and 1M events in the
// tenant. The audit sink discards (the audit write is measured by P1/P2's
// recorder; here it would only add group-commit latency). Reports p50 and
// p99 per query.
func BenchmarkEventsQuery(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			path, tenant := seededEvents(b, n)
			st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			benchQuery(b, st, tenant)
		})
	}
}

// BenchmarkEventsQueryPostgres is P4 on PostgreSQL (a fresh schema of
// $PLATFORM_POSTGRES_DSN), at 10k and 200k events appended through the
// store (seedEventsPostgres, untimed; 1M would take minutes to seed on
// every run); otherwise as BenchmarkEventsQuery.
func BenchmarkEventsQueryPostgres(b *testing.B) {
	for _, n := range []int{10_000, 200_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			st := openPostgres(b)
			const tenant = "6f1d2c3b-0000-4000-8000-00000000e002"
			seedEventsPostgres(b, st, tenant, n)
			benchQuery(b, st, tenant)
		})
	}
}

// benchQuery runs b.N filtered queries of pages of 20 on tenant's log in
// st and reports the p50 and p99 of one query.
func benchQuery(b *testing.B, st events.Store, tenant string) {
	svc := events.NewService(events.Config{Store: st, Audit: discardSink{}, Clock: clock.System{}})
	b.Cleanup(svc.Close)
	by := identity.Principal{Kind: identity.KindClient, TenantID: tenant, Scopes: []string{identity.ScopeEventConsumer}}
	filters := []string{
		`event_type_id eq "10002" and end_user.segment eq "gold"`,
		`event_type_id eq "10007" and count gt 100`,
		`end_user.segment eq "silver" or event_type_id eq "10003"`,
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		p, err := svc.Query(context.Background(), by, events.QueryRequest{Filter: filters[i%len(filters)], Page: 1 + i%3, Size: 20})
		lat = append(lat, time.Since(t0))
		if err != nil || len(p.Results) != 20 {
			b.Fatalf("query: %d results, %v", len(p.Results), err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
