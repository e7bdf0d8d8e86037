package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/latchkeytest"
)

// Requests no route matches are answered in JSON, never the mux's plain
// text: unknown paths 404 in the shape of the area whose base URL they
// fall under (the platform shape elsewhere), known paths with a wrong
// method 405 with Allow, in the shape of the area serving the path.
func TestUnknownPathsAndMethodsAnswerJSON(t *testing.T) {
	e := latchkeytest.New(t)
	tests := []struct {
		method, path string
		status       int
		allow        string
		body         map[string]any // compared without volatile fields
	}{
		{"GET", "/nope", 404, "", map[string]any{"code": float64(404), "codeDesc": "NOT_FOUND", "message": "no such resource: /nope"}},
		{"GET", "/api/v1/admin", 404, "", map[string]any{"code": float64(404), "codeDesc": "NOT_FOUND", "message": "no such resource: /api/v1/admin"}},
		// Under an area's base URL an unknown path answers in that area's
		// shape: API.md gives notification errors as {code, description}.
		{"GET", "/notification/v1/nope", 404, "", map[string]any{"code": "NOT_FOUND", "description": "no such resource: /notification/v1/nope"}},
		{"GET", "/notification/v1/subscriptions/", 404, "", map[string]any{"code": "NOT_FOUND", "description": "no such resource: /notification/v1/subscriptions/"}},
		{"GET", "/eventstream/v1/nope", 404, "", map[string]any{"title": "Not Found", "status": float64(404), "detail": "no such resource: /eventstream/v1/nope"}},
		{"GET", "/audit/v1/nope", 404, "", map[string]any{"title": "Not Found", "status": float64(404), "detail": "no such resource: /audit/v1/nope"}},
		{"GET", "/events/v1/nope", 404, "", map[string]any{"title": "Not Found", "status": float64(404), "detail": "no such resource: /events/v1/nope"}},
		{"GET", "/notificationx", 404, "", map[string]any{"code": float64(404), "codeDesc": "NOT_FOUND", "message": "no such resource: /notificationx"}},
		{"PUT", "/healthz", 405, "GET, HEAD", map[string]any{"code": float64(405), "codeDesc": "METHOD_NOT_ALLOWED", "message": "PUT is not allowed here; use GET, HEAD"}},
		{"GET", "/api/v1/auth/tokens/", 405, "POST", map[string]any{"code": float64(405), "codeDesc": "METHOD_NOT_ALLOWED", "message": "GET is not allowed here; use POST"}},
		{"GET", "/api/v1/client-management/clients/", 405, "POST", map[string]any{"code": float64(405), "codeDesc": "METHOD_NOT_ALLOWED", "message": "GET is not allowed here; use POST"}},
		{"PUT", "/api/v1/vault/keys2/00000000-0000-4000-8000-000000000000", 405, "GET, HEAD, PATCH, DELETE", map[string]any{"code": float64(405), "codeDesc": "METHOD_NOT_ALLOWED", "message": "PUT is not allowed here; use GET, HEAD, PATCH, DELETE"}},
		{"DELETE", "/audit/v1/service_instances", 405, "GET, HEAD", map[string]any{"title": "Method Not Allowed", "status": float64(405), "detail": "DELETE is not allowed here; use GET, HEAD"}},
		{"GET", "/oauth/v1/token", 405, "POST", map[string]any{"error": "invalid_request", "error_description": "GET is not allowed here; use POST"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := e.Do(tt.method, tt.path, nil)
			if r.Status != tt.status || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Trace-Id") == "" {
				t.Fatalf("%d %q trace %q: %s", r.Status, r.Header.Get("Content-Type"), r.Header.Get("X-Trace-Id"), r.Body)
			}
			if got := r.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			delete(body, "traceId")
			if diff := cmp.Diff(tt.body, body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
	if r := e.Do("HEAD", "/healthz", nil); r.Status != http.StatusOK {
		t.Errorf("HEAD /healthz: %d", r.Status)
	}
}
