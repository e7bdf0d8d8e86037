package bench_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/postgres"
)

// openPostgres opens a PostgreSQL store on a fresh schema of the database
// at $PLATFORM_POSTGRES_DSN (skipping without it) and drops the schema at
// the end.
func openPostgres(b *testing.B) *postgres.Store {
	b.Helper()
	st, _, _ := openPostgresSchema(b)
	return st
}

// openPostgresSchema is openPostgres that also returns the DSN and the
// schema's name, for benchmarks that write to the same tables directly.
func openPostgresSchema(b *testing.B) (st *postgres.Store, dsn, schema string) {
	b.Helper()
	dsn = os.Getenv("PLATFORM_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("PLATFORM_POSTGRES_DSN not set")
	}
	r := make([]byte, 8)
	rand.Read(r)
	schema = "lk_bench_" + hex.EncodeToString(r)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			c.Close(ctx)
		}
	})
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: schema, MaxConns: 16})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st, dsn, schema
}

// envMaker makes an env on one store: newEnv (SQLite) or newEnvPostgres.
// The benchmarks with a SQLite and a PostgreSQL variant take one, so one
// body serves both stores.
type envMaker func(b *testing.B, params identity.PasswordParams, opts ...func(*latchkey.Config)) *env

// newEnvPostgres is newEnv on a fresh PostgreSQL schema (openPostgres).
func newEnvPostgres(b *testing.B, params identity.PasswordParams, opts ...func(*latchkey.Config)) *env {
	return newEnvOn(b, openPostgres(b), params, opts...)
}

// seedEventsPostgres appends n events of one tenant (the rows eventBody
// describes, event i received i seconds after seedStart) through the
// store's AppendEvents, 5000 per call, untimed.
func seedEventsPostgres(b *testing.B, st events.Store, tenant string, n int) {
	b.Helper()
	const batch = 5000
	for first := 0; first < n; first += batch {
		evs := make([]*events.Event, 0, batch)
		for i := first; i < first+batch && i < n; i++ {
			at := seedStart.Add(time.Duration(i) * time.Second)
			typeID, user, body := eventBody(i, at)
			evs = append(evs, &events.Event{TenantID: tenant, TypeID: typeID, UserIDs: []string{user}, Time: at, ReceivedAt: at, Body: []byte(body)})
		}
		if err := st.AppendEvents(context.Background(), evs); err != nil {
			b.Fatal(err)
		}
	}
}

// P1 on PostgreSQL: the token endpoint with its audit record committed to
// PostgreSQL (synchronous_commit as the server is configured), against the
// same bare ES256 handler as BenchmarkP1TokenEndpoint, in the same run.
func BenchmarkP1TokenEndpointPostgres(b *testing.B) {
	b.Run("baseline=bare-es256-handler", benchBareES256)
	b.Run("latchkey-postgres", func(b *testing.B) { benchTokenEndpoint(b, newEnvPostgres(b, identity.OWASPMinimum())) })
}

// BenchmarkAuditAppendPostgres measures audit records per second through
// the platform's recorder (the path every request's record takes: queued,
// group-committed, chained under the tenant's head lock) from 64
// concurrent recorders into one tenant, the serialised case, and spread
// over 64 tenants.
func BenchmarkAuditAppendPostgres(b *testing.B) {
	for _, bc := range []struct {
		name    string
		tenants int
	}{{"1tenant", 1}, {"64tenants", 64}} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnvOn(b, openPostgres(b), identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1})
			tenants := make([]string, bc.tenants)
			for i := range tenants {
				tenants[i] = identity.NewGUID()
			}
			sink := e.p.Audit()
			next := make(chan int, 1)
			next <- 0
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := <-next
					next <- i + 1
					err := sink.Record(b.Context(), audit.Entry{TenantID: tenants[i%len(tenants)], Source: audit.SourcePlatform,
						Action: "bench.append", Meta: map[string]any{"i": i}})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "recs/s")
		})
	}
}

// newEventsEnvOnPostgres is a platform on a fresh PostgreSQL schema behind
// a loopback HTTP server, with an OAuth client of the root tenant holding
// both events scopes and its access token (newEventsBenchEnv on
// PostgreSQL).
func newEventsEnvOnPostgres(b *testing.B) (*env, string) {
	b.Helper()
	e := newEnvOn(b, openPostgres(b), identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1})
	c, secret, err := e.p.Identity.CreateOAuthClient(context.Background(), e.admin, e.root.ID, "bench",
		[]string{identity.ScopeEventProducer, identity.ScopeEventConsumer}, "")
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

// BenchmarkEventsPost100Postgres is P3 on PostgreSQL: POST
// /events/v1/events with 100 events per request (loopback HTTP, token
// check, validation, group-commit append, one audit record per request),
// against raw inserts of the same rows into the same schema, in the same
// run: "raw" queues the 100 event inserts, their event_users rows and the
// head upsert as one pgx batch in one transaction (the SQLite method:
// plain inserts, 100 per transaction); "raw-copy" loads the same rows with
// COPY instead, the fastest way in. Compare events/s.
func BenchmarkEventsPost100Postgres(b *testing.B) {
	raw := func(b *testing.B, copyRows bool) {
		_, dsn, schema := openPostgresSchema(b) // creates the schema
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			b.Fatal(err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		tenant := identity.NewGUID()
		seq := 0
		b.ResetTimer()
		for i := range b.N {
			if err := insertRawPostgres(context.Background(), pool, tenant, &seq, i*100, 100, copyRows); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("raw", func(b *testing.B) { raw(b, false) })
	b.Run("raw-copy", func(b *testing.B) { raw(b, true) })
	b.Run("http", func(b *testing.B) {
		e, tok := newEventsEnvOnPostgres(b)
		benchPost100(b, e, tok)
	})
}

// BenchmarkEventsPostSingle64Postgres is P3's second half on PostgreSQL:
// single-event posts from 64 parallel clients.
func BenchmarkEventsPostSingle64Postgres(b *testing.B) {
	e, tok := newEventsEnvOnPostgres(b)
	benchPostSingle64(b, e, tok)
}

// insertRawPostgres inserts n events numbered from first (the rows
// eventBody describes, with their event_users rows) into tenant's log and
// advances its head, in one transaction: as one batch of INSERTs, or with
// COPY when copyRows is set.
func insertRawPostgres(ctx context.Context, pool *pgxpool.Pool, tenant string, seq *int, first, n int, copyRows bool) error {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evRows := make([][]any, 0, n)
	userRows := make([][]any, 0, n)
	for i := first; i < first+n; i++ {
		*seq++
		at := start.Add(time.Duration(i) * time.Second)
		typeID, user, body := eventBody(i, at)
		evRows = append(evRows, []any{tenant, int64(*seq), identity.NewGUID(), typeID, at.Format(events.TimeLayout), at, []string{user}, body})
		userRows = append(userRows, []any{tenant, user, int64(*seq), at})
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		if copyRows {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"},
				[]string{"tenant_id", "seq", "id", "type_id", "occurred_at", "received_at", "user_ids", "body"}, pgx.CopyFromRows(evRows)); err != nil {
				return err
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"event_users"}, []string{"tenant_id", "user_id", "seq", "received_at"}, pgx.CopyFromRows(userRows)); err != nil {
				return err
			}
		} else {
			for _, r := range evRows {
				b.Queue(`INSERT INTO events (tenant_id, seq, id, type_id, occurred_at, received_at, user_ids, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r...)
			}
			for _, r := range userRows {
				b.Queue(`INSERT INTO event_users (tenant_id, user_id, seq, received_at) VALUES ($1, $2, $3, $4)`, r...)
			}
		}
		b.Queue(`INSERT INTO event_heads (tenant_id, seq, received_at) VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, received_at = excluded.received_at`,
			tenant, int64(*seq), start.Add(time.Duration(first+n-1)*time.Second))
		return tx.SendBatch(ctx, b).Close()
	})
}
