package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// discardWriter is a ResponseWriter that allocates nothing.
type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header         { return w.h }
func (w discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w discardWriter) WriteHeader(int)             {}

func newTestServer(tb testing.TB) *Server {
	p, err := latchkey.New(tb.Context(), latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey(),
		PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return New(p, Defaults())
}

// TestRequestMetricsAllocateNothing: the per-request metrics work (route
// series resolved at registration, pooled status writer) must not add
// allocations to the request path (P1, P2).
func TestRequestMetricsAllocateNothing(t *testing.T) {
	s := newTestServer(t)
	h := s.instrumented("GET", "/x/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	w := discardWriter{h: http.Header{}}
	r := httptest.NewRequest("GET", "/x/1", nil)
	if n := testing.AllocsPerRun(1000, func() { h(w, r) }); n != 0 {
		t.Errorf("%v allocations per instrumented request, want 0", n)
	}
}

// BenchmarkRequestMetrics is the cost the metrics add to one request.
func BenchmarkRequestMetrics(b *testing.B) {
	s := newTestServer(b)
	noop := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }
	w := discardWriter{h: http.Header{}}
	r := httptest.NewRequest("GET", "/x/1", nil)
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				noop(w, r)
			}
		})
	})
	b.Run("instrumented", func(b *testing.B) {
		h := s.instrumented("GET", "/x/{id}", noop)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h(w, r)
			}
		})
	})
}
