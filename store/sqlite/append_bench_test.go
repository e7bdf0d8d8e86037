package sqlite_test

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/sqlite"
	"github.com/latchkey/latchkey/store/storetest"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppendAuditRecords measures the audit writer's commits on
// SQLite: batches of one tenant's records, one after another, as the
// recorder's single writer makes them. It reports CPU (user and system)
// per record, which is what P1 pays for each request's record.
func BenchmarkAppendAuditRecords(b *testing.B) {
	for _, batch := range []int{1, 16, 64} {
		for _, sync := range []string{"FULL", "OFF"} {
			b.Run(fmt.Sprintf("batch=%d/sync=%s", batch, sync), func(b *testing.B) {
				s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Synchronous: sync})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				tn := identity.NewGUID()
				b.ResetTimer()
				cpu := cpuNow()
				for i := 0; i < b.N; i += batch {
					recs := make([]*audit.Record, batch)
					for j := range recs {
						recs[j] = storetest.NewRecord(tn, i+j)
					}
					if err := s.AppendAuditRecords(b.Context(), recs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuNow()-cpu)/float64(b.N), "cpu-ns/rec")
			})
		}
	}
}
