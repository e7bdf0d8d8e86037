package httpapi_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/identity"
)

func init() {
	registerContractArea("oidc", contractOIDC)
}

// pkce returns a PKCE verifier and its S256 challenge.
func pkce(seed string) (verifier, challenge string) {
	verifier = base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat(seed, 40)))[:64]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

var (
	csrfInput    = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	requestInput = regexp.MustCompile(`name="request" value="([^"]+)"`)
)

// formValues reads the sign-in page's hidden inputs.
func formValues(t testing.TB, page []byte) (csrf, request string) {
	t.Helper()
	m1, m2 := csrfInput.FindSubmatch(page), requestInput.FindSubmatch(page)
	if m1 == nil || m2 == nil {
		t.Fatalf("sign-in page without its hidden inputs: %s", page)
	}
	return string(m1[1]), strings.ReplaceAll(string(m2[1]), "&#43;", "+")
}

func respCookie(resp *http.Response, name string) string {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// wantOAuthError checks an OAuth error body's code.
func wantOAuthError(t *testing.T, body []byte, want string) {
	t.Helper()
	if got := decode[map[string]any](t, body)["error"]; got != want {
		t.Errorf("error %v, want %s; body %s", got, want, body)
	}
}

func contractOIDC(t *testing.T, c *contract, f fixture) {
	c.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer func() { c.client = c.srv.Client() }()
	const form = "application/x-www-form-urlencoded"
	const redirect = "https://app.example/cb"
	_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/oauth-clients", token: f.acme.admin, want: 201,
		body: jsonBody(map[string]any{"name": "Acme web", "type": "confidential", "scopes": []string{"openid", "profile", "offline_access"},
			"grant_types": []string{"authorization_code", "refresh_token"}, "redirect_uris": []string{redirect},
			"post_logout_redirect_uris": []string{"https://app.example/bye"}})})
	cl := decode[map[string]any](t, body)
	id, secret := cl["client_id"].(string), cl["client_secret"].(string)
	_, body = c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/oauth-clients", token: f.acme.admin, want: 201,
		body: jsonBody(map[string]any{"name": "Acme app", "type": "public", "scopes": []string{"openid"}, "redirect_uris": []string{"http://127.0.0.1/cb"},
			"id_token_signed_response_alg": "ES256"})})
	if pub := decode[map[string]any](t, body); pub["client_secret"] != nil || pub["type"] != "public" {
		t.Errorf("public client: %v", pub)
	}
	c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/oauth-clients", token: f.acme.admin, want: 400, req: reqProse,
		body: jsonBody(map[string]any{"name": "bad", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"}, "redirect_uris": []string{"http://app.example/cb"}})})

	verifier, challenge := pkce("contract")
	authorizeParams := func(extra url.Values) url.Values {
		q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {redirect}, "scope": {"openid profile offline_access"},
			"state": {"st-1"}, "nonce": {"n-1"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
		for k, v := range extra {
			q[k] = v
		}
		return q
	}
	authorize := func(extra url.Values) string { return "/oauth/v1/authorize?" + authorizeParams(extra).Encode() }

	t.Run("discovery", func(t *testing.T) {
		c.do(t, call{method: "GET", path: "/.well-known/openid-configuration", want: 200})
	})

	var code, session string
	t.Run("authorize and sign in", func(t *testing.T) {
		c.do(t, call{method: "GET", path: "/oauth/v1/authorize?client_id=lkc_unknown&redirect_uri=" + url.QueryEscape(redirect), want: 400})
		resp, _ := c.do(t, call{method: "GET", path: authorize(url.Values{"code_challenge_method": {"plain"}}), want: 302})
		if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, redirect+"?") || !strings.Contains(loc, "error=invalid_request") {
			t.Errorf("plain PKCE redirect %q", loc)
		}
		resp, _ = c.do(t, call{method: "GET", path: authorize(nil), want: 302})
		signIn := resp.Header.Get("Location")
		c.do(t, call{method: "GET", path: "/oauth/v1/sign-in?request=forged", want: 400})
		resp, page := c.do(t, call{method: "GET", path: signIn, want: 200})
		browser := respCookie(resp, "latchkey-oidc")
		csrf, request := formValues(t, page)
		cookie := http.Header{"Cookie": {"latchkey-oidc=" + browser}}
		post := func(v url.Values, h http.Header, want int) *http.Response {
			v.Set("request", request)
			resp, _ := c.do(t, call{method: "POST", path: "/oauth/v1/sign-in", body: []byte(v.Encode()), contentType: form, header: h, want: want})
			return resp
		}
		c.do(t, call{method: "POST", path: "/oauth/v1/sign-in", body: []byte(url.Values{"request": {request}, "username": {"alice"}, "password": {"alice-password-1"}}.Encode()),
			contentType: form, header: cookie, req: reqInvalid, want: 403}) // no csrf_token
		post(url.Values{"username": {"alice"}, "password": {"alice-password-1"}, "csrf_token": {csrf}}, nil, 403) // another browser's token
		post(url.Values{"username": {"alice"}, "password": {"wrong"}, "csrf_token": {csrf}}, cookie, 401)
		c.do(t, call{method: "POST", path: "/oauth/v1/sign-in", body: []byte("csrf_token=a&csrf_token=b"), contentType: form, header: cookie, want: 400, req: reqProse})
		c.do(t, call{method: "POST", path: "/oauth/v1/sign-in", body: []byte("request=x&csrf_token=" + url.QueryEscape(strings.Repeat("a", 70<<10))), contentType: form, header: cookie, want: 413, req: reqProse})
		for range 5 {
			post(url.Values{"username": {"nobody-oidc"}, "password": {"wrong"}, "csrf_token": {csrf}}, cookie, 401)
		}
		post(url.Values{"username": {"nobody-oidc"}, "password": {"wrong"}, "csrf_token": {csrf}}, cookie, 429)
		resp = post(url.Values{"username": {"alice"}, "password": {"alice-password-1"}, "csrf_token": {csrf}}, cookie, 303)
		back, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || back.Query().Get("state") != "st-1" || back.Query().Get("iss") == "" {
			t.Fatalf("redirect after sign-in %q", resp.Header.Get("Location"))
		}
		code, session = back.Query().Get("code"), respCookie(resp, "latchkey-oidc")
	})

	var access, idToken string
	t.Run("token", func(t *testing.T) {
		tok := func(v url.Values, want int) []byte {
			_, body := c.do(t, call{method: "POST", path: "/oauth/v1/token", body: []byte(v.Encode()), contentType: form, want: want})
			return body
		}
		got := decode[map[string]any](t, tok(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
			"code_verifier": {verifier}, "client_id": {id}, "client_secret": {secret}}, 200))
		access, idToken = got["access_token"].(string), got["id_token"].(string)
		rt := got["refresh_token"].(string)
		wantOAuthError(t, tok(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
			"code_verifier": {verifier}, "client_id": {id}, "client_secret": {secret}}, 400), "invalid_grant")
		// The replay revoked the refresh token of the first redemption.
		wantOAuthError(t, tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {id}, "client_secret": {secret}}, 400), "invalid_grant")
	})

	t.Run("userinfo", func(t *testing.T) {
		// The code's replay revoked its access token: a fresh one from a
		// second authorization, answered at once from the session.
		resp, _ := c.do(t, call{method: "GET", path: authorize(nil), header: http.Header{"Cookie": {"latchkey-oidc=" + session}}, want: 302})
		back, _ := url.Parse(resp.Header.Get("Location"))
		_, body := c.do(t, call{method: "POST", path: "/oauth/v1/token", contentType: form, want: 200, body: []byte(url.Values{"grant_type": {"authorization_code"},
			"code": {back.Query().Get("code")}, "redirect_uri": {redirect}, "code_verifier": {verifier}, "client_id": {id}, "client_secret": {secret}}.Encode())})
		got := decode[map[string]any](t, body)
		access, idToken = got["access_token"].(string), got["id_token"].(string)
		c.do(t, call{method: "GET", path: "/oauth/v1/userinfo", token: access, want: 200})
		c.do(t, call{method: "POST", path: "/oauth/v1/userinfo", token: access, want: 200})
		c.do(t, call{method: "GET", path: "/oauth/v1/userinfo", req: reqProse, want: 401})
		c.do(t, call{method: "POST", path: "/oauth/v1/userinfo", token: "not-a-token", want: 401})
		exporter := oauthToken(t, c, f.client.id, f.client.secret)
		c.do(t, call{method: "GET", path: "/oauth/v1/userinfo", token: exporter, want: 403})
		c.do(t, call{method: "POST", path: "/oauth/v1/userinfo", token: exporter, want: 403})
	})

	t.Run("authorization request as a form, and revocation of a refresh token", func(t *testing.T) {
		c.do(t, call{method: "POST", path: "/oauth/v1/authorize", body: []byte(authorizeParams(nil).Encode()), contentType: "text/plain", req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: "/oauth/v1/authorize", body: []byte(authorizeParams(url.Values{"client_id": {"lkc_unknown"}}).Encode()), contentType: form, want: 400})
		// OpenID Connect Core §3.1.2.1: the same request, posted, answers
		// as the GET does (here at once, from the session).
		resp, _ := c.do(t, call{method: "POST", path: "/oauth/v1/authorize", body: []byte(authorizeParams(nil).Encode()), contentType: form,
			header: http.Header{"Cookie": {"latchkey-oidc=" + session}}, want: 302})
		back, _ := url.Parse(resp.Header.Get("Location"))
		if back == nil || back.Query().Get("code") == "" || back.Query().Get("state") != "st-1" {
			t.Fatalf("posted authorization request redirected to %q", resp.Header.Get("Location"))
		}
		_, body := c.do(t, call{method: "POST", path: "/oauth/v1/token", contentType: form, want: 200, body: []byte(url.Values{"grant_type": {"authorization_code"},
			"code": {back.Query().Get("code")}, "redirect_uri": {redirect}, "code_verifier": {verifier}, "client_id": {id}, "client_secret": {secret}}.Encode())})
		got := decode[map[string]any](t, body)
		rt, at := got["refresh_token"].(string), got["access_token"].(string)
		oauth := func(path string, v url.Values, want int) []byte {
			v.Set("client_id", id)
			v.Set("client_secret", secret)
			_, body := c.do(t, call{method: "POST", path: path, body: []byte(v.Encode()), contentType: form, want: want})
			return body
		}
		if got := decode[map[string]any](t, oauth("/oauth/v1/introspect", url.Values{"token": {rt}, "token_type_hint": {"refresh_token"}}, 200)); got["active"] != true || got["client_id"] != id {
			t.Errorf("introspection of a live refresh token: %v", got)
		}
		oauth("/oauth/v1/revoke", url.Values{"token": {rt}, "token_type_hint": {"refresh_token"}}, 200)
		if got := decode[map[string]any](t, oauth("/oauth/v1/introspect", url.Values{"token": {rt}}, 200)); got["active"] != false {
			t.Errorf("introspection of a revoked refresh token: %v", got)
		}
		wantOAuthError(t, oauth("/oauth/v1/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, 400), "invalid_grant")
		c.do(t, call{method: "GET", path: "/oauth/v1/userinfo", token: at, want: 401})
	})

	t.Run("logout", func(t *testing.T) {
		c.do(t, call{method: "GET", path: "/oauth/v1/logout?post_logout_redirect_uri=" + url.QueryEscape("https://evil.example/"), want: 400})
		c.do(t, call{method: "GET", path: "/oauth/v1/logout?id_token_hint=" + idToken + "&post_logout_redirect_uri=" + url.QueryEscape("https://evil.example/"), want: 400})
		resp, _ := c.do(t, call{method: "GET", path: "/oauth/v1/logout?id_token_hint=" + idToken + "&state=bye&post_logout_redirect_uri=" + url.QueryEscape("https://app.example/bye"),
			header: http.Header{"Cookie": {"latchkey-oidc=" + session}}, want: 302})
		if loc := resp.Header.Get("Location"); loc != "https://app.example/bye?state=bye" {
			t.Errorf("logout redirect %q", loc)
		}
		c.do(t, call{method: "GET", path: "/oauth/v1/logout", want: 200})
		// The session is gone: prompt=none now needs a sign-in.
		resp, _ = c.do(t, call{method: "GET", path: authorize(url.Values{"prompt": {"none"}}), header: http.Header{"Cookie": {"latchkey-oidc=" + session}}, want: 302})
		if loc := resp.Header.Get("Location"); !strings.Contains(loc, "error=login_required") {
			t.Errorf("prompt=none after logout: %q", loc)
		}
	})
	_ = identity.ScopeOpenID
}
