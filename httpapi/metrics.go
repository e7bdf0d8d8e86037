package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/latchkey/latchkey/fault"
)

// statusWriters recycles the writers that remember a response's status
// for the request metrics, so that instrumenting a request allocates
// nothing.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// instrumented wraps h with the request metrics of one route and, when
// tracing is on, names the request's span after it. route is the
// registered pattern (or "unmatched"), never the request's path, so the
// label set and the span names are bounded by the routes; its series and
// span name are resolved here, once.
func (s *Server) instrumented(method, route string, h http.HandlerFunc) http.HandlerFunc {
	m := s.p.Metrics().Route(method, route)
	name, routeAttr := method+" "+route, semconv.HTTPRoute(route)
	matched := method != "any"
	return func(w http.ResponseWriter, r *http.Request) {
		start := m.Start()
		sw := statusWriters.Get().(*statusWriter)
		sw.ResponseWriter, sw.status = w, http.StatusOK
		span, route := noSpan, attribute.KeyValue{}
		if s.tracer != nil {
			if span = trace.SpanFromContext(r.Context()); span.IsRecording() {
				if matched {
					span.SetName(name)
					route = routeAttr
				} else {
					span.SetName(spanMethod(r.Method))
				}
			}
		}
		defer func() {
			status := sw.status
			sw.ResponseWriter = nil
			statusWriters.Put(sw)
			if v := recover(); v != nil {
				// ServeHTTP answers 500 (or aborts) once the panic reaches it.
				m.Done(start, http.StatusInternalServerError)
				endSpan(span, route, http.StatusInternalServerError)
				panic(v)
			}
			m.Done(start, status)
			endSpan(span, route, status)
		}()
		h(sw, r)
	}
}

// noSpan is the API's no-op span: a request's span when tracing is off.
var noSpan = trace.SpanFromContext(context.Background())

// endSpan records a request's route (when matched) and status on its
// span (which ServeHTTP ends), in one call: 5xx answers are errors of the
// server, 4xx ones the client's and not.
func endSpan(span trace.Span, route attribute.KeyValue, status int) {
	if !span.IsRecording() {
		return
	}
	if route.Valid() {
		span.SetAttributes(route, semconv.HTTPResponseStatusCode(status))
	} else {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	}
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
}

// loginFailed counts a failed login or token request by grant and reason.
func (s *Server) loginFailed(grant string, err error) {
	reason := "other"
	switch fault.KindOf(err) {
	case fault.Unauthenticated, fault.Forbidden:
		reason = "unauthenticated"
	case fault.TooManyRequests:
		reason = "throttled"
	case fault.Invalid:
		reason = "invalid"
	}
	s.p.Metrics().LoginFailed(grant, reason)
}

// observeSince observes the seconds since start on o, for area latencies.
func observeSince(o interface{ Observe(float64) }, start time.Time) {
	o.Observe(time.Since(start).Seconds())
}
