package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"
)

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
	t.Run("pushed authorization request", func(t *testing.T) {
		_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/oauth-clients", token: f.acme.admin, want: 201,
			body: jsonBody(map[string]any{"name": "par", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
				"redirect_uris": []string{"https://app.example/cb"}, "token_endpoint_auth_method": "client_secret_post"})})
		cl := decode[map[string]any](t, body)
		_, challenge := pkce("contract-par")
		form := url.Values{"client_id": {cl["client_id"].(string)}, "client_secret": {cl["client_secret"].(string)}, "response_type": {"code"},
			"redirect_uri": {"https://app.example/cb"}, "scope": {"openid"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
		post := func(v url.Values, h http.Header, want int) {
			c.do(t, call{method: "POST", path: "/oauth/v1/par", body: []byte(v.Encode()), contentType: "application/x-www-form-urlencoded", header: h, want: want})
		}
		post(form, nil, 201)
		bad := url.Values{}
		for k, v := range form {
			bad[k] = v
		}
		bad.Set("redirect_uri", "https://evil.example/cb")
		post(bad, nil, 400)
		post(url.Values{"response_type": {"code"}}, http.Header{"Authorization": {"Basic " + basicAuth(cl["client_id"].(string), "wrong")}}, 401)
	})
}
