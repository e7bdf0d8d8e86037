package bench_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/postgres"
)

// openPostgres opens a PostgreSQL store on a fresh schema of the database
// at $PLATFORM_POSTGRES_DSN (skipping without it) and drops the schema at
// the end.
func openPostgres(b *testing.B) *postgres.Store {
	b.Helper()
	dsn := os.Getenv("PLATFORM_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("PLATFORM_POSTGRES_DSN not set")
	}
	r := make([]byte, 8)
	rand.Read(r)
	schema := "lk_bench_" + hex.EncodeToString(r)
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
	return st
}

// P1 on PostgreSQL: the token endpoint with its audit record committed to
// PostgreSQL (synchronous_commit as the server is configured), against the
// same bare ES256 handler as BenchmarkP1TokenEndpoint, in the same run.
func BenchmarkP1TokenEndpointPostgres(b *testing.B) {
	b.Run("baseline=bare-es256-handler", benchBareES256)
	b.Run("latchkey-postgres", func(b *testing.B) { benchTokenEndpoint(b, newEnvOn(b, openPostgres(b), identity.OWASPMinimum())) })
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
