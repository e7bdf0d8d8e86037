package httpapi

import "net/http"

// SetIdempotencyHook sets the test hook run when a request has reserved
// its Idempotency-Key, before its handler runs.
// nil removes it.
func SetIdempotencyHook(s *Server, f func(*http.Request)) {
	if f == nil {
		s.idemHook.Store(nil)
		return
	}
	s.idemHook.Store(&f)
}
