package bench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/sqlite"
)

// BenchmarkAuditBytesPerRecord appends 100,000 audit records of one tenant
// in commits of 16 (the recorder's batch under P1) and reports the bytes
// the audit tables and their indexes take per record: on SQLite the
// database file after a checkpoint, on PostgreSQL every audit relation of
// the schema (partitions, indexes, TOAST). Run with -benchtime 1x.
func BenchmarkAuditBytesPerRecord(b *testing.B) {
	const n, batch = 100_000, 16
	load := func(b *testing.B, st audit.LogStore) {
		tenant := identity.NewGUID()
		start := time.Now().UTC().Add(-time.Hour)
		for i := 0; i < n; i += batch {
			recs := make([]*audit.Record, batch)
			for j := range recs {
				k := i + j
				recs[j] = &audit.Record{
					Time: start.Add(time.Duration(k) * time.Millisecond), TenantID: tenant, TraceID: fmt.Sprintf("%032x", k),
					Source: audit.SourcePlatform, ResourceID: "7d3e3c0e-6a55-4b7b-9a43-3f0cf0f1a001", ActorID: "lkc_benchclient",
					Action: "token.issue", Status: audit.StatusSuccess,
					Meta: map[string]any{"client_id": "lkc_benchclient", "scope": "audit:export"},
				}
			}
			if err := st.AppendAuditRecords(context.Background(), recs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("sqlite", func(b *testing.B) {
		for b.Loop() {
			path := filepath.Join(b.TempDir(), "size.db")
			st, err := sqlite.Open(context.Background(), path, sqlite.Options{Synchronous: "OFF"})
			if err != nil {
				b.Fatal(err)
			}
			empty := fileSize(b, path)
			load(b, st)
			st.Close() // checkpoints the WAL into the file
			b.ReportMetric(float64(fileSize(b, path)-empty)/n, "bytes/record")
		}
	})
	b.Run("postgres", func(b *testing.B) {
		for b.Loop() {
			st, dsn, schema := openPostgresSchema(b)
			load(b, st)
			c, err := pgx.Connect(context.Background(), dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			var size int64
			if err := c.QueryRow(context.Background(), `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
				JOIN pg_namespace s ON s.oid = c.relnamespace
				WHERE s.nspname = $1 AND c.relkind = 'r' AND c.relname LIKE 'audit\_%' AND c.relname <> 'audit_heads'`, schema).Scan(&size); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(size)/n, "bytes/record")
		}
	})
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
