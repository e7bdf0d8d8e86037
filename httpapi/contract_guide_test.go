package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/oidctest"
)

func init() {
	registerContractArea("guide", contractGuide)
}

// guideCookie returns the session cookie a guide login set.
func guideCookie(t *testing.T, resp *http.Response) string {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == "latchkey-guide" && c.Value != "" {
			return c.Value
		}
	}
	t.Fatalf("no guide session cookie in %v", resp.Header["Set-Cookie"])
	return ""
}

func contractGuide(t *testing.T, c *contract, f fixture) {
	c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/users", token: f.acme.admin,
		body: jsonBody(map[string]any{"name": "guide-user", "password": "guide-password-1", "roles": []string{"application-owner"}}), want: 201})
	loginBody := jsonBody(map[string]string{"name": "guide-user", "password": "guide-password-1", "tenant": f.acme.code})

	t.Run("page", func(t *testing.T) {
		resp, body := c.do(t, call{method: "GET", path: "/guide/", want: 200})
		if !strings.Contains(string(body), "swagger-ui-bundle.js") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("page %s with CSP %q", body, resp.Header.Get("Content-Security-Policy"))
		}
		for _, file := range []string{"guide.js", "guide.css", "swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"} {
			resp, body := c.do(t, call{method: "GET", path: "/guide/static/" + file, want: 200})
			if len(body) < 100 || resp.Header.Get("Content-Type") == "" {
				t.Errorf("%s: %d bytes of %q", file, len(body), resp.Header.Get("Content-Type"))
			}
		}
		c.do(t, call{method: "GET", path: "/guide/static/nothing.js", want: 404})
		c.do(t, call{method: "GET", path: "/guide/static/swagger-ui.css.gz", want: 404})
		c.do(t, call{method: "GET", path: "/guide/static/index.html", want: 404})
	})

	t.Run("session", func(t *testing.T) {
		c.do(t, call{method: "GET", path: "/guide/session", req: reqInvalid, want: 401})
		c.do(t, call{method: "GET", path: "/guide/session", header: http.Header{"Cookie": {"latchkey-guide=forged"}}, want: 401})
		resp, body := c.do(t, call{method: "POST", path: "/guide/session", body: loginBody, want: 200})
		id := guideCookie(t, resp)
		sess := decode[map[string]any](t, body)
		csrf := sess["csrfToken"].(string)
		if sess["tenant"].(map[string]any)["code"] != f.acme.code || sess["idleTimeout"] != float64(600) || sess["closedTimeout"] != float64(1800) {
			t.Errorf("session %v", sess)
		}
		// The page's JWT calls the platform API as the session's user.
		c.do(t, call{method: "GET", path: "/api/v1/vault/keys2", token: sess["token"].(string), want: 200})
		cookie := http.Header{"Cookie": {"latchkey-guide=" + id}}
		withCSRF := http.Header{"Cookie": {"latchkey-guide=" + id}, "X-Csrf-Token": {csrf}}
		c.do(t, call{method: "GET", path: "/guide/session", header: cookie, want: 200})
		c.do(t, call{method: "POST", path: "/guide/session/activity", header: withCSRF, body: jsonBody(map[string]bool{"active": true}), want: 204})
		c.do(t, call{method: "POST", path: "/guide/session/activity", header: withCSRF, body: []byte(`{}`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: "/guide/session/activity", header: withCSRF, body: []byte(`{"active":"yes"}`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: "/guide/session/activity", header: http.Header{"Cookie": {"latchkey-guide=" + id}, "X-Csrf-Token": {"wrong"}},
			body: jsonBody(map[string]bool{"active": true}), want: 403})
		c.do(t, call{method: "POST", path: "/guide/session/activity", header: http.Header{"X-Csrf-Token": {csrf}},
			body: jsonBody(map[string]bool{"active": true}), req: reqInvalid, want: 401})
		c.do(t, call{method: "DELETE", path: "/guide/session", header: http.Header{"Cookie": {"latchkey-guide=" + id}, "X-Csrf-Token": {"wrong"}}, want: 403})
		c.do(t, call{method: "DELETE", path: "/guide/session", header: withCSRF, want: 204})
		c.do(t, call{method: "DELETE", path: "/guide/session", header: withCSRF, want: 401})
		c.do(t, call{method: "GET", path: "/guide/session", header: cookie, want: 401})
	})

	t.Run("login", func(t *testing.T) {
		bad := func(name, password string) []byte {
			return jsonBody(map[string]string{"name": name, "password": password, "tenant": f.acme.code})
		}
		c.do(t, call{method: "POST", path: "/guide/session", body: bad("guide-user", "wrong-password"), want: 401})
		c.do(t, call{method: "POST", path: "/guide/session", body: []byte(`{"name":"guide-user"}`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: "/guide/session", body: loginBody, contentType: "text/plain", req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: "/guide/session", body: loginBody, header: http.Header{"Origin": {"https://evil.example"}}, want: 403})
		huge := jsonBody(map[string]string{"name": "guide-user", "password": strings.Repeat("x", 2<<20)})
		c.do(t, call{method: "POST", path: "/guide/session", body: huge, req: reqProse, want: 413})
		for range 5 {
			c.do(t, call{method: "POST", path: "/guide/session", body: bad("guide-throttled", "wrong-password"), want: 401})
		}
		resp, _ := c.do(t, call{method: "POST", path: "/guide/session", body: bad("guide-throttled", "wrong-password"), want: 429})
		if resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	})
}

func init() {
	registerContractArea("guide-sso", contractGuideSSO)
}

func contractGuideSSO(t *testing.T, c *contract, f fixture) {
	idp := oidctest.New("latchkey-contract", "contract-secret", c.p.Clock().Now)
	t.Cleanup(idp.Close)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	c.client = noFollow
	defer func() { c.client = c.srv.Client() }()
	settings := "/api/v1/admin/tenants/" + f.acme.id + "/guide-sso"
	input := map[string]any{"issuer": idp.Issuer(), "clientId": idp.ClientID, "clientSecret": idp.ClientSecret, "allowedDomains": []string{"acme.example"}}

	t.Run("settings", func(t *testing.T) {
		c.do(t, call{method: "GET", path: settings, token: f.acme.admin, want: 404})
		c.do(t, call{method: "GET", path: "/guide/sso/" + f.acme.code + "/start", want: 404})
		c.do(t, call{method: "GET", path: "/guide/sso/" + f.acme.code + "/callback?state=x&code=y", want: 404})
		c.do(t, call{method: "PUT", path: settings, token: f.acme.admin, body: jsonBody(map[string]any{"issuer": "ftp://x", "clientId": "a", "clientSecret": "b", "allowedDomains": []string{"a.example"}}), req: reqProse, want: 400})
		c.do(t, call{method: "PUT", path: settings, token: f.acme.admin, body: []byte(`{"issuer":`), req: reqInvalid, want: 400})
		c.do(t, call{method: "PUT", path: settings, body: jsonBody(input), req: reqInvalid, want: 401})
		c.do(t, call{method: "PUT", path: settings, token: f.acme.user, body: jsonBody(input), want: 403})
		c.do(t, call{method: "PUT", path: "/api/v1/admin/tenants/" + f.rootTenant + "/guide-sso", token: f.acme.admin, body: jsonBody(input), want: 404})
		_, body := c.do(t, call{method: "PUT", path: settings, token: f.acme.admin, body: jsonBody(input), want: 200})
		if strings.Contains(string(body), idp.ClientSecret) {
			t.Errorf("the secret is returned: %s", body)
		}
		c.do(t, call{method: "GET", path: settings, token: f.acme.admin, want: 200})
		c.do(t, call{method: "GET", path: settings, req: reqInvalid, want: 401})
		c.do(t, call{method: "GET", path: settings, token: f.acme.user, want: 403})
	})

	t.Run("flow", func(t *testing.T) {
		c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/users", token: f.acme.admin,
			body: jsonBody(map[string]any{"name": "sso-user@acme.example", "password": "sso-password-1"}), want: 201})
		idp.SignIn("sso-user@acme.example", true)
		resp, _ := c.do(t, call{method: "GET", path: "/guide/sso/" + f.acme.code + "/start", want: 302})
		var flow string
		for _, ck := range resp.Cookies() {
			if ck.Name == "latchkey-guide-sso" {
				flow = ck.Value
			}
		}
		back, err := noFollow.Get(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		back.Body.Close()
		u, _ := url.Parse(back.Header.Get("Location"))
		cb := u.Path + "?" + u.RawQuery
		resp, _ = c.do(t, call{method: "GET", path: cb, header: http.Header{"Cookie": {"latchkey-guide-sso=" + flow}}, want: 303})
		if resp.Header.Get("Location") != "/guide/" || len(resp.Cookies()) != 2 {
			t.Errorf("callback: %q %v", resp.Header.Get("Location"), resp.Header["Set-Cookie"])
		}
		resp, _ = c.do(t, call{method: "GET", path: "/guide/sso/" + f.acme.code + "/callback?state=x&code=y&error=access_denied", want: 303})
		if !strings.Contains(resp.Header.Get("Location"), "error=") {
			t.Errorf("refused callback: %q", resp.Header.Get("Location"))
		}
	})

	t.Run("delete", func(t *testing.T) {
		c.do(t, call{method: "DELETE", path: settings, req: reqInvalid, want: 401})
		c.do(t, call{method: "DELETE", path: settings, token: f.acme.user, want: 403})
		c.do(t, call{method: "DELETE", path: settings, token: f.acme.admin, want: 204})
		c.do(t, call{method: "DELETE", path: settings, token: f.acme.admin, want: 404})
	})
}
