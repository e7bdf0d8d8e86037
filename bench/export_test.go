package bench_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/sqlite"
)

// exportEnv is a store holding n audit records of one tenant and an
// Exporter over it; building it is not timed.
type exportEnv struct {
	st     audit.ExporterStore
	ex     *audit.Exporter
	tenant string
	from   time.Time
	to     time.Time
}

// openExportSQLite is the SQLite store of the export benchmarks
// (synchronous=OFF: loading the records is setup).
func openExportSQLite(b *testing.B) audit.ExporterStore {
	b.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "export.db"), sqlite.Options{Synchronous: "OFF"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// newExportEnv loads n records into st, 1000 per AppendAuditRecords.
func newExportEnv(b *testing.B, st audit.ExporterStore, n int) *exportEnv {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	tenant := identity.NewGUID()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]*audit.Record, 0, 1000)
	actions := []string{"auth.login", "user.create", "oauth.token", "export.create"}
	for i := range n {
		r := &audit.Record{
			Time: start.Add(time.Duration(i) * time.Millisecond), TenantID: tenant, TraceID: fmt.Sprintf("%032x", i),
			Source: audit.SourcePlatform, ResourceID: "7d3e3c0e-6a55-4b7b-9a43-3f0cf0f1a001", ActorID: fmt.Sprintf("actor-%d", i%50),
			Action: actions[i%len(actions)], Status: audit.StatusSuccess,
			Meta: map[string]any{"client_id": "lkc_benchclient", "user": map[string]any{"name": "alice", "id": "AAECAwQFBgcICQoLDA0ODw"}},
		}
		if i%10 == 0 {
			r.Status = audit.StatusFailed
			r.Meta["errorMessage"] = "invalid credentials"
		}
		batch = append(batch, r)
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.AppendAuditRecords(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	signer, err := audit.NewES256Signer("bench", key)
	if err != nil {
		b.Fatal(err)
	}
	ex, err := audit.NewExporter(audit.ExporterConfig{
		Store: st, Sink: discardSink{}, ArchiveDir: filepath.Join(dir, "archives"),
		Signer: func() (audit.DigestSigner, error) { return signer, nil }, URLKey: make([]byte, 32),
	})
	if err != nil {
		b.Fatal(err)
	}
	return &exportEnv{st: st, ex: ex, tenant: tenant, from: start, to: start.Add(time.Duration(n) * time.Millisecond)}
}

type discardSink struct{}

func (discardSink) Record(context.Context, audit.Entry) error { return nil }

// heapPeak samples HeapInuse until stopped and reports the peak.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// benchmarkExport measures one whole export job (claim, scan, ZIP with
// digest, completion) of n records in st: seconds per export and the peak
// growth of HeapInuse over the heap before it (TARGETS.md P7).
func benchmarkExport(b *testing.B, st audit.ExporterStore, n int) {
	e := newExportEnv(b, st, n)
	ctx := context.Background()
	var worstGrowth uint64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		job := audit.ExportJob{ID: identity.NewGUID(), TenantID: e.tenant, State: audit.JobActive, StartedAt: e.to,
			Request: audit.ExportRequest{From: e.from, To: e.to}}
		if err := e.st.CreateExportJob(ctx, job); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
		stop := heapPeak()
		b.StartTimer()
		done, err := e.ex.RunPending(ctx)
		b.StopTimer()
		peak := stop()
		if err != nil || done != 1 {
			b.Fatalf("RunPending = %d, %v", done, err)
		}
		got, err := e.st.GetExportJob(ctx, e.tenant, job.ID)
		if err != nil || got.State != audit.JobSucceeded || got.Summary.Count != int64(n) {
			b.Fatalf("job = %+v, %v", got, err)
		}
		if peak > base && peak-base > worstGrowth {
			worstGrowth = peak - base
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(worstGrowth)/(1<<20), "MiB-heap-growth")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/export")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkExport10k exports 10,000 records from SQLite.
func BenchmarkExport10k(b *testing.B) { benchmarkExport(b, openExportSQLite(b), 10_000) }

// BenchmarkExport1M exports 1,000,000 records from SQLite (P7: under 15 s,
// heap growth at most 64 MiB). Setup inserts them first, untimed; run with
// -benchtime=1x.
func BenchmarkExport1M(b *testing.B) { benchmarkExport(b, openExportSQLite(b), 1_000_000) }

// BenchmarkExport10kPostgres exports 10,000 records from PostgreSQL (a
// fresh schema of $PLATFORM_POSTGRES_DSN).
func BenchmarkExport10kPostgres(b *testing.B) { benchmarkExport(b, openPostgres(b), 10_000) }

// BenchmarkExport1MPostgres is BenchmarkExport1M on PostgreSQL (loading
// the records, untimed, takes about 30 s on a 2-core machine); run with
// -benchtime=1x.
func BenchmarkExport1MPostgres(b *testing.B) { benchmarkExport(b, openPostgres(b), 1_000_000) }
