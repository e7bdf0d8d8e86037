package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

// scrape returns the platform's metrics in the text format.
func scrape(t *testing.T, e *latchkeytest.Env) string {
	t.Helper()
	h := e.Platform.MetricsHandler()
	if h == nil {
		t.Fatal("no metrics handler")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// sample returns the value of the series line that starts with prefix
// (name and labels as written by the text format), or "" if absent.
func sample(text, series string) string {
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

func TestMetricsAfterRequests(t *testing.T) {
	e := latchkeytest.New(t)
	acme := e.NewTenant("Acme") // two password logins and admin calls
	root := "Authorization: Bearer " + e.AdminToken()
	if r := e.Do("GET", "/api/v1/admin/tenants/"+acme.ID, nil, root); r.Status != 200 {
		t.Fatalf("get tenant: %d %s", r.Status, r.Body)
	}
	id, secret := e.OAuthClient(acme, "", identity.ScopeEventProducer, identity.ScopeEventConsumer)
	tok := "Authorization: Bearer " + e.AccessToken(id, secret)
	if r := e.Do("POST", "/events/v1/events", map[string]any{"a": map[string]any{"event_type_id": "10001"}}, tok); r.Status != 200 {
		t.Fatalf("post events: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/events/v1/events", nil, tok); r.Status != 200 {
		t.Fatalf("query events: %d %s", r.Status, r.Body)
	}
	bad := map[string]string{"name": "tadmin", "password": "wrong", "auth_domain": acme.Code}
	for range 6 { // 5 failures, then throttled
		e.Do("POST", "/api/v1/auth/tokens/", bad)
	}
	e.Do("GET", "/no/such/path/"+acme.ID, nil)
	if r := e.Do("GET", "/readyz", nil); r.Status != 200 {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}

	text := scrape(t, e)
	for _, want := range []struct{ series, value string }{
		{`latchkey_http_request_duration_seconds_count{code="2xx",method="GET",route="/api/v1/admin/tenants/{tenantId}"}`, "1"},
		{`latchkey_http_request_duration_seconds_count{code="2xx",method="POST",route="/events/v1/events"}`, "1"},
		{`latchkey_http_request_duration_seconds_count{code="4xx",method="POST",route="/api/v1/auth/tokens/"}`, "6"},
		{`latchkey_http_request_duration_seconds_count{code="4xx",method="any",route="unmatched"}`, "1"},
		{`latchkey_http_requests_in_flight`, "0"},
		{`latchkey_tokens_issued_total{grant="client_credentials"}`, "1"},
		{`latchkey_tokens_issued_total{grant="password"}`, "3"},
		{`latchkey_login_failures_total{grant="password",reason="unauthenticated"}`, "5"},
		{`latchkey_login_failures_total{grant="password",reason="throttled"}`, "1"},
		{`latchkey_events_ingested_total`, "1"},
		{`latchkey_events_ingest_requests_total`, "1"},
		{`latchkey_events_post_duration_seconds_count`, "1"},
		{`latchkey_events_query_duration_seconds_count`, "1"},
		{`latchkey_audit_queue_depth`, "0"},
		{`latchkey_audit_export_jobs_total{state="ACTIVE"}`, "0"},
		{`latchkey_audit_export_jobs_running`, "0"},
		{`latchkey_store_ready`, "1"},
		{`latchkey_notifications_retrieved_total`, "0"},
		{`latchkey_eventstream_deliveries_total{outcome="delivered"}`, "0"},
		{`latchkey_eventstream_dead_letters_total`, "0"},
	} {
		if got := sample(text, want.series); got != want.value {
			t.Errorf("%s = %q, want %q", want.series, got, want.value)
		}
	}
	// Every audited action went through the recorder's batches.
	for _, s := range []string{"latchkey_audit_batches_total", "latchkey_audit_records_total", "latchkey_audit_batch_size_count"} {
		if v := sample(text, s); v == "" || v == "0" {
			t.Errorf("%s = %q, want > 0", s, v)
		}
	}
	if !strings.Contains(text, "go_memstats_heap_inuse_bytes") {
		t.Error("the platform's own registry lacks the Go runtime collector")
	}
}

// TestMetricsRouteLabelsArePatterns checks that request series are
// labelled with registered route patterns: no id from a request path
// appears in a scrape, and every route label is a registered pattern.
func TestMetricsRouteLabelsArePatterns(t *testing.T) {
	e := latchkeytest.New(t)
	acme := e.NewTenant("Acme")
	root := "Authorization: Bearer " + e.AdminToken()
	const unknownID = "0badc0de-0000-4000-8000-00000000beef"
	e.Do("GET", "/api/v1/admin/tenants/"+acme.ID, nil, root)
	e.Do("GET", "/api/v1/admin/tenants/"+unknownID, nil, root)
	e.Do("GET", "/audit/v1/exports/"+unknownID, nil, root)
	e.Do("DELETE", "/"+unknownID, nil)
	e.Do("BREW", "/api/v1/admin/tenants/"+acme.ID, nil, root)
	text := scrape(t, e)
	for _, id := range []string{acme.ID, unknownID, "BREW"} {
		if strings.Contains(text, id) {
			t.Errorf("scrape contains %q from a request", id)
		}
	}
	patterns := map[string]bool{"unmatched": true}
	for _, r := range e.Handler.Routes() {
		patterns[r.Pattern] = true
	}
	n := 0
	for _, m := range regexp.MustCompile(`route="([^"]*)"`).FindAllStringSubmatch(text, -1) {
		n++
		if !patterns[m[1]] {
			t.Errorf("route label %q is not a registered pattern", m[1])
		}
	}
	if n == 0 {
		t.Error("no route labels in the scrape")
	}
	if got := sample(text, `latchkey_http_request_duration_seconds_count{code="4xx",method="GET",route="/api/v1/admin/tenants/{tenantId}"}`); got != "1" {
		t.Errorf("404 of an unknown tenant counted %q times under the pattern, want 1", got)
	}
}

// TestIdleServerExportsOnlySeenSeries: the HTTP histogram's series are
// made on first use, so an idle server exports none of its hundreds of
// routes × methods × status classes, and one request adds its own series
// (count, sum and buckets of one route, method and class).
func TestIdleServerExportsOnlySeenSeries(t *testing.T) {
	t.Parallel()
	e := latchkeytest.New(t)
	series := func() (n int) {
		for line := range strings.Lines(scrape(t, e)) {
			if strings.HasPrefix(line, "latchkey_http_request_duration_seconds") {
				n++
			}
		}
		return n
	}
	if n := series(); n != 0 {
		t.Errorf("an idle server exports %d HTTP duration lines, want 0", n)
	}
	if r := e.Do("GET", "/readyz", nil); r.Status != 200 {
		t.Fatalf("readyz: %d", r.Status)
	}
	one := series()
	text := scrape(t, e)
	if sample(text, `latchkey_http_request_duration_seconds_count{code="2xx",method="GET",route="/readyz"}`) != "1" || one > 20 {
		t.Errorf("after one request: %d lines\n%s", one, text)
	}
}
