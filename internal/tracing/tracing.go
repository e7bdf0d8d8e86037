// Package tracing is how Latchkey's packages make OpenTelemetry spans
// without a tracer of their own to configure.
//
// A request's span (httpapi) or a background job's root span (Root) puts
// the platform's tracer in the context; Start then makes child spans
// with it. When tracing is off nothing is in the context, and Start
// costs one context lookup and returns a span that does nothing, without
// allocating: the hot paths pay for tracing only when it is on. When the
// context's span is recording but carries no Latchkey tracer (an
// embedder calls a Platform method under a span of its own), Start uses
// that span's provider, so the embedder's trace goes on through Latchkey.
package tracing

import (
	"context"
	"encoding/hex"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of every Latchkey span.
const Scope = "github.com/latchkey/latchkey"

type tracerKey struct{}

// none is what Start returns when nothing is traced: the API's no-op span,
// an immutable value, so that callers annotate and End it unconditionally.
var none = trace.SpanFromContext(context.Background())

// WithTracer returns ctx carrying t, the tracer of the spans Start makes
// under it.
func WithTracer(ctx context.Context, t trace.Tracer) context.Context {
	return context.WithValue(ctx, tracerKey{}, t)
}

// Start starts span name as a child of ctx's span when that span is
// recording; otherwise it returns ctx unchanged and a no-op span, without
// allocating (as long as the caller passes no options). Span names must
// be constants: they are the label set of every tracing backend.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, none
	}
	t, _ := ctx.Value(tracerKey{}).(trace.Tracer)
	if t == nil {
		t = parent.TracerProvider().Tracer(Scope)
	}
	return t.Start(ctx, name, opts...)
}

// Tracer returns the tracer Start would use under ctx, or nil when ctx's
// span is not recording: for work handed to another goroutine (a group
// commit) whose span continues in that goroutine.
func Tracer(ctx context.Context) trace.Tracer {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return nil
	}
	if t, _ := ctx.Value(tracerKey{}).(trace.Tracer); t != nil {
		return t
	}
	return parent.TracerProvider().Tracer(Scope)
}

// Root starts span name as the root of a trace of its own, for background
// work that no request is waiting for (an export job, a delivery
// attempt), and puts t in the returned context for the spans under it.
// A nil t (tracing off) returns ctx and a no-op span.
func Root(ctx context.Context, t trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t == nil {
		return ctx, none
	}
	return t.Start(WithTracer(ctx, t), name, append(opts, trace.WithNewRoot())...)
}

// Origin is the span of a request whose work a later group commit does:
// the commit's span links to it. The zero Origin (tracing off, or a span
// not recording) links to nothing.
type Origin struct {
	span   trace.SpanContext
	tracer trace.Tracer
}

// OriginOf returns ctx's span as an Origin.
func OriginOf(ctx context.Context) Origin {
	if t := Tracer(ctx); t != nil {
		return Origin{trace.SpanContextFromContext(ctx), t}
	}
	return Origin{}
}

// CommitRoot starts span name as the root of a trace of its own for a
// group commit that serves the requests of origins, linked to those that
// were traced (at most the SDK's link limit, 128 by default); a no-op span
// when none was. One commit serves many requests, none of which is its
// parent.
func CommitRoot(name string, origins func(yield func(Origin) bool), opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	var (
		t     trace.Tracer
		links []trace.Link
	)
	for o := range origins {
		if o.tracer != nil {
			t = o.tracer
			links = append(links, trace.Link{SpanContext: o.span})
		}
	}
	if t == nil {
		return context.Background(), none
	}
	return Root(context.Background(), t, name, append(opts, trace.WithLinks(links...))...)
}

// TraceParent returns the W3C traceparent header value of ctx's span, or
// "" when ctx has none: what a stored piece of work keeps so that whoever
// takes it up later, in any process, can link to the span that made it.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

// ParseTraceParent returns the span context a TraceParent value names, as
// a remote one; ok is false for "" or anything W3C Trace Context refuses.
func ParseTraceParent(tp string) (sc trace.SpanContext, ok bool) {
	if tp == "" {
		return trace.SpanContext{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	sc = trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// Inject writes ctx's span context into h as W3C Trace Context headers
// (traceparent, tracestate), so the receiver of an outgoing request can
// continue the trace; it writes nothing when ctx has no span.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx with the remote span context of h's W3C Trace
// Context headers as its parent, when they hold a valid one.
func Extract(ctx context.Context, h http.Header) context.Context {
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
}

// LogHandler returns h whose records carry trace_id and span_id, the ids
// of their context's span, so that a log line leads to its trace. When
// the context has no span, fallback (if not nil) may name a trace id it
// holds otherwise (the audit trace id of an untraced request); the record
// then carries trace_id alone. Wrapping a handler that is already one of
// these returns it as it is.
func LogHandler(h slog.Handler, fallback func(context.Context) string) slog.Handler {
	if _, ok := h.(*logHandler); ok {
		return h
	}
	return &logHandler{h: h, fallback: fallback}
}

type logHandler struct {
	h        slog.Handler
	fallback func(context.Context) string
}

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	} else if l.fallback != nil {
		if id := l.fallback(ctx); id != "" {
			r = r.Clone()
			r.AddAttrs(slog.String("trace_id", id))
		}
	}
	return l.h.Handle(ctx, r)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{h: l.h.WithAttrs(attrs), fallback: l.fallback}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{h: l.h.WithGroup(name), fallback: l.fallback}
}
