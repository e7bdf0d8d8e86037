package audit_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
)

// generated yields n records made on the fly (never held together), with
// random-looking hashes so the chain file compresses as a real one would.
// Every 8192 records it samples the heap and keeps the peaks in *peak.
func generated(n int, peak *heapPeak) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		var prev []byte
		for i := 1; i <= n; i++ {
			r := makeRecord(int64(i))
			h := sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i)))
			r.PrevHash, r.Hash = prev, h[:]
			prev = r.Hash
			if i%8192 == 0 {
				peak.sample()
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// heapPeak keeps the highest heap sizes seen: alloc counts garbage not yet
// collected (so it depends on GC pacing), live is the heap the last GC found
// reachable, the memory the writer actually holds.
type heapPeak struct{ alloc, live uint64 }

func (p *heapPeak) sample() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.alloc = max(p.alloc, ms.HeapAlloc)
	p.live = max(p.live, s[0].Value.Uint64())
}

// BenchmarkWriteArchive streams generated records into an archive and its
// integrity file, both written to io.Discard. It reports records/s and the
// peak heap growth over the live heap before the run (heap-MiB: allocated;
// live-MiB: reachable), which must stay flat: the same at 10k and 1M
// records, since both files are streamed side by side. Run:
//
//	go test ./audit -run '^$' -bench WriteArchive -benchtime 3x
func BenchmarkWriteArchive(b *testing.B) {
	s, _ := mustSigner(b, "bench")
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			var growth, liveGrowth uint64
			start := time.Now()
			for b.Loop() {
				meta := testMeta(allTime())
				runtime.GC()
				var base, peak heapPeak
				base.sample()
				peak = base
				if _, err := audit.WriteArchive(io.Discard, io.Discard, meta, generated(n, &peak), s); err != nil {
					b.Fatal(err)
				}
				peak.sample()
				growth = max(growth, peak.alloc-base.alloc)
				liveGrowth = max(liveGrowth, peak.live-min(peak.live, base.live))
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "records/s")
			b.ReportMetric(float64(growth)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(liveGrowth)/(1<<20), "live-MiB")
		})
	}
}
