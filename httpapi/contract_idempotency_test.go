package httpapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
)

func init() {
	registerContractArea("idempotency", contractIdempotency)
}

// contractIdempotency runs the Idempotency-Key rules (API.md "safe
// retries") on every creating POST, found in Server.Routes, with one
// credential per kind of authentication: a retry while the first runs is
// 409, the same request again is the first answer replayed, another body
// under the key is 422, and a malformed key is 400.
func contractIdempotency(t *testing.T, c *contract, f fixture) {
	creds := map[string]call{}
	cred := func(auth string) call {
		if cl, ok := creds[auth]; ok {
			return cl
		}
		var cl call
		switch {
		case auth == "platform-jwt", strings.HasPrefix(auth, "vault:"):
			cl.token = f.acme.admin
		case strings.HasPrefix(auth, "oauth:"):
			cl.token = eventsClient(t, c, f.acme.admin, f.acme.id, strings.TrimPrefix(auth, "oauth:"))
			cl.header = http.Header{"Acting-Tenant-Id": {f.acme.code}}
		case strings.HasPrefix(auth, "apikey:"):
			cl.header = keyHeader(apiKeyOf(t, c, f.acme.admin, f.acme.id, "", strings.TrimPrefix(auth, "apikey:")))
		default:
			t.Fatalf("no credential for %s", auth)
		}
		creds[auth] = cl
		return cl
	}
	// A user of its own, so the tokens and authenticators made here are
	// not in the other areas' lists.
	_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/users", token: f.acme.admin,
		body: jsonBody(map[string]any{"name": "idem-user", "password": "idem-password-1"}), want: 201})
	user := decode[map[string]any](t, body)["id"].(string)
	params := strings.NewReplacer("{tenantId}", f.acme.id, "{tenantCode}", f.acme.code, "{tenant}", f.acme.code,
		"{userId}", user, "{tokenId}", identity.NewGUID())
	n := 0
	for _, r := range c.api.Routes() {
		if !r.Idempotent {
			continue
		}
		n++
		t.Run(r.Method+" "+r.Pattern, func(t *testing.T) {
			base := cred(r.Auth)
			path := params.Replace(r.Pattern)
			if r.Pattern == "/api/v1/admin/tenants" {
				base.token = f.root
			}
			with := func(key string, body []byte, want int) call {
				cl := base
				cl.method, cl.path, cl.body, cl.req, cl.want = "POST", path, body, reqAny, want
				cl.header = http.Header{"Idempotency-Key": {key}}
				for k, v := range base.header {
					cl.header[k] = v
				}
				return cl
			}
			key := "retry-" + identity.NewGUID()
			// The retry sent while the first request runs: 409.
			var once atomic.Bool
			httpapi.SetIdempotencyHook(c.api, func(*http.Request) {
				if once.CompareAndSwap(false, true) {
					c.do(t, with(key, []byte(`{}`), 409))
				}
			})
			first, firstBody := c.doAny(t, with(key, []byte(`{}`), 0))
			httpapi.SetIdempotencyHook(c.api, nil)
			if !once.Load() {
				t.Fatal("the request did not reserve its key")
			}
			if first.StatusCode >= 500 || first.StatusCode == 429 || first.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("first answer %d %v: %s", first.StatusCode, first.Header, firstBody)
			}
			again, againBody := c.do(t, with(key, []byte(`{}`), first.StatusCode))
			if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(againBody, firstBody) {
				t.Errorf("retry: %v %s, want the first answer %s replayed", again.Header, againBody, firstBody)
			}
			c.do(t, with(key, []byte(`{"other":true}`), 422))
			c.do(t, with(strings.Repeat("k", 256), []byte(`{}`), 400))
			c.do(t, with("", []byte(`{}`), 400))
			c.do(t, with("tab\tkey", []byte(`{}`), 400))
		})
	}
	if n < 20 {
		t.Errorf("%d creating POSTs honour Idempotency-Key, want every one of them (20 or more)", n)
	}
}

// doAny is do for an exchange whose status is not known beforehand (any
// status the document lists for the operation).
func (c *contract) doAny(t *testing.T, cl call) (*http.Response, []byte) {
	t.Helper()
	cl.want = -1
	return c.do(t, cl)
}
