package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/oidctest"
	"github.com/latchkey/latchkey/latchkeytest"
)

// noRedirect is a client that returns redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func cookieOf(r latchkeytest.Response, name string) string {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == name && c.MaxAge >= 0 {
			return c.Value
		}
	}
	return ""
}

// ssoFlow starts a sign-on of tenantCode, lets the provider sign its user
// in, and returns the callback's path and query and the flow cookie.
func ssoFlow(t *testing.T, e *latchkeytest.Env, tenantCode string) (callback, flow string) {
	t.Helper()
	start := e.DoWith(noRedirect, e.Server.URL, "GET", "/guide/sso/"+tenantCode+"/start", nil)
	if start.Status != http.StatusFound {
		t.Fatalf("start: %d %s", start.Status, start.Body)
	}
	flow = cookieOf(start, "latchkey-guide-sso")
	auth, err := url.Parse(start.Header.Get("Location"))
	if err != nil || flow == "" {
		t.Fatalf("start: Location %q, flow cookie %q", start.Header.Get("Location"), flow)
	}
	q := auth.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" {
		t.Fatalf("authorization request without PKCE, nonce or state: %s", auth)
	}
	resp, err := noRedirect.Get(auth.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("provider: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return back.Path + "?" + back.RawQuery, flow
}

func TestGuideSingleSignOn(t *testing.T) {
	e := latchkeytest.New(t)
	a, b := e.NewTenant("Acme"), e.NewTenant("Bolt")
	for _, u := range []struct{ tenant, name string }{{a.ID, "alice@acme.example"}, {a.ID, "carol@other.example"}, {b.ID, "bob@acme.example"}} {
		r := e.Do("POST", "/api/v1/admin/tenants/"+u.tenant+"/users", map[string]any{"name": u.name, "password": "user-password-1"}, "Authorization: Bearer "+e.AdminToken())
		if r.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", u.name, r.Status, r.Body)
		}
	}
	idp := oidctest.New("latchkey-acme", "acme-client-secret", e.Clock.Now)
	t.Cleanup(idp.Close)
	admin := "Authorization: Bearer " + a.AdminToken
	settings := "/api/v1/admin/tenants/" + a.ID + "/guide-sso"
	r := e.Do("PUT", settings, map[string]any{"issuer": idp.Issuer(), "clientId": idp.ClientID, "clientSecret": idp.ClientSecret, "allowedDomains": []string{"ACME.example"}}, admin)
	if r.Status != 200 || strings.Contains(string(r.Body), idp.ClientSecret) {
		t.Fatalf("set SSO: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", settings, nil, admin); r.Status != 200 || strings.Contains(string(r.Body), idp.ClientSecret) || !strings.Contains(string(r.Body), `"acme.example"`) {
		t.Fatalf("get SSO: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/api/v1/admin/tenants/"+a.ID+"/guide-sso", nil, "Authorization: Bearer "+b.AdminToken); r.Status != 404 {
		t.Errorf("another tenant's admin reads the settings: %d", r.Status)
	}
	if r := e.Do("GET", "/guide/sso/"+b.Code+"/start", nil); r.Status != 404 {
		t.Errorf("start for a tenant without SSO: %d %s", r.Status, r.Body)
	}

	callback := func(path, flow string) latchkeytest.Response {
		var h []string
		if flow != "" {
			h = append(h, "Cookie: latchkey-guide-sso="+flow)
		}
		return e.DoWith(noRedirect, e.Server.URL, "GET", path, nil, h...)
	}
	refused := func(t *testing.T, r latchkeytest.Response, why string) {
		t.Helper()
		loc, _ := url.Parse(r.Header.Get("Location"))
		if r.Status != http.StatusSeeOther || loc.Path != "/guide/" || !strings.Contains(loc.Query().Get("error"), why) || cookieOf(r, "latchkey-guide") != "" {
			t.Errorf("callback: %d, Location %q, cookies %v; want a refusal for %q", r.Status, r.Header.Get("Location"), r.Header["Set-Cookie"], why)
		}
	}

	t.Run("signs in the tenant's user", func(t *testing.T) {
		idp.SignIn("Alice@acme.example", true)
		path, flow := ssoFlow(t, e, a.Code)
		r := callback(path, flow)
		id := cookieOf(r, "latchkey-guide")
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/guide/" || id == "" {
			t.Fatalf("callback: %d %q %v", r.Status, r.Header.Get("Location"), r.Header["Set-Cookie"])
		}
		s := e.Do("GET", "/guide/session", nil, "Cookie: latchkey-guide="+id)
		j := s.JSON()
		if s.Status != 200 || j["method"] != "sso" || j["user"].(map[string]any)["name"] != "alice@acme.example" || j["tenant"].(map[string]any)["code"] != a.Code {
			t.Errorf("session: %d %s", s.Status, s.Body)
		}
		// The flow is single use: the provider's code is spent.
		refused(t, callback(path, flow), "code exchange")
	})
	t.Run("wrong state", func(t *testing.T) {
		idp.SignIn("alice@acme.example", true)
		path, flow := ssoFlow(t, e, a.Code)
		before := idp.Exchanges
		refused(t, callback(strings.Replace(path, "state=", "state=x", 1), flow), "wrong state")
		if idp.Exchanges != before {
			t.Error("the code was exchanged despite the wrong state")
		}
	})
	t.Run("no flow cookie", func(t *testing.T) {
		path, _ := ssoFlow(t, e, a.Code)
		refused(t, callback(path, ""), "no single sign-on in progress")
	})
	t.Run("wrong nonce", func(t *testing.T) {
		idp.SignIn("alice@acme.example", true)
		idp.WrongNonce("replayed-nonce")
		defer idp.WrongNonce("")
		path, flow := ssoFlow(t, e, a.Code)
		refused(t, callback(path, flow), "wrong nonce")
	})
	t.Run("user of another tenant", func(t *testing.T) {
		idp.SignIn("bob@acme.example", true) // a user of Bolt, in Acme's allowed domain
		path, flow := ssoFlow(t, e, a.Code)
		refused(t, callback(path, flow), "no user of the tenant")
	})
	t.Run("domain not allowed", func(t *testing.T) {
		idp.SignIn("carol@other.example", true) // a user of Acme, outside its allowed domains
		path, flow := ssoFlow(t, e, a.Code)
		refused(t, callback(path, flow), "domain is not allowed")
	})
	t.Run("unverified e-mail", func(t *testing.T) {
		idp.SignIn("alice@acme.example", false)
		path, flow := ssoFlow(t, e, a.Code)
		refused(t, callback(path, flow), "verified e-mail")
	})
	t.Run("flow of one tenant at another's callback", func(t *testing.T) {
		idp.SignIn("alice@acme.example", true)
		path, flow := ssoFlow(t, e, a.Code)
		r := callback(strings.Replace(path, a.Code, b.Code, 1), flow)
		if r.Status != 404 {
			t.Errorf("callback of a tenant without SSO: %d", r.Status)
		}
	})

	recs, err := e.Store.ListAuditRecords(t.Context(), a.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range recs {
		if rec.Action == "guide.login" {
			got = append(got, rec.Status+" "+fmtReason(rec.Meta["reason"]))
		}
	}
	want := []string{"success ", "failed the code exchange failed", "failed wrong state", "failed no single sign-on in progress in this browser",
		"failed wrong nonce", "failed no user of the tenant has this e-mail address as name", "failed the e-mail domain is not allowed for the tenant",
		"failed the provider vouches for no verified e-mail address"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audited guide logins:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func fmtReason(v any) string {
	s, _ := v.(string)
	return s
}
