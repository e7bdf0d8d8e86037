package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func init() {
	registerContractArea("notification", contractNotification)
}

// notifyClient creates an OAuth client of tenant with scopes and returns
// its client_id and an access token of it.
func notifyClient(t *testing.T, c *contract, admin, tenant string, scopes ...string) (id, token string) {
	t.Helper()
	_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + tenant + "/oauth-clients", token: admin,
		body: jsonBody(map[string]any{"name": "notify-" + strings.Join(scopes, "-"), "scopes": scopes}), want: 201})
	cl := decode[map[string]any](t, body)
	return cl["client_id"].(string), oauthToken(t, c, cl["client_id"].(string), cl["client_secret"].(string))
}

func contractNotification(t *testing.T, c *contract, f fixture) {
	const base = "/notification/v1/subscriptions"
	_, admin := notifyClient(t, c, f.acme.admin, f.acme.id, "notification:consent:administrator")
	reader, consumer := notifyClient(t, c, f.acme.admin, f.acme.id, "notification:consent:consumer")
	_, otherConsumer := notifyClient(t, c, f.acme.admin, f.acme.id, "notification:consent:consumer")
	_, producer := notifyClient(t, c, f.acme.admin, f.acme.id, "event:event:producer")

	var id string
	t.Run("create", func(t *testing.T) {
		body := jsonBody(map[string]any{"event_type_ids": []string{"10001", "401"}, "client_id": reader})
		_, got := c.do(t, call{method: "POST", path: base, token: admin, body: body, want: 201})
		sub := decode[struct {
			ID           string
			Subscription struct {
				ClientID string `json:"client_id"`
				PageSize int    `json:"notification_page_size"`
			}
		}](t, got)
		if sub.Subscription.ClientID != reader || sub.Subscription.PageSize != 100 || sub.ID == "" {
			t.Errorf("created %s", got)
		}
		id = sub.ID
		for _, bad := range []string{`{}`, `{"event_type_ids":[],"client_id":"c"}`, `{"event_type_ids":["10001","10001"],"client_id":"c"}`,
			`{"event_type_ids":["12"],"client_id":"c"}`, `{"event_type_ids":["10001"],"client_id":"a b"}`, `{"event_type_ids":["10001"]}`,
			`{"event_type_ids":"10001","client_id":"c"}`, `{"event_type_ids":["10001"],"client_id":"c","notification_page_size":0}`, `{"a":`} {
			c.do(t, call{method: "POST", path: base, token: admin, body: []byte(bad), req: reqInvalid, want: 400})
		}
		huge := []byte(`{"event_type_ids":["10001"],"client_id":"` + strings.Repeat("x", 70<<10) + `"}`)
		c.do(t, call{method: "POST", path: base, token: admin, body: huge, req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: base, token: consumer, body: body, want: 403})
		c.do(t, call{method: "POST", path: base, body: body, req: reqProse, want: 401})
	})

	t.Run("get", func(t *testing.T) {
		_, got := c.do(t, call{method: "GET", path: base + "/" + id, token: consumer, want: 200})
		if !strings.Contains(string(got), `"number_of_remaining_notifications":0`) {
			t.Errorf("status of a new subscription: %s", got)
		}
		c.do(t, call{method: "GET", path: base + "/" + id, token: otherConsumer, req: reqProse, want: 403})
		c.do(t, call{method: "GET", path: base + "/" + id, token: admin, want: 403})
		c.do(t, call{method: "GET", path: base + "/no-such-id", token: consumer, want: 404})
		c.do(t, call{method: "GET", path: base + "/a%20b", token: consumer, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: base + "/" + id, req: reqProse, want: 401})
	})

	t.Run("retrieve", func(t *testing.T) {
		c.do(t, call{method: "POST", path: "/events/v1/events", token: producer, want: 200,
			body: jsonBody(map[string]any{"a": map[string]any{"event_type_id": "10001"}, "b": map[string]any{"event_type_id": "10002"}})})
		_, got := c.do(t, call{method: "GET", path: base + "/" + id + "/notifications", token: consumer, want: 200})
		page := decode[struct {
			Page, Size int
			Results    []map[string]any
		}](t, got)
		if page.Page != 1 || page.Size != 1 || len(page.Results) != 1 || page.Results[0]["event_type_id"] != "10001" {
			t.Errorf("first retrieval %s", got)
		}
		_, got = c.do(t, call{method: "GET", path: base + "/" + id + "/notifications?wait=0", token: consumer, want: 200})
		if page := decode[struct{ Page, Size int }](t, got); page.Page != 2 || page.Size != 0 {
			t.Errorf("second retrieval %s", got)
		}
		_, got = c.do(t, call{method: "GET", path: base + "/" + id, token: consumer, want: 200})
		if !strings.Contains(string(got), `"last_request_date"`) {
			t.Errorf("status after a retrieval: %s", got)
		}
		c.do(t, call{method: "GET", path: base + "/" + id + "/notifications?wait=31", token: consumer, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: base + "/" + id + "/notifications", token: otherConsumer, req: reqProse, want: 403})
		c.do(t, call{method: "GET", path: base + "/nope/notifications", token: consumer, want: 404})
		c.do(t, call{method: "GET", path: base + "/" + id + "/notifications", req: reqProse, want: 401})
	})

	t.Run("acknowledged retrieval", func(t *testing.T) {
		body := jsonBody(map[string]any{"event_type_ids": []string{"10005"}, "client_id": reader, "notification_page_size": 1, "ack_deadline_seconds": 5})
		_, got := c.do(t, call{method: "POST", path: base, token: admin, body: body, want: 201})
		if !strings.Contains(string(got), `"ack_deadline_seconds":5`) {
			t.Errorf("created %s", got)
		}
		sid := decode[struct{ ID string }](t, got).ID
		_, got = c.do(t, call{method: "GET", path: base + "/" + id, token: consumer, want: 200})
		if !strings.Contains(string(got), `"ack_deadline_seconds":30`) {
			t.Errorf("the default deadline is not shown: %s", got)
		}
		for _, bad := range []string{`{"event_type_ids":["10001"],"client_id":"c","ack_deadline_seconds":0}`,
			`{"event_type_ids":["10001"],"client_id":"c","ack_deadline_seconds":601}`, `{"event_type_ids":["10001"],"client_id":"c","ack_deadline_seconds":"5"}`} {
			c.do(t, call{method: "POST", path: base, token: admin, body: []byte(bad), req: reqInvalid, want: 400})
		}
		c.do(t, call{method: "POST", path: "/events/v1/events", token: producer, want: 200,
			body: jsonBody(map[string]any{"a": map[string]any{"event_type_id": "10005"}, "b": map[string]any{"event_type_id": "10005"}})})
		type page struct {
			Page, Size int
			Results    []map[string]any
		}
		retrieve := func() page {
			_, got := c.do(t, call{method: "GET", path: base + "/" + sid + "/notifications?ack=true", token: consumer, want: 200})
			return decode[page](t, got)
		}
		ack := func(n int, want int) {
			c.do(t, call{method: "POST", path: base + "/" + sid + "/notifications/ack", token: consumer, body: jsonBody(map[string]any{"page": n}), want: want})
		}
		p1, p2 := retrieve(), retrieve()
		if p1.Page != 1 || p1.Size != 1 || p2.Page != 2 || p2.Size != 1 {
			t.Fatalf("leased pages %+v %+v", p1, p2)
		}
		ack(1, 204)
		ack(1, 204) // twice
		c.clock.Advance(6 * time.Second)
		again := retrieve() // page 2 lapsed: handed out again, as it was
		if diff := cmp.Diff(p2, again); diff != "" {
			t.Errorf("lapsed page handed out again (-first +again):\n%s", diff)
		}
		ack(2, 204)
		if p := retrieve(); p.Page != 3 || p.Size != 0 {
			t.Errorf("after confirmations: %+v, want empty page 3", p)
		}
		ack(3, 204) // an empty page needs none, but may have one
		c.do(t, call{method: "POST", path: "/events/v1/events", token: producer, want: 200,
			body: jsonBody(map[string]any{"c": map[string]any{"event_type_id": "10005"}})})
		p4 := retrieve()
		if p4.Page != 4 || p4.Size != 1 {
			t.Errorf("page 4 %+v", p4)
		}
		remaining := func() string {
			_, got := c.do(t, call{method: "GET", path: base + "/" + sid, token: consumer, want: 200})
			return string(got)
		}
		if got := remaining(); !strings.Contains(got, `"number_of_remaining_notifications":0`) {
			t.Errorf("status while page 4 is leased: %s", got)
		}
		c.clock.Advance(6 * time.Second)
		ack(4, 409) // lapsed
		if got := remaining(); !strings.Contains(got, `"number_of_remaining_notifications":1`) {
			t.Errorf("status once page 4 lapsed: %s", got)
		}
		// The next retrieval of any poller gets the lapsed page: a plain
		// one consumes it.
		_, got = c.do(t, call{method: "GET", path: base + "/" + sid + "/notifications", token: consumer, want: 200})
		if diff := cmp.Diff(p4, decode[page](t, got)); diff != "" {
			t.Errorf("plain retrieval of the lapsed page (-first +again):\n%s", diff)
		}
		ack(4, 204) // handed out by a plain retrieval
		c.clock.Advance(6 * time.Second)
		if p := retrieve(); p.Page != 5 || p.Size != 0 {
			t.Errorf("after the plain retrieval: %+v, want empty page 5", p)
		}
		ack(9, 404)
		c.do(t, call{method: "GET", path: base + "/" + sid + "/notifications?ack=yes", token: consumer, req: reqInvalid, want: 400})
		for _, bad := range []string{`{}`, `{"page":0}`, `{"page":"1"}`, `{"page":1.5}`, `null`, `[1]`, `{"page":`} {
			c.do(t, call{method: "POST", path: base + "/" + sid + "/notifications/ack", token: consumer, body: []byte(bad), req: reqInvalid, want: 400})
		}
		c.do(t, call{method: "POST", path: base + "/" + sid + "/notifications/ack", token: consumer, body: []byte(`{"page":1,"x":"` + strings.Repeat("y", 2<<10) + `"}`), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: base + "/" + sid + "/notifications/ack", token: otherConsumer, body: jsonBody(map[string]any{"page": 1}), req: reqProse, want: 403})
		c.do(t, call{method: "POST", path: base + "/" + sid + "/notifications/ack", token: admin, body: jsonBody(map[string]any{"page": 1}), want: 403})
		c.do(t, call{method: "POST", path: base + "/nope/notifications/ack", token: consumer, body: jsonBody(map[string]any{"page": 1}), want: 404})
		c.do(t, call{method: "POST", path: base + "/" + sid + "/notifications/ack", body: jsonBody(map[string]any{"page": 1}), req: reqProse, want: 401})
	})

	t.Run("delete", func(t *testing.T) {
		c.do(t, call{method: "DELETE", path: base + "/" + id, token: consumer, want: 403})
		c.do(t, call{method: "DELETE", path: base + "/a%20b", token: admin, req: reqInvalid, want: 400})
		c.do(t, call{method: "DELETE", path: base + "/" + id, req: reqProse, want: 401})
		_, got := c.do(t, call{method: "DELETE", path: base + "/" + id, token: admin, want: 200})
		if !strings.Contains(string(got), `"code":"UNSUBSCRIBED"`) {
			t.Errorf("unsubscribe answer %s", got)
		}
		c.do(t, call{method: "DELETE", path: base + "/" + id, token: admin, want: 404})
	})
}
