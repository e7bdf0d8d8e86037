package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

func (s *Server) registerMisc() {
	s.handle("GET", "/healthz", routeOpts{}, func(w http.ResponseWriter, r *http.Request) error {
		writeJSONCacheable(w, map[string]string{"status": "ok"})
		return nil
	})
	s.handle("GET", "/openapi.json", routeOpts{}, s.openAPIHandler())
	s.handle("GET", "/readyz", routeOpts{}, s.readyz)
}

// readyz is the readiness check: 200 once the store answers and every
// migration is applied, else 503 with the reason. /healthz stays a
// liveness check that does not touch the store.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.p.Ready(ctx); err != nil {
		s.log.Warn("not ready", "err", err)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]string{"status": "unavailable", "reason": "the store is not ready"})
		return nil
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSONCacheable(w, map[string]string{"status": "ready"})
	return nil
}

// writeJSONCacheable writes a 200 JSON answer without no-store, for public
// documents that clients may cache.
func writeJSONCacheable(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
