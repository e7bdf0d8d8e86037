package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
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
	t.Run("device grant", func(t *testing.T) {
		c.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		defer func() { c.client = c.srv.Client() }()
		const ct = "application/x-www-form-urlencoded"
		_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/oauth-clients", token: f.acme.admin, want: 201,
			body: jsonBody(map[string]any{"name": "tv", "type": "public", "scopes": []string{"openid"}, "grant_types": []string{"urn:ietf:params:oauth:grant-type:device_code"}})})
		tv := decode[map[string]any](t, body)["client_id"].(string)
		authz := func(v url.Values, h http.Header, want int) []byte {
			_, b := c.do(t, call{method: "POST", path: "/oauth/v1/device_authorization", body: []byte(v.Encode()), contentType: ct, header: h, want: want})
			return b
		}
		da := decode[map[string]any](t, authz(url.Values{"client_id": {tv}, "scope": {"openid"}}, nil, 200))
		authz(url.Values{"client_id": {tv}, "scope": {"admin"}}, nil, 400)
		authz(url.Values{"scope": {"openid"}}, http.Header{"Authorization": {"Basic " + basicAuth(f.client.id, "wrong")}}, 401)

		resp, page := c.do(t, call{method: "GET", path: "/oauth/v1/device?user_code=" + url.QueryEscape(da["user_code"].(string)), want: 200})
		browser := http.Header{"Cookie": {"latchkey-oidc=" + respCookie(resp, "latchkey-oidc")}}
		csrf := csrfInput.FindStringSubmatch(string(page))[1]
		c.do(t, call{method: "GET", path: "/oauth/v1/device?user_code=a&user_code=b", want: 400, req: reqProse})
		post := func(v url.Values, h http.Header, want int, req reqCheck) (*http.Response, []byte) {
			return c.do(t, call{method: "POST", path: "/oauth/v1/device", body: []byte(v.Encode()), contentType: ct, header: h, want: want, req: req})
		}
		post(url.Values{"user_code": {da["user_code"].(string)}}, browser, 403, reqInvalid)
		post(url.Values{"user_code": {"a", "b"}, "csrf_token": {csrf}}, browser, 400, reqProse)
		c.do(t, call{method: "POST", path: "/oauth/v1/device", body: []byte("user_code=x&csrf_token=" + url.QueryEscape(strings.Repeat("a", 70<<10))), contentType: ct, header: browser, want: 413, req: reqProse})
		post(url.Values{"user_code": {"BCDF-GHJK"}, "csrf_token": {csrf}}, browser, 200, reqValid)
		resp, _ = post(url.Values{"user_code": {da["user_code"].(string)}, "csrf_token": {csrf}}, browser, 303, reqValid)
		signIn := resp.Header.Get("Location")
		_, page = c.do(t, call{method: "GET", path: signIn, header: browser, want: 200})
		scsrf, request := formValues(t, page)
		resp, _ = c.do(t, call{method: "POST", path: "/oauth/v1/sign-in", contentType: ct, header: browser, want: 303,
			body: []byte(url.Values{"request": {request}, "csrf_token": {scsrf}, "username": {"alice"}, "password": {"alice-password-1"}}.Encode())})
		confirm := resp.Header.Get("Location")
		session := http.Header{"Cookie": {"latchkey-oidc=" + respCookie(resp, "latchkey-oidc")}}
		c.do(t, call{method: "GET", path: confirm, header: browser, want: 303}) // the old browser id has no session
		_, page = c.do(t, call{method: "GET", path: confirm, header: session, want: 200})
		dcsrf, drequest := formValues(t, page)
		post(url.Values{"request": {drequest}, "csrf_token": {dcsrf}, "decision": {"allow"}}, session, 200, reqValid)
		c.do(t, call{method: "POST", path: "/oauth/v1/token", contentType: ct, want: 200,
			body: []byte(url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "client_id": {tv}, "device_code": {da["device_code"].(string)}}.Encode())})
		// Wrong codes from this address (one above): after 5, 429.
		for range 4 {
			post(url.Values{"user_code": {"ZZZZ-ZZZZ"}, "csrf_token": {dcsrf}}, session, 200, reqValid)
		}
		post(url.Values{"user_code": {"ZZZZ-ZZZZ"}, "csrf_token": {dcsrf}}, session, 429, reqValid)
	})
}
