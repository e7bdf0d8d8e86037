package httpapi_test

import (
	"strings"
	"testing"

	"github.com/latchkey/latchkey/latchkeytest"
)

// FuzzEventStreamBodies sends arbitrary bodies to the event-stream routes
// that take one (add, update, directory sync, redeliver) with the right
// tenant and scope: no body may give a 5xx, and no answer may carry a
// secret that was sent.
func FuzzEventStreamBodies(f *testing.F) {
	e := latchkeytest.New(f)
	acme := e.NewTenant("Acme")
	tok := e.AuditClient(acme, "", "eventstream:subscription:administrator")
	base := "/eventstream/v1/tenants/" + acme.Code
	r := e.Do("POST", base+"/subscriptions", map[string]any{"endpoint": "https://203.0.113.10/x", "eventTypes": []string{"401"}}, bearer(tok))
	if r.Status != 201 {
		f.Fatalf("create: %d %s", r.Status, r.Body)
	}
	one := base + "/subscriptions/" + r.JSON()["resources"].([]any)[0].(string)
	targets := []struct{ method, path string }{
		{"POST", base + "/subscriptions"}, {"PATCH", one}, {"POST", base + "/directory-sync"}, {"POST", one + "/dead-letters/redeliver"},
	}
	for i := range targets {
		for _, seed := range []string{
			`{"endpoint":"https://203.0.113.10/h","eventTypes":["401","10001"],"maxPerSecond":5,"numberOfRetries":0,"auth":{"type":"hmac","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}`,
			`{"endpoint":"http://[::1]/","eventTypes":["10000"],"auth":{"type":"basic","username":"a:b","password":"seekrit-pw"}}`,
			`{"eventTypes":[],"maxPerSecond":1e99,"auth":{"type":"bearer","token":"tok\r\nX: y"}}`,
			`{"connect":{"idpUri":"https://203.0.113.11/scim","clientId":"c"},"groupConfig":[{"nodeType":"user","relationshipType":"member"},{"nodeType":"user","relationshipType":"member"}]}`,
			`{"ids":["a","b"]}`, `{}`, `[]`, `null`, ``, `{"endpoint":`,
		} {
			f.Add(uint8(i), seed)
		}
	}
	f.Fuzz(func(t *testing.T, pick uint8, body string) {
		tg := targets[int(pick)%len(targets)]
		resp := e.For(t).Do(tg.method, tg.path, []byte(body), bearer(tok))
		if resp.Status >= 500 {
			t.Fatalf("%s %s with body %q: %d %s", tg.method, tg.path, body, resp.Status, resp.Body)
		}
		for _, secret := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "seekrit-pw"} {
			if strings.Contains(body, secret) && strings.Contains(string(resp.Body), secret) {
				t.Fatalf("the answer carries the secret: %s", resp.Body)
			}
		}
	})
}
