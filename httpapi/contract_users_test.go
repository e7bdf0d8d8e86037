package httpapi_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Contract scenarios of the administration lists the latchkey command
// reads: tenants, users, password schemes, OAuth clients and their
// deletion.

func init() {
	registerContractArea("users", contractAdminLists)
}

func contractAdminLists(t *testing.T, c *contract, f fixture) {
	acme := "/api/v1/admin/tenants/" + f.acme.id
	root := "/api/v1/admin/tenants/" + f.rootTenant
	t.Run("list tenants", func(t *testing.T) {
		p := "/api/v1/admin/tenants"
		_, body := c.do(t, call{method: "GET", path: p + "?limit=1000", token: f.root, want: 200})
		page := decode[struct {
			Total     int              `json:"total"`
			Limit     int              `json:"limit"`
			Resources []map[string]any `json:"resources"`
		}](t, body)
		if page.Total < 2 || len(page.Resources) != page.Total || page.Limit != 1000 {
			t.Errorf("root admin's list: %s", body)
		}
		_, body = c.do(t, call{method: "GET", path: p + "?code=" + f.acme.code, token: f.root, want: 200})
		if got := decode[map[string]any](t, body); got["total"] != float64(1) {
			t.Errorf("by code: %s", body)
		}
		// A tenant admin sees its own tenant only.
		_, body = c.do(t, call{method: "GET", path: p, token: f.acme.admin, want: 200})
		got := decode[map[string]any](t, body)
		if res := got["resources"].([]any); got["total"] != float64(1) || len(res) != 1 || res[0].(map[string]any)["id"] != f.acme.id {
			t.Errorf("tenant admin's list: %s", body)
		}
		c.do(t, call{method: "GET", path: p + "?limit=1001", token: f.root, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: p + "?skip=x", token: f.root, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: p, token: f.acme.user, want: 403})
		platformUnauthenticated(t, c, f, "GET", p, nil)
	})
	t.Run("list users", func(t *testing.T) {
		c.do(t, call{method: "POST", path: acme + "/users", token: f.acme.admin, body: jsonBody(map[string]any{"name": "zoe", "password": "zoe-password-1",
			"email": "zoe@example.com", "emailVerified": true, "displayName": "Zoe Z", "givenName": "Zoe", "familyName": "Zed", "externalId": "crm-7"}), want: 201})
		c.do(t, call{method: "POST", path: acme + "/users", token: f.acme.admin, body: jsonBody(map[string]any{"name": "zed", "password": "zed-password-1", "externalId": "crm-7"}), want: 409})
		c.do(t, call{method: "POST", path: acme + "/users", token: f.acme.admin, body: jsonBody(map[string]any{"name": "yan", "password": "yan-password-1", "email": "not an address"}), req: reqInvalid, want: 400})
		_, body := c.do(t, call{method: "GET", path: acme + "/users?name=zoe", token: f.acme.admin, want: 200})
		page := decode[struct {
			Total     int              `json:"total"`
			Resources []map[string]any `json:"resources"`
		}](t, body)
		if page.Total != 1 || len(page.Resources) != 1 {
			t.Fatalf("by name: %s", body)
		}
		zoe := page.Resources[0]
		delete(zoe, "id")
		delete(zoe, "createdAt")
		want := map[string]any{"name": "zoe", "roles": []any{"user"}, "email": "zoe@example.com", "emailVerified": true, "displayName": "Zoe Z",
			"givenName": "Zoe", "familyName": "Zed", "externalId": "crm-7", "active": true, "passwordScheme": "argon2id"}
		if d := cmp.Diff(want, zoe); d != "" {
			t.Errorf("listed user (-want +got):\n%s", d)
		}
		_, body = c.do(t, call{method: "GET", path: acme + "/users?skip=1&limit=2", token: f.root, want: 200})
		if got := decode[map[string]any](t, body); len(got["resources"].([]any)) != 2 || got["skip"] != float64(1) {
			t.Errorf("page: %s", body)
		}
		c.do(t, call{method: "GET", path: acme + "/users?limit=0", token: f.acme.admin, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: acme + "/users", token: f.acme.user, want: 403})
		c.do(t, call{method: "GET", path: root + "/users", token: f.acme.admin, want: 404})
		platformUnauthenticated(t, c, f, "GET", acme+"/users", nil)
	})
	t.Run("password schemes", func(t *testing.T) {
		p := acme + "/password-schemes"
		_, body := c.do(t, call{method: "GET", path: p, token: f.acme.admin, want: 200})
		got := decode[map[string]int](t, body)
		if len(got) != 1 || got["argon2id"] < 3 {
			t.Errorf("schemes: %s", body)
		}
		c.do(t, call{method: "GET", path: p, token: f.acme.user, want: 403})
		c.do(t, call{method: "GET", path: root + "/password-schemes", token: f.acme.admin, want: 404})
		platformUnauthenticated(t, c, f, "GET", p, nil)
	})
	t.Run("oauth clients", func(t *testing.T) {
		p := acme + "/oauth-clients"
		_, body := c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "doomed", "scopes": []string{"audit:export"}, "role": "tenant-admin"}), want: 201})
		created := decode[map[string]any](t, body)
		id, secret := created["client_id"].(string), created["client_secret"].(string)
		_, body = c.do(t, call{method: "GET", path: p + "?name=doomed", token: f.acme.admin, want: 200})
		page := decode[map[string]any](t, body)
		if res := page["resources"].([]any); len(res) != 1 || res[0].(map[string]any)["client_id"] != id {
			t.Errorf("list by name: %s", body)
		}
		_, body = c.do(t, call{method: "GET", path: p + "/" + id, token: f.acme.admin, want: 200})
		if got := decode[map[string]any](t, body); got["client_secret"] != nil || got["name"] != "doomed" {
			t.Errorf("get: %s", body)
		}
		c.do(t, call{method: "GET", path: p + "?limit=-1", token: f.acme.admin, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: p, token: f.acme.user, want: 403})
		c.do(t, call{method: "GET", path: p + "/" + id, token: f.acme.user, want: 403})
		c.do(t, call{method: "GET", path: p + "/lkc_nosuchclient", token: f.acme.admin, want: 404})
		c.do(t, call{method: "GET", path: root + "/oauth-clients", token: f.acme.admin, want: 404})
		// A client of acme named under the root tenant does not exist there.
		c.do(t, call{method: "GET", path: root + "/oauth-clients/" + id, token: f.root, want: 404})
		c.do(t, call{method: "DELETE", path: root + "/oauth-clients/" + id, token: f.root, want: 404})
		platformUnauthenticated(t, c, f, "GET", p, nil)
		platformUnauthenticated(t, c, f, "GET", p+"/"+id, nil)
		platformUnauthenticated(t, c, f, "DELETE", p+"/"+id, nil)
		c.do(t, call{method: "DELETE", path: p + "/" + id, token: f.acme.user, want: 403})

		// Deleting the client revokes its tokens at once.
		tok := oauthToken(t, c, id, secret)
		c.do(t, call{method: "GET", path: "/audit/v1/service_instances", token: tok, want: 200})
		c.do(t, call{method: "DELETE", path: p + "/" + id, token: f.acme.admin, want: 204})
		c.do(t, call{method: "GET", path: "/audit/v1/service_instances", token: tok, want: 401})
		c.do(t, call{method: "DELETE", path: p + "/" + id, token: f.acme.admin, want: 404})
		c.do(t, call{method: "GET", path: p + "/" + id, token: f.acme.admin, want: 404})
	})
}

func init() {
	registerContractArea("users-hash-keys", contractHashKeys)
}

func contractHashKeys(t *testing.T, c *contract, f fixture) {
	p := "/api/v1/admin/tenants/" + f.acme.id + "/password-hash-keys"
	key := map[string]any{"algorithm": "firebase-scrypt", "signerKey": "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
		"saltSeparator": "Bw==", "rounds": 8, "memCost": 14}
	c.do(t, call{method: "PUT", path: p + "/default", token: f.acme.admin, body: jsonBody(key), want: 204})
	c.do(t, call{method: "PUT", path: p + "/default", token: f.acme.admin, body: jsonBody(key), want: 204}) // replaced
	_, body := c.do(t, call{method: "GET", path: p + "/default", token: f.acme.admin, want: 200})
	if strings.Contains(string(body), "jxspr8") || !strings.Contains(string(body), `"rounds":8`) {
		t.Errorf("get shows %s", body)
	}
	_, body = c.do(t, call{method: "GET", path: p, token: f.acme.admin, want: 200})
	if strings.Contains(string(body), "jxspr8") || !strings.Contains(string(body), `"default"`) {
		t.Errorf("list shows %s", body)
	}
	bad := map[string]any{"algorithm": "firebase-scrypt", "signerKey": "Bw==", "rounds": 9, "memCost": 14}
	c.do(t, call{method: "PUT", path: p + "/costly", token: f.acme.admin, body: jsonBody(bad), req: reqInvalid, want: 400})
	c.do(t, call{method: "PUT", path: p + "/md5", token: f.acme.admin, body: jsonBody(map[string]any{"algorithm": "md5", "signerKey": "Bw==", "rounds": 1, "memCost": 1}), req: reqInvalid, want: 400})
	c.do(t, call{method: "PUT", path: p + "/big", token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
	c.do(t, call{method: "PUT", path: p + "/mine", token: f.acme.user, body: jsonBody(key), want: 403})
	c.do(t, call{method: "GET", path: p, token: f.acme.user, want: 403})
	c.do(t, call{method: "GET", path: p + "/default", token: f.acme.user, want: 403})
	c.do(t, call{method: "DELETE", path: p + "/default", token: f.acme.user, want: 403})
	root := "/api/v1/admin/tenants/" + f.rootTenant + "/password-hash-keys"
	c.do(t, call{method: "PUT", path: root + "/x", token: f.acme.admin, body: jsonBody(key), want: 404})
	c.do(t, call{method: "GET", path: root, token: f.acme.admin, want: 404})
	c.do(t, call{method: "GET", path: p + "/nosuchkey", token: f.acme.admin, want: 404})
	platformUnauthenticated(t, c, f, "PUT", p+"/default", jsonBody(key))
	platformUnauthenticated(t, c, f, "GET", p, nil)
	platformUnauthenticated(t, c, f, "GET", p+"/default", nil)
	platformUnauthenticated(t, c, f, "DELETE", p+"/default", nil)
	c.do(t, call{method: "DELETE", path: p + "/default", token: f.acme.admin, want: 204})
	c.do(t, call{method: "DELETE", path: p + "/default", token: f.acme.admin, want: 404})
}

func init() {
	registerContractArea("users-import", contractImport)
}

func contractImport(t *testing.T, c *contract, f fixture) {
	p := "/api/v1/admin/tenants/" + f.acme.id + "/users/import"
	nd := "application/x-ndjson"
	body := []byte(`{"name":"imp-1","externalId":"ext-1","passwordHash":"$2a$12$o6hx.Wog/wvFSkT/Bp/6DOxCtLRTDj7lm9on9suF/WaCGNVHbkfL6"}` + "\n" +
		`{"name":"imp-2","passwordHash":"{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="}` + "\n")
	resp, out := c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: body, contentType: nd, want: 200})
	if resp.Header.Get("Content-Type") != nd {
		t.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"status":"created"`) || !strings.Contains(lines[1], `"weak_hash"`) ||
		!strings.Contains(lines[2], `"summary":{"created":1,"updated":0,"unchanged":0,"skipped":0,"failed":1}`) {
		t.Errorf("answer:\n%s", out)
	}
	// Logs in with the imported hash.
	login(t, c, "imp-1", "test", f.acme.code)
	_, out = c.do(t, call{method: "POST", path: p + "?dryRun=true&onConflict=fail", token: f.acme.admin, body: body, contentType: nd, want: 200})
	if !strings.Contains(string(out), `"status":"unchanged"`) {
		t.Errorf("rerun: %s", out)
	}
	c.do(t, call{method: "POST", path: p + "?onConflict=maybe", token: f.acme.admin, body: body, contentType: nd, req: reqInvalid, want: 400})
	c.do(t, call{method: "POST", path: p + "?dryRun=perhaps", token: f.acme.admin, body: body, contentType: nd, req: reqInvalid, want: 400})
	c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: body, contentType: "application/json", req: reqInvalid, want: 400})
	c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: []byte("\n"), contentType: nd, want: 400})
	many := []byte(strings.Repeat(`{"name":"x"}`+"\n", 10_001))
	c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: many, contentType: nd, want: 413})
	c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: []byte(strings.Repeat("a", 16<<20+1)), contentType: nd, want: 413})
	c.do(t, call{method: "POST", path: p, token: f.acme.user, body: body, contentType: nd, want: 403})
	c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.rootTenant + "/users/import", token: f.acme.admin, body: body, contentType: nd, want: 404})
	c.do(t, call{method: "POST", path: p, body: body, contentType: nd, req: reqInvalid, want: 401})
	c.do(t, call{method: "POST", path: p, body: body, contentType: nd, token: "not.a.jwt", want: 401})
	c.do(t, call{method: "POST", path: p, body: body, contentType: nd, token: oauthToken(t, c, f.client.id, f.client.secret), want: 401})
	_, out = c.do(t, call{method: "GET", path: "/api/v1/admin/tenants/" + f.acme.id + "/users?name=imp-2", token: f.acme.admin, want: 200})
	if !strings.Contains(string(out), `"total":0`) {
		t.Errorf("a refused request wrote users: %s", out)
	}
}
