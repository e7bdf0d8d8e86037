package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func init() {
	registerContractArea("events", contractEvents)
}

// eventsClient creates an OAuth client of tenant (by an admin JWT) with
// scopes and returns an access token of it.
func eventsClient(t *testing.T, c *contract, admin, tenant string, scopes ...string) string {
	t.Helper()
	_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + tenant + "/oauth-clients", token: admin,
		body: jsonBody(map[string]any{"name": "events-" + strings.Join(scopes, "-"), "scopes": scopes}), want: 201})
	cl := decode[map[string]any](t, body)
	return oauthToken(t, c, cl["client_id"].(string), cl["client_secret"].(string))
}

func contractEvents(t *testing.T, c *contract, f fixture) {
	const path = "/events/v1/events"
	both := eventsClient(t, c, f.acme.admin, f.acme.id, "event:event:producer", "event:event:consumer")
	producer := eventsClient(t, c, f.acme.admin, f.acme.id, "event:event:producer")
	consumer := oauthToken(t, c, f.client.id, f.client.secret) // audit:export event:event:consumer
	rootConsumer := eventsClient(t, c, f.root, f.rootTenant, "event:event:consumer")

	t.Run("post", func(t *testing.T) {
		body := jsonBody(map[string]any{
			"login":  map[string]any{"event_type_id": "10001", "end_user": map[string]any{"id": "alice", "segment": "gold"}, "count": 3},
			"native": map[string]any{"event_type_id": "507"},
			"number": map[string]any{"event_type_id": 10002, "end_user": map[string]any{"id": "bob"}},
		})
		_, got := c.do(t, call{method: "POST", path: path, token: producer, body: body, want: 200})
		res := decode[map[string]map[string]any](t, got)
		if res["login"]["status"] != "accepted" || res["number"]["status"] != "accepted" || res["native"]["status"] != "rejected" {
			t.Errorf("results %v", res)
		}
		c.do(t, call{method: "POST", path: path, token: both, body: []byte(`{}`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: path, token: both, body: []byte(`[]`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: path, token: both, body: []byte(`{"a":`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: path, token: both, body: []byte(`{"a":{}}`), contentType: "text/plain", req: reqInvalid, want: 400})
		huge := []byte(`{"a":{"event_type_id":"10001","username":"` + strings.Repeat("x", 6<<20) + `"}}`)
		c.do(t, call{method: "POST", path: path, token: both, body: huge, req: reqProse, want: 413})
		c.do(t, call{method: "POST", path: path, token: consumer, body: body, want: 403})
		// The validator does not check OAuth 2.0 security requirements, so a
		// request without a token validates.
		c.do(t, call{method: "POST", path: path, body: body, req: reqProse, want: 401})
		c.do(t, call{method: "POST", path: path, token: "not.a.jwt", body: body, want: 401})
		c.do(t, call{method: "POST", path: path, token: f.acme.admin, body: body, want: 401}) // a platform JWT is not an access token
	})

	t.Run("query", func(t *testing.T) {
		_, got := c.do(t, call{method: "GET", path: path, token: consumer, want: 200})
		first := decode[struct {
			Page, Size, Total int
			Results           []map[string]any
		}](t, got)
		// The two posted events, and the native events 401 that creating
		// the fixture's three users (acme-admin, alice, bob) appended.
		byType := map[any]int{}
		for _, r := range first.Results {
			byType[r["event_type_id"]]++
		}
		if first.Page != 1 || first.Size != 20 || first.Total != 5 || byType["401"] != 3 || byType["10001"]+byType["10002"] != 2 {
			t.Errorf("default page %+v", first)
		}
		q := url.Values{"user_id": {"alice"}, "filter": {`event_type_id eq "10001" and (count gt 2 or end_user.segment eq "x")`}, "page": {"1"}, "size": {"5"}}
		_, got = c.do(t, call{method: "GET", path: path + "?" + q.Encode(), token: both, want: 200})
		type page struct{ Results []map[string]any }
		if n := len(decode[page](t, got).Results); n != 1 {
			t.Errorf("filtered query returned %d events, want 1", n)
		}
		// Tenant isolation: the root tenant's consumer sees none of acme's events.
		_, got = c.do(t, call{method: "GET", path: path, token: rootConsumer, want: 200})
		if diff := cmp.Diff(0, len(decode[page](t, got).Results)); diff != "" {
			t.Errorf("another tenant's events (-want +got):\n%s", diff)
		}
		_, got = c.do(t, call{method: "GET", path: path + "?filter=" + url.QueryEscape(`count gt`), token: consumer, want: 400})
		if msg := fmt.Sprint(decode[map[string]any](t, got)["errors"]); !strings.Contains(msg, "position 9") {
			t.Errorf("filter error without its position: %s", got)
		}
		c.do(t, call{method: "GET", path: path + "?size=101", token: consumer, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: path + "?page=0", token: consumer, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: path + "?page=x", token: consumer, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: path, token: producer, want: 403})
		c.do(t, call{method: "GET", path: path, req: reqProse, want: 401})
		c.do(t, call{method: "GET", path: path, token: "not.a.jwt", want: 401})
	})

	t.Run("emit native event", func(t *testing.T) {
		p := "/api/v1/admin/tenants/" + f.acme.id + "/events"
		otp := jsonBody(map[string]any{"event_type_id": "507", "end_user": map[string]any{"id": "alice"}, "phone_number": "+15550100"})
		_, got := c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: otp, want: 201})
		if id := decode[map[string]string](t, got)["id"]; id == "" {
			t.Error("no id")
		}
		c.do(t, call{method: "POST", path: p, token: f.root, body: otp, want: 201})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"event_type_id": "10001"}), want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: []byte(`{"event_type_id":`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: p, token: f.acme.user, body: otp, want: 403})
		c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.rootTenant + "/events", token: f.acme.admin, body: otp, want: 404})
		c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/00000000-0000-4000-8000-000000000000/events", token: f.root, body: otp, want: 404})
		c.do(t, call{method: "POST", path: p, body: otp, req: reqInvalid, want: 401})
		c.do(t, call{method: "POST", path: p, token: consumer, body: otp, want: 401})
		c.do(t, call{method: "POST", path: p, header: http.Header{"Authorization": {"Basic YWRtaW46eA=="}}, body: otp, req: reqInvalid, want: 401})
	})
}
