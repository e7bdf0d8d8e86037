package bench_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/otelenv"
)

// tracing is tracing turned on as an operator would (package otelenv
// reading OTEL_* variables), sampling every request and exporting over
// OTLP/HTTP to a receiver in this process that reads and discards each
// export, as a collector on the same host would take them.
type tracing struct {
	tp    *sdktrace.TracerProvider
	bytes atomic.Int64 // OTLP bytes received
}

func newTracing(b *testing.B) *tracing {
	b.Helper()
	t := &tracing{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		t.bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	b.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	tp, err := otelenv.FromEnv(context.Background(), "")
	if err != nil || tp == nil {
		b.Fatalf("otelenv.FromEnv = %v, %v", tp, err)
	}
	t.tp = tp
	b.Cleanup(func() {
		tp.Shutdown(context.Background())
		rcv.Close()
	})
	return t
}

func (t *tracing) config(c *latchkey.Config) { c.TracerProvider = t.tp }

// report flushes the spans and reports the OTLP bytes exported per
// operation: evidence that the spans were made and sent, not dropped.
func (t *tracing) report(b *testing.B) {
	b.StopTimer()
	t.tp.ForceFlush(context.Background())
	b.ReportMetric(float64(t.bytes.Load())/float64(b.N), "otlp-B/op")
}

// BenchmarkP1TokenEndpointTraced is P1 with tracing on and every request
// sampled, to compare with BenchmarkP1TokenEndpoint (tracing off) in the
// same run (docs/performance.md, "Tracing").
func BenchmarkP1TokenEndpointTraced(b *testing.B) {
	b.Run("baseline=bare-es256-handler", benchBareES256)
	b.Run("latchkey+tracing", func(b *testing.B) {
		t := newTracing(b)
		benchTokenEndpoint(b, newEnv(b, identity.OWASPMinimum(), t.config))
		t.report(b)
	})
}

// BenchmarkP2AuthenticatedGetTraced is P2 with tracing on and every
// request sampled.
func BenchmarkP2AuthenticatedGetTraced(b *testing.B) {
	t := newTracing(b)
	benchAuthenticatedGet(b, newEnv, "latchkey+tracing", t.config, t.report)
}
