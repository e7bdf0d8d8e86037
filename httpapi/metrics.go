package httpapi

import (
	"net/http"
	"sync"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// statusWriters recycles the writers that remember a response's status
// for the request metrics, so that instrumenting a request allocates
// nothing.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// instrumented wraps h with the request metrics of one route. route is the
// registered pattern (or "unmatched"), never the request's path, so the
// label set is bounded by the routes; its series are resolved here, once.
func (s *Server) instrumented(method, route string, h http.HandlerFunc) http.HandlerFunc {
	m := s.p.Metrics().Route(method, route)
	return func(w http.ResponseWriter, r *http.Request) {
		start := m.Start()
		sw := statusWriters.Get().(*statusWriter)
		sw.ResponseWriter, sw.status = w, http.StatusOK
		defer func() {
			status := sw.status
			sw.ResponseWriter = nil
			statusWriters.Put(sw)
			if v := recover(); v != nil {
				// ServeHTTP answers 500 (or aborts) once the panic reaches it.
				m.Done(start, http.StatusInternalServerError)
				panic(v)
			}
			m.Done(start, status)
		}()
		h(sw, r)
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
