package httpapi

import (
	"encoding/json"
	"net/http"
)

func (s *Server) registerMisc() {
	s.handle("GET", "/healthz", routeOpts{}, func(w http.ResponseWriter, r *http.Request) error {
		writeJSONCacheable(w, map[string]string{"status": "ok"})
		return nil
	})
	s.handle("GET", "/openapi.json", routeOpts{}, s.openAPIHandler())
}

// writeJSONCacheable writes a 200 JSON answer without no-store, for public
// documents that clients may cache.
func writeJSONCacheable(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
