package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/latchkeytest"
)

type streamEnv struct {
	e           *latchkeytest.Env
	acme, other latchkeytest.Tenant
	admin       string // acme's eventstream:subscription:administrator token
	otherAdmin  string
	noScope     string // acme token without the scope
}

func newStreamEnv(t *testing.T, opts ...latchkeytest.Option) *streamEnv {
	t.Helper()
	e := latchkeytest.New(t, opts...)
	s := &streamEnv{e: e, acme: e.NewTenant("Acme"), other: e.NewTenant("Other")}
	s.admin = e.AuditClient(s.acme, "", "eventstream:subscription:administrator", "event:event:producer")
	s.otherAdmin = e.AuditClient(s.other, "", "eventstream:subscription:administrator")
	s.noScope = e.AuditClient(s.acme, "", "event:event:consumer")
	return s
}

func bearerH(tok string) string { return "Authorization: Bearer " + tok }

type envelope struct {
	Resources []string          `json:"resources"`
	Links     map[string]string `json:"links"`
	Config    json.RawMessage   `json:"config"`
	Cursor    string            `json:"cursor"`
}

func (s *streamEnv) envelope(t *testing.T, r latchkeytest.Response, want int) envelope {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	var env envelope
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// TestEventStreamRoutes walks both route sets: tenant in the path, and in
// the acting-tenant-id / tenant-id headers.
func TestEventStreamRoutes(t *testing.T) {
	s := newStreamEnv(t)
	e := s.e
	inPath := "/eventstream/v1/tenants/" + s.acme.Code
	bases := map[string][]string{
		inPath:            {bearerH(s.admin)},
		"/eventstream/v1": {bearerH(s.admin), "acting-tenant-id: " + s.acme.Code, "tenant-id: " + s.other.Code},
	}
	for base, hdr := range bases {
		t.Run(base, func(t *testing.T) {
			body := map[string]any{"endpoint": "https://203.0.113.10/x", "eventTypes": []string{"401", "10001"},
				"auth": map[string]any{"type": "hmac", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}
			r := e.Do("POST", base+"/subscriptions", body, hdr...)
			env := s.envelope(t, r, 201)
			if strings.Contains(string(r.Body), "whsec_") || strings.Contains(string(r.Body), "MfKQ9r8") {
				t.Errorf("the secret is returned: %s", r.Body)
			}
			var cfg map[string]any
			json.Unmarshal(env.Config, &cfg)
			id := cfg["id"].(string)
			if len(env.Resources) != 1 || env.Resources[0] != id || cfg["maxPerSecond"] != 100.0 || cfg["numberOfRetries"] != 3.0 || cfg["auth"].(map[string]any)["type"] != "hmac" {
				t.Errorf("created envelope %s", r.Body)
			}
			if env.Links["self"] != base+"/subscriptions/"+id {
				t.Errorf("links %v", env.Links)
			}
			env = s.envelope(t, e.Do("GET", base+"/subscriptions/"+id, nil, hdr...), 200)
			json.Unmarshal(env.Config, &cfg)
			if cfg["id"] != id {
				t.Errorf("get: %s", env.Config)
			}
			r = e.Do("PATCH", base+"/subscriptions/"+id, map[string]any{"endpoint": "https://elsewhere.example.com/"}, hdr...)
			if r.Status != 400 {
				t.Errorf("PATCH endpoint: %d %s", r.Status, r.Body)
			}
			r = e.Do("PATCH", base+"/subscriptions/"+id, map[string]any{"id": "another"}, hdr...)
			if r.Status != 400 {
				t.Errorf("PATCH id: %d %s", r.Status, r.Body)
			}
			// A body that is not a JSON object is refused, null included
			// (it must not pass as an empty update).
			for _, bad := range []string{"null", "[]", "7"} {
				if r = e.Do("PATCH", base+"/subscriptions/"+id, bad, hdr...); r.Status != 400 {
					t.Errorf("PATCH %s: %d %s", bad, r.Status, r.Body)
				}
			}
			env = s.envelope(t, e.Do("PATCH", base+"/subscriptions/"+id, map[string]any{"maxPerSecond": 7, "numberOfRetries": 0}, hdr...), 200)
			json.Unmarshal(env.Config, &cfg)
			if cfg["maxPerSecond"] != 7.0 || cfg["numberOfRetries"] != 0.0 {
				t.Errorf("patched: %s", env.Config)
			}
			for range 2 {
				s.envelope(t, e.Do("POST", base+"/subscriptions", body, hdr...), 201)
			}
			env = s.envelope(t, e.Do("GET", base+"/subscriptions?limit=2", nil, hdr...), 200)
			var list []map[string]any
			json.Unmarshal(env.Config, &list)
			if len(list) != 2 || env.Cursor == "" || env.Links["next"] == "" {
				t.Fatalf("first page: %s", env.Config)
			}
			first := env.Resources
			env = s.envelope(t, e.Do("GET", base+"/subscriptions?limit=2&cursor="+env.Cursor, nil, hdr...), 200)
			json.Unmarshal(env.Config, &list)
			if len(list) < 1 || slices.Contains(env.Resources, first[0]) || slices.Contains(env.Resources, first[1]) {
				t.Errorf("second page: %v after %v", env.Resources, first)
			}
			r = e.Do("GET", base+"/subscriptions/"+id+"/dead-letters", nil, hdr...)
			if r.Status != 200 || !strings.Contains(string(r.Body), `"deadLetters":[]`) {
				t.Errorf("dead letters: %d %s", r.Status, r.Body)
			}
			r = e.Do("POST", base+"/subscriptions/"+id+"/dead-letters/redeliver", nil, hdr...)
			if r.Status != 202 {
				t.Errorf("redeliver: %d %s", r.Status, r.Body)
			}
			// An empty list of ids names no letter: it must not mean "every
			// letter", which only a request without ids asks for.
			if r = e.Do("POST", base+"/subscriptions/"+id+"/dead-letters/redeliver", `{"ids":[]}`, hdr...); r.Status != 400 {
				t.Errorf("redeliver ids []: %d %s", r.Status, r.Body)
			}
			if r = e.Do("DELETE", base+"/subscriptions/"+id, nil, hdr...); r.Status != 204 {
				t.Errorf("delete: %d %s", r.Status, r.Body)
			}
			if r = e.Do("GET", base+"/subscriptions/"+id, nil, hdr...); r.Status != 404 {
				t.Errorf("get after delete: %d", r.Status)
			}
			ds := map[string]any{"connect": map[string]any{"idpUri": "https://203.0.113.11/scim", "clientId": "c1"},
				"groupConfig": []map[string]any{{"nodeType": "user", "relationshipType": "member"}, {"nodeType": "group", "relationshipType": "member"}}}
			env = s.envelope(t, e.Do("POST", base+"/directory-sync", ds, hdr...), 201)
			json.Unmarshal(env.Config, &cfg)
			if cfg["connect"].(map[string]any)["idpUri"] != "https://203.0.113.11/scim" {
				t.Errorf("directory sync: %s", env.Config)
			}
			ds["groupConfig"] = []map[string]any{{"nodeType": "user", "relationshipType": "member"}, {"nodeType": "user", "relationshipType": "member"}}
			if r = e.Do("POST", base+"/directory-sync", ds, hdr...); r.Status != 400 {
				t.Errorf("duplicate mapping: %d %s", r.Status, r.Body)
			}
			if r = e.Do("POST", base+"/directory-sync", map[string]any{"connect": ds["connect"]}, hdr...); r.Status != 400 {
				t.Errorf("no groupConfig: %d %s", r.Status, r.Body)
			}
			if r = e.Do("DELETE", base+"/directory-sync/"+cfg["id"].(string), nil, hdr...); r.Status != 204 {
				t.Errorf("delete directory sync: %d %s", r.Status, r.Body)
			}
		})
	}
	t.Run("tenant", func(t *testing.T) {
		if r := e.Do("GET", "/eventstream/v1/subscriptions", nil, bearerH(s.admin)); r.Status != 400 {
			t.Errorf("no tenant: %d %s", r.Status, r.Body)
		}
		if r := e.Do("GET", "/eventstream/v1/subscriptions", nil, bearerH(s.admin), "tenant-id: "+s.acme.Code); r.Status != 200 {
			t.Errorf("tenant-id header: %d %s", r.Status, r.Body)
		}
		if r := e.Do("GET", "/eventstream/v1/tenants/"+s.acme.Code+"/subscriptions", nil, bearerH(s.otherAdmin)); r.Status != 404 {
			t.Errorf("another tenant's token: %d %s", r.Status, r.Body)
		}
		if r := e.Do("GET", "/eventstream/v1/subscriptions", nil, bearerH(s.otherAdmin), "acting-tenant-id: "+s.acme.Code); r.Status != 404 {
			t.Errorf("another tenant in acting-tenant-id: %d %s", r.Status, r.Body)
		}
		if r := e.Do("GET", "/eventstream/v1/tenants/"+s.acme.Code+"/subscriptions", nil, bearerH(s.noScope)); r.Status != 403 {
			t.Errorf("without the scope: %d %s", r.Status, r.Body)
		}
		if r := e.Do("GET", "/eventstream/v1/tenants/"+s.acme.Code+"/subscriptions", nil); r.Status != 401 {
			t.Errorf("without a token: %d %s", r.Status, r.Body)
		}
		r := e.Do("POST", "/eventstream/v1/tenants/"+s.acme.Code+"/subscriptions", map[string]any{"endpoint": "http://127.0.0.1:9/x", "eventTypes": []string{"401"}}, bearerH(s.admin))
		if r.Status != 400 || !strings.Contains(string(r.Body), "endpoint") {
			t.Errorf("loopback endpoint without -allow-private-endpoints: %d %s", r.Status, r.Body)
		}
		r = e.Do("POST", "/eventstream/v1/tenants/"+s.acme.Code+"/subscriptions", `{"endpoint":"https://203.0.113.12","eventTypes":["401"],"maxPerSecond":1.5}`, bearerH(s.admin))
		if r.Status != 400 {
			t.Errorf("fractional maxPerSecond: %d %s", r.Status, r.Body)
		}
	})
}

// TestEventStreamDeliversThroughPlatformRun: with private endpoints allowed,
// Platform.Run's engine pushes a posted event to a local receiver.
func TestEventStreamDeliversThroughPlatformRun(t *testing.T) {
	s := newStreamEnv(t, func(c *latchkey.Config) { c.AllowPrivateEndpoints = true })
	var mu sync.Mutex
	got := make(chan string, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got <- string(b)
	}))
	defer rcv.Close()
	e := s.e
	r := e.Do("POST", "/eventstream/v1/tenants/"+s.acme.Code+"/subscriptions", map[string]any{"endpoint": rcv.URL, "eventTypes": []string{"10001"}}, bearerH(s.admin))
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	e.RunWorkers()
	if r := e.Do("POST", "/events/v1/events", map[string]any{"a": map[string]any{"event_type_id": "10001", "count": 1}}, bearerH(s.admin)); r.Status != 200 {
		t.Fatalf("post event: %d %s", r.Status, r.Body)
	}
	select {
	case b := <-got:
		if !strings.Contains(b, `"specversion":"1.0"`) || !strings.Contains(b, `"event_type_id":"10001"`) {
			t.Errorf("delivered %s", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered")
	}
}

// TestDirectorySyncPushesUserEvents: a native 401 "User created" event
// emitted into the tenant's log (here through the admin emit route) is
// pushed to the idpUri of a directory-sync subscription with a user
// mapping; a 405 group event, not mapped, is not.
func TestDirectorySyncPushesUserEvents(t *testing.T) {
	s := newStreamEnv(t, func(c *latchkey.Config) { c.AllowPrivateEndpoints = true })
	got := make(chan string, 10)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
	}))
	defer idp.Close()
	e := s.e
	r := e.Do("POST", "/eventstream/v1/directory-sync", map[string]any{"connect": map[string]any{"idpUri": idp.URL + "/scim", "clientId": "idp-client-7"},
		"groupConfig": []map[string]any{{"nodeType": "user", "relationshipType": "member"}}}, bearerH(s.admin), "acting-tenant-id: "+s.acme.Code)
	if r.Status != 201 {
		t.Fatalf("create directory sync: %d %s", r.Status, r.Body)
	}
	e.RunWorkers()
	for _, ev := range []map[string]any{{"event_type_id": "405"}, {"event_type_id": "401", "username": "dora-the-user", "new_state": "active"}} {
		r = e.Do("POST", "/api/v1/admin/tenants/"+s.acme.ID+"/events", ev, bearerH(s.acme.AdminToken))
		if r.Status != 201 {
			t.Fatalf("emit: %d %s", r.Status, r.Body)
		}
	}
	select {
	case b := <-got:
		for _, want := range []string{`"type":"com.latchkey.directory.401"`, `"username":"dora-the-user"`, `"clientId":"idp-client-7"`, `"relationshipType":"member"`} {
			if !strings.Contains(b, want) {
				t.Errorf("pushed %s; want %s in it", b, want)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing pushed")
	}
}
