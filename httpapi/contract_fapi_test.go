package httpapi_test

import "testing"

// Contract scenarios of API-fapi.md: the admin routes of one OAuth client.

func init() {
	registerContractArea("fapi", contractFAPI)
}

func contractFAPI(t *testing.T, c *contract, f fixture) {
	one := "/api/v1/admin/tenants/" + f.acme.id + "/oauth-clients/" + f.client.id
	t.Run("get OAuth client", func(t *testing.T) {
		_, body := c.do(t, call{method: "GET", path: one, token: f.acme.admin, want: 200})
		if got := decode[map[string]any](t, body); got["client_secret"] != nil || got["client_id"] != f.client.id {
			t.Errorf("client: %s", body)
		}
		c.do(t, call{method: "GET", path: "/api/v1/admin/tenants/" + f.rootTenant + "/oauth-clients/" + f.client.id, token: f.root, want: 404})
		c.do(t, call{method: "GET", path: "/api/v1/admin/tenants/" + f.acme.id + "/oauth-clients/lkc_nosuchclient", token: f.acme.admin, want: 404})
		c.do(t, call{method: "GET", path: one, token: f.acme.user, want: 403})
		platformUnauthenticated(t, c, f, "GET", one, nil)
	})
	t.Run("change OAuth client", func(t *testing.T) {
		c.do(t, call{method: "PATCH", path: one, token: f.acme.admin, body: jsonBody(map[string]any{"dpop_bound_access_tokens": true}), want: 200})
		c.do(t, call{method: "PATCH", path: one, token: f.acme.admin, body: jsonBody(map[string]any{"token_endpoint_auth_method": "private_key_jwt"}), want: 400})
		c.do(t, call{method: "PATCH", path: one, token: f.acme.admin, body: jsonBody(map[string]any{"dpop_bound_access_tokens": false}), want: 200})
		c.do(t, call{method: "PATCH", path: one, token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "PATCH", path: "/api/v1/admin/tenants/" + f.rootTenant + "/oauth-clients/" + f.client.id, token: f.root, body: jsonBody(map[string]any{}), want: 404})
		c.do(t, call{method: "PATCH", path: one, token: f.acme.user, body: jsonBody(map[string]any{}), want: 403})
		platformUnauthenticated(t, c, f, "PATCH", one, jsonBody(map[string]any{}))
	})
}
