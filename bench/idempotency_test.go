package bench_test

import (
	"bytes"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkIdempotencyKeyPost measures what Idempotency-Key costs an
// event post, P2-style: single-event posts from parallel clients on
// loopback, without the header, then each with a key of its own (a
// reservation before the post, its binding in the ingest transaction,
// the answer kept after). Compare µs/op and CPU per request.
func BenchmarkIdempotencyKeyPost(b *testing.B) {
	e, tok := newEventsBenchEnv(b)
	benchIdempotencyKeyPost(b, e, tok)
}

// BenchmarkIdempotencyKeyPostPostgres is BenchmarkIdempotencyKeyPost on
// PostgreSQL (a fresh schema of $PLATFORM_POSTGRES_DSN).
func BenchmarkIdempotencyKeyPostPostgres(b *testing.B) {
	e, tok := newEventsEnvOnPostgres(b)
	benchIdempotencyKeyPost(b, e, tok)
}

func benchIdempotencyKeyPost(b *testing.B, e *env, tok string) {
	url := e.srv.URL + "/events/v1/events"
	var n atomic.Int64
	for _, withKey := range []bool{false, true} {
		name := "without-key"
		if withKey {
			name = "with-key"
		}
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(32)
			b.ResetTimer()
			before := e.p.Events.IngestStats()
			cpu := startCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(n.Add(1))
					req, _ := http.NewRequest("POST", url, bytes.NewReader(postBody(i, 1)))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+tok)
					if withKey {
						req.Header.Set("Idempotency-Key", "bench-"+strconv.Itoa(i))
					}
					resp, err := e.client.Do(req)
					drain(b, resp, err)
				}
			})
			cpu.report(b)
			reportBatches(b, before, e.p.Events.IngestStats())
		})
	}
}
