package httpapi_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func init() {
	registerContractArea("ops", contractOps)
}

// contractOps covers GET /readyz: ready while the store answers, 503 while
// it does not, ready again once it recovers.
func contractOps(t *testing.T, c *contract, f fixture) {
	_, body := c.do(t, call{method: "GET", path: "/readyz", want: 200})
	if diff := cmp.Diff(map[string]any{"status": "ready"}, decode[map[string]any](t, body)); diff != "" {
		t.Errorf("ready body (-want +got):\n%s", diff)
	}
	c.store.SetNotReady(errors.New("database unreachable"))
	resp, body := c.do(t, call{method: "GET", path: "/readyz", want: 503})
	c.store.SetNotReady(nil)
	if got := decode[map[string]any](t, body); got["status"] != "unavailable" {
		t.Errorf("not-ready body %v", got)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	// Liveness does not depend on the store.
	c.store.SetNotReady(errors.New("database unreachable"))
	c.do(t, call{method: "GET", path: "/healthz", want: 200})
	c.store.SetNotReady(nil)
	c.do(t, call{method: "GET", path: "/readyz", want: 200})
}
