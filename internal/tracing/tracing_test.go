package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/latchkey/latchkey/internal/tracing"
)

func newProvider(t *testing.T, opts ...sdktrace.TracerProviderOption) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSyncer(exp)}, opts...)...)
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp, exp
}

// TestStartWithoutRecordingSpanAllocatesNothing is the "no cost when
// off" rule: with no span in the context, or a span that does not record
// (tracing on, request not sampled), Start returns the context as it is
// and allocates nothing.
func TestStartWithoutRecordingSpanAllocatesNothing(t *testing.T) {
	tp, exp := newProvider(t, sdktrace.WithSampler(sdktrace.NeverSample()))
	_, unsampled := tp.Tracer("test").Start(context.Background(), "request")
	for name, ctx := range map[string]context.Context{
		"no span":         context.Background(),
		"unsampled span":  trace.ContextWithSpan(context.Background(), unsampled),
		"tracer, no span": tracing.WithTracer(context.Background(), tp.Tracer("test")),
	} {
		t.Run(name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, func() {
				got, span := tracing.Start(ctx, "work")
				span.SetAttributes()
				span.AddEvent("event")
				span.End()
				if got != ctx {
					t.Fatal("Start changed the context")
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per Start, want 0", allocs)
			}
		})
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans exported, want none", n)
	}
}

// TestStartMakesChildren: under a recording span, Start makes a child
// with the context's tracer, or with the span's own provider when the
// context carries none (an embedder's span).
func TestStartMakesChildren(t *testing.T) {
	tp, exp := newProvider(t)
	for name, withTracer := range map[string]bool{"context's tracer": true, "span's provider": false} {
		t.Run(name, func(t *testing.T) {
			exp.Reset()
			ctx, parent := tp.Tracer("embedder").Start(context.Background(), "parent")
			if withTracer {
				ctx = tracing.WithTracer(ctx, tp.Tracer(tracing.Scope))
			}
			_, child := tracing.Start(ctx, "child")
			child.End()
			parent.End()
			spans := exp.GetSpans()
			if len(spans) != 2 {
				t.Fatalf("%d spans, want 2", len(spans))
			}
			c := spans[0]
			if c.Name != "child" || c.Parent.SpanID() != parent.SpanContext().SpanID() || c.InstrumentationScope.Name != tracing.Scope {
				t.Errorf("child %q, parent %v, scope %q; want child of %v in scope %q", c.Name, c.Parent.SpanID(), c.InstrumentationScope.Name, parent.SpanContext().SpanID(), tracing.Scope)
			}
		})
	}
}

// TestRootBeginsATrace: Root ignores the context's span (background work
// is nobody's child) and puts its tracer in the context for Start.
func TestRootBeginsATrace(t *testing.T) {
	tp, exp := newProvider(t)
	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	ctx, root := tracing.Root(ctx, tp.Tracer(tracing.Scope), "job")
	_, child := tracing.Start(ctx, "step")
	child.End()
	root.End()
	request.End()
	if root.SpanContext().TraceID() == request.SpanContext().TraceID() {
		t.Error("Root continued the context's trace")
	}
	spans := exp.GetSpans()
	if spans[0].Parent.SpanID() != root.SpanContext().SpanID() {
		t.Errorf("step's parent %v, want the root %v", spans[0].Parent.SpanID(), root.SpanContext().SpanID())
	}
	if _, span := tracing.Root(context.Background(), nil, "job"); span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("Root without a tracer made a span")
	}
}

// TestTraceParentRoundTrip: what TraceParent stores, ParseTraceParent
// reads back as the same span context, and Inject sends the same header.
func TestTraceParentRoundTrip(t *testing.T) {
	tp, _ := newProvider(t)
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	defer span.End()
	tpv := tracing.TraceParent(ctx)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if tpv != want {
		t.Fatalf("TraceParent %q, want %q", tpv, want)
	}
	sc, ok := tracing.ParseTraceParent(tpv)
	if !ok || sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() || !sc.IsSampled() || !sc.IsRemote() {
		t.Errorf("ParseTraceParent(%q) = %v, %v", tpv, sc, ok)
	}
	h := http.Header{}
	tracing.Inject(ctx, h)
	if h.Get("traceparent") != tpv {
		t.Errorf("injected %q, want %q", h.Get("traceparent"), tpv)
	}
	if got := trace.SpanContextFromContext(tracing.Extract(context.Background(), h)); got.SpanID() != sc.SpanID() {
		t.Errorf("extracted %v, want %v", got, sc)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		if _, ok := tracing.ParseTraceParent(bad); ok {
			t.Errorf("ParseTraceParent(%q) accepted", bad)
		}
	}
	if got := tracing.TraceParent(context.Background()); got != "" {
		t.Errorf("TraceParent without a span = %q", got)
	}
	empty := http.Header{}
	tracing.Inject(context.Background(), empty)
	if len(empty) != 0 {
		t.Errorf("Inject without a span wrote %v", empty)
	}
}

// TestLogHandler: records carry the ids of their context's span, or the
// fallback's trace id without one, and nothing without either.
func TestLogHandler(t *testing.T) {
	tp, _ := newProvider(t)
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	defer span.End()
	type key struct{}
	fallback := func(ctx context.Context) string { s, _ := ctx.Value(key{}).(string); return s }
	sc := span.SpanContext()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"span", ctx, "msg=hi a=1 trace_id=" + sc.TraceID().String() + " span_id=" + sc.SpanID().String()},
		{"fallback", context.WithValue(context.Background(), key{}, "4bf92f3577b34da6a3ce929d0e0e4736"), "msg=hi a=1 trace_id=4bf92f3577b34da6a3ce929d0e0e4736"},
		{"neither", context.Background(), "msg=hi a=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
					return slog.Attr{}
				}
				return a
			}})
			log := slog.New(tracing.LogHandler(tracing.LogHandler(h, fallback), fallback))
			log.InfoContext(tc.ctx, "hi", "a", 1)
			if diff := cmp.Diff(tc.want, strings.TrimSpace(buf.String())); diff != "" {
				t.Errorf("log line (-want +got):\n%s", diff)
			}
		})
	}
}
