package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/latchkeytest"
)

const eventsPath = "/events/v1/events"

// eventsEnv is a platform with one tenant holding a few events, and the
// tokens the tests use.
type eventsEnv struct {
	e                          *latchkeytest.Env
	acme, other                latchkeytest.Tenant
	producer, consumer, otherC string
}

func newEventsEnv(t *testing.T) *eventsEnv {
	t.Helper()
	e := latchkeytest.New(t)
	ev := &eventsEnv{e: e, acme: e.NewTenant("Acme"), other: e.NewTenant("Other")}
	ev.producer = e.AuditClient(ev.acme, "", "event:event:producer")
	ev.consumer = e.AuditClient(ev.acme, "", "event:event:consumer")
	ev.otherC = e.AuditClient(ev.other, "", "event:event:consumer", "event:event:producer")
	// Posted in name order, so seq follows the names: a1 is the oldest.
	r := ev.post(ev.producer, map[string]any{
		"a1": map[string]any{"event_type_id": "10001", "end_user": map[string]any{"id": "alice", "segment": "gold"}, "count": 1, "timestamp": "2026-05-01T10:00:00Z"},
		"a2": map[string]any{"event_type_id": "10002", "end_user": map[string]any{"id": "bob", "segment": "gold"}, "count": 2, "timestamp": "2026-05-02T10:00:00Z"},
		"a3": map[string]any{"event_type_id": "10001", "end_user": map[string]any{"id": "bob", "segment": "silver"}, "count": 3, "timestamp": "2026-05-03T10:00:00Z"},
		"a4": map[string]any{"event_type_id": "10003", "end_user": map[string]any{"id": "carol", "segment": "bronze"}, "authenticated_user": map[string]any{"id": "alice"}, "count": 4, "timestamp": "2026-05-04T10:00:00Z"},
		"a5": map[string]any{"event_type_id": "10001", "username": "dave", "timestamp": "2026-05-05T10:00:00+02:00"},
	})
	if r.Status != http.StatusOK {
		t.Fatalf("seed post: %d %s", r.Status, r.Body)
	}
	return ev
}

func (ev *eventsEnv) post(token string, body any) latchkeytest.Response {
	return ev.e.Do("POST", eventsPath, body, "Authorization: Bearer "+token)
}

// query runs GET with params and returns the status and the counts of the
// results (event count values, or usernames for events without a count).
func (ev *eventsEnv) query(t *testing.T, token string, params url.Values) (latchkeytest.Response, []string) {
	t.Helper()
	r := ev.e.Do("GET", eventsPath+"?"+params.Encode(), nil, "Authorization: Bearer "+token)
	var page struct{ Results []map[string]any }
	json.Unmarshal(r.Body, &page)
	var got []string
	for _, res := range page.Results {
		if c, ok := res["count"]; ok {
			got = append(got, "a"+strings.TrimSuffix(strings.TrimSuffix(json.Number(jsonText(c)).String(), ".0"), ""))
		} else {
			got = append(got, "a5")
		}
	}
	return r, got
}

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestEventsFilterGrammar checks the filter grammar end to end: each
// operator, precedence of and over or, parentheses, not, dotted paths,
// time comparisons, and the position of syntax errors.
func TestEventsFilterGrammar(t *testing.T) {
	ev := newEventsEnv(t)
	for _, tc := range []struct {
		filter string
		want   []string
	}{
		{``, []string{"a5", "a4", "a3", "a2", "a1"}},
		{`event_type_id eq "10001"`, []string{"a5", "a3", "a1"}},
		{`event_type_id ne "10001"`, []string{"a4", "a2"}},
		{`end_user.segment co "ol"`, []string{"a2", "a1"}},
		{`end_user.segment sw "br"`, []string{"a4"}},
		{`end_user.segment ew "er"`, []string{"a3"}},
		{`count gt 2`, []string{"a4", "a3"}},
		{`count ge 2`, []string{"a4", "a3", "a2"}},
		{`count lt 2`, []string{"a1"}},
		{`count le 2`, []string{"a2", "a1"}},
		{`username pr`, []string{"a5"}},
		{`timestamp ge "2026-05-03T10:00:00Z"`, []string{"a5", "a4", "a3"}},
		{`timestamp eq "2026-05-05T08:00:00Z"`, []string{"a5"}},
		{`timestamp lt "2026-05-02T12:00:00+02:00"`, []string{"a1"}},
		{`timestamp le "2026-05-02T12:00:00+02:00"`, []string{"a2", "a1"}},
		{`count eq 1 or count eq 2 and end_user.segment eq "silver"`, []string{"a1"}},
		{`(count eq 1 or count eq 2) and end_user.segment eq "gold"`, []string{"a2", "a1"}},
		{`not (end_user.segment eq "gold") and count pr`, []string{"a4", "a3"}},
		{`EVENT_TYPE_ID eq "10001"`, nil}, // paths are case-sensitive
		{`event_type_id EQ "10002" AND count Gt 1`, []string{"a2"}},
		{`authenticated_user.id eq "alice"`, []string{"a4"}},
	} {
		t.Run(tc.filter, func(t *testing.T) {
			r, got := ev.query(t, ev.consumer, url.Values{"filter": {tc.filter}})
			if r.Status != http.StatusOK {
				t.Fatalf("status %d %s", r.Status, r.Body)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
	for _, tc := range []struct {
		filter string
		pos    string
	}{
		{`count gt`, "position 9"},
		{`count zz 1`, "position 7"},
		{`(count eq 1`, "position 12"},
		{`count eq 1)`, "position 11"},
		{`count eq 1 and`, "position 15"},
		{`count co 1`, "position 10"},
		{`"x" eq 1`, "position 1"},
		{`a.b. eq 1`, "position 5"},
	} {
		t.Run("syntax "+tc.filter, func(t *testing.T) {
			r, _ := ev.query(t, ev.consumer, url.Values{"filter": {tc.filter}})
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), tc.pos) {
				t.Errorf("status %d, body %s; want 400 naming %s", r.Status, r.Body, tc.pos)
			}
		})
	}
}

func TestEventsQueryParams(t *testing.T) {
	ev := newEventsEnv(t)
	for _, tc := range []struct {
		name   string
		params url.Values
		status int
		want   []string
		total  float64
	}{
		{"user end or authenticated", url.Values{"user_id": {"alice"}}, 200, []string{"a4", "a1"}, 2},
		{"user and filter", url.Values{"user_id": {"bob"}, "filter": {`event_type_id eq "10001"`}}, 200, []string{"a3"}, 1},
		{"page size", url.Values{"size": {"2"}}, 200, []string{"a5", "a4"}, 5},
		{"second page", url.Values{"size": {"2"}, "page": {"2"}}, 200, []string{"a3", "a2"}, 5},
		{"past the end", url.Values{"size": {"2"}, "page": {"9"}}, 200, nil, 5},
		{"size 100", url.Values{"size": {"100"}}, 200, []string{"a5", "a4", "a3", "a2", "a1"}, 5},
		{"page 0", url.Values{"page": {"0"}}, 400, nil, 0},
		{"page negative", url.Values{"page": {"-1"}}, 400, nil, 0},
		{"size 0", url.Values{"size": {"0"}}, 400, nil, 0},
		{"size 101", url.Values{"size": {"101"}}, 400, nil, 0},
		{"size not a number", url.Values{"size": {"ten"}}, 400, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, got := ev.query(t, ev.consumer, tc.params)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if tc.status != 200 {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if m := r.JSON(); m["total"] != tc.total {
				t.Errorf("total %v, want %v", m["total"], tc.total)
			}
		})
	}
}

// TestEventsTenantIsolationAndScopes: tenant B's consumer never sees tenant
// A's events, whatever it asks; each route needs its own scope.
func TestEventsTenantIsolationAndScopes(t *testing.T) {
	ev := newEventsEnv(t)
	for _, params := range []url.Values{{}, {"user_id": {"alice"}}, {"filter": {`event_type_id pr`}}} {
		r, got := ev.query(t, ev.otherC, params)
		if r.Status != 200 || len(got) != 0 || r.JSON()["total"] != 0.0 {
			t.Errorf("tenant B with %v: %d %s", params, r.Status, r.Body)
		}
	}
	// B's own post stays in B.
	if r := ev.post(ev.otherC, map[string]any{"x": map[string]any{"event_type_id": "10001", "end_user": map[string]any{"id": "alice"}}}); r.Status != 200 {
		t.Fatalf("post B: %d %s", r.Status, r.Body)
	}
	if r, got := ev.query(t, ev.consumer, url.Values{"user_id": {"alice"}}); r.Status != 200 || len(got) != 2 {
		t.Errorf("tenant A sees %v", got)
	}
	for _, tc := range []struct {
		name, method, token string
		want                int
	}{
		{"post with consumer", "POST", ev.consumer, 403},
		{"query with producer", "GET", ev.producer, 403},
		{"post with platform JWT", "POST", ev.acme.AdminToken, 401},
		{"query without token", "GET", "", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []string
			if tc.token != "" {
				h = append(h, "Authorization: Bearer "+tc.token)
			}
			var body any
			if tc.method == "POST" {
				body = map[string]any{"a": map[string]any{"event_type_id": "10001"}}
			}
			if r := ev.e.Do(tc.method, eventsPath, body, h...); r.Status != tc.want {
				t.Errorf("status %d, want %d: %s", r.Status, tc.want, r.Body)
			}
		})
	}
}

func TestEventsPostLimitsOverHTTP(t *testing.T) {
	ev := newEventsEnv(t)
	var b strings.Builder
	b.WriteString("{")
	for i := range 1001 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"e` + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + jsonText(i) + `":{"event_type_id":"10001"}`)
	}
	b.WriteString("}")
	for _, tc := range []struct {
		name string
		body string
		want int
	}{
		{"empty object", `{}`, 400},
		{"array", `[]`, 400},
		{"1001 events", b.String(), 400},
		{"over 5 MiB", `{"a":{"event_type_id":"10001","username":"` + strings.Repeat("x", 5<<20) + `"}}`, 413},
		{"nested too deep", `{"a":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, 400},
		{"large but within limits", `{"a":{"event_type_id":"10001","username":"` + strings.Repeat("x", 2<<20) + `"}}`, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := ev.post(ev.producer, tc.body); r.Status != tc.want {
				t.Errorf("status %d, want %d: %.200s", r.Status, tc.want, r.Body)
			}
		})
	}
}

// TestEventsNativeAdminRoute: native events through the admin route are
// stored with the catalogue's details and found by the query.
func TestEventsNativeAdminRoute(t *testing.T) {
	ev := newEventsEnv(t)
	p := "/api/v1/admin/tenants/" + ev.acme.ID + "/events"
	r := ev.e.Do("POST", p, map[string]any{"event_type_id": 507, "end_user": map[string]any{"id": "zed"}, "phone_number": "+15550100"}, "Authorization: Bearer "+ev.acme.AdminToken)
	if r.Status != http.StatusCreated {
		t.Fatalf("emit: %d %s", r.Status, r.Body)
	}
	q := ev.e.Do("GET", eventsPath+"?user_id=zed", nil, "Authorization: Bearer "+ev.consumer)
	var page struct{ Results []map[string]any }
	json.Unmarshal(q.Body, &page)
	want := []map[string]any{{"event_type_id": "507", "event_type_details": map[string]any{"category": "COMMUNICATION", "name": "OTP SMS sent"},
		"end_user": map[string]any{"id": "zed"}, "phone_number": "+15550100", "timestamp": latchkeytest.Start.Format("2006-01-02T15:04:05.000000Z")}}
	if diff := cmp.Diff(want, page.Results); diff != "" {
		t.Errorf("native event (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name, path, token string
		body              any
		want              int
	}{
		{"external type", p, ev.acme.AdminToken, map[string]any{"event_type_id": "10001"}, 400},
		{"unknown native type", p, ev.acme.AdminToken, map[string]any{"event_type_id": "599"}, 400},
		{"meta-schema type", p, ev.acme.AdminToken, map[string]any{"event_type_id": "000"}, 400},
		{"other tenant's admin", "/api/v1/admin/tenants/" + ev.other.ID + "/events", ev.acme.AdminToken, map[string]any{"event_type_id": "507"}, 404},
		{"root admin", p, ev.e.AdminToken(), map[string]any{"event_type_id": "101"}, 201},
		{"access token", p, ev.producer, map[string]any{"event_type_id": "507"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := ev.e.Do("POST", tc.path, tc.body, "Authorization: Bearer "+tc.token); r.Status != tc.want {
				t.Errorf("status %d, want %d: %s", r.Status, tc.want, r.Body)
			}
		})
	}
}

// TestEventsRetentionWithPlatform: Platform.Run's clean-up removes events
// older than Config.EventRetention, driven by the fake clock.
func TestEventsRetentionWithPlatform(t *testing.T) {
	ev := newEventsEnv(t)
	id, secret := ev.e.OAuthClient(ev.acme, "", "event:event:producer", "event:event:consumer")
	ev.e.Clock.Advance(31 * 24 * time.Hour)    // past the default 30 days
	ev.producer = ev.e.AccessToken(id, secret) // the old tokens have expired
	ev.consumer = ev.producer
	if r := ev.post(ev.producer, map[string]any{"new": map[string]any{"event_type_id": "10001", "username": "new"}}); r.Status != 200 {
		t.Fatal(r.Status)
	}
	n, err := ev.e.Platform.Events.DeleteExpired(t.Context())
	if err != nil || n != 5 {
		t.Fatalf("DeleteExpired = %d, %v; want the 5 old events", n, err)
	}
	if _, got := ev.query(t, ev.consumer, nil); !cmp.Equal(got, []string{"a5"}) { // "new" has no count, like a5
		t.Errorf("events left: %v", got)
	}
}

// FuzzPostEventsBody drives POST /events/v1/events with arbitrary bodies:
// never a panic or a 500, and a refusal always has a problem body.
func FuzzPostEventsBody(f *testing.F) {
	e := latchkeytest.New(f)
	tn := e.NewTenant("Fuzz")
	tok := e.AuditClient(tn, "", "event:event:producer")
	for _, s := range []string{
		`{"a":{"event_type_id":"10001"}}`, `{}`, `[]`, `null`, `{"a":{"event_type_id":507}}`,
		`{"a":{"event_type_id":"10001","timestamp":"2026-01-01T00:00:00Z","end_user":{"id":"u","segment":"s"},"amr":"pwd"},"b":{"event_type_id":"x"}}`,
		`{"a":{"event_type_id":"10001","authentication":{"amr_list":["pwd",1]}}}`, `{"a":1,"a":{"event_type_id":"10001"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequestWithContext(t.Context(), "POST", eventsPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		e.Handler.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("status %d for body %q: %s", w.Code, body, w.Body)
		}
		if w.Code != http.StatusOK && !bytes.Contains(w.Body.Bytes(), []byte(`"traceId"`)) {
			t.Fatalf("refusal %d without a problem body: %s", w.Code, w.Body)
		}
	})
}
