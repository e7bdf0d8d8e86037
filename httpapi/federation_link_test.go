package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/identity"
)

// postPage posts a page's form fields to path on the platform as browser
// b and follows the redirects.
func (b *browser) postPage(path string, form url.Values) (*url.URL, int, string) {
	b.t.Helper()
	resp, err := b.c.PostForm(b.s.url+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Request.URL, resp.StatusCode, string(body)
}

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("page without its CSRF token: %s", page)
	}
	return m[1]
}

// TestFederationLinking covers the explicit links: an existing account
// connected after its password proved it, /me/identities, an
// administrator's link, and the refusals (an identity linked to someone
// else, the last way to sign in).
func TestFederationLinking(t *testing.T) {
	e := newFedEnv(t, map[string]any{"linking": "none", "provisioning": "jit"})
	s := e.s

	// Step 2: alice's address, but linking none: sign in to connect.
	e.idp.SignInClaims("u-alice", map[string]any{"email": "alice@acme.example", "email_verified": true})
	b := newBrowser(t, s)
	pageURL, status, page := b.upstream(e.rp.srv.URL, "corp")
	if status != 200 || !strings.Contains(page, "An account with this e-mail exists. Sign in to connect Corp.") {
		t.Fatalf("pending: %d %s", status, page)
	}
	pageURL.Path, pageURL.RawQuery = "/oauth/v1/sign-in", "" // the notice was the callback's answer
	_, status, page = b.signIn(pageURL, page, "alice", "user-password-1")
	if status != 200 || !strings.Contains(page, "Connect Corp (alice@acme.example) to alice?") {
		t.Fatalf("the question: %d %s", status, page)
	}
	if _, status, body := b.postPage("/oauth/v1/account/identities", url.Values{"csrf_token": {csrfOf(t, page)}, "action": {"confirm"}}); status != 200 || !strings.Contains(body, "signed in as "+e.aliceID) {
		t.Fatalf("confirm: %d %s", status, body)
	}
	if res := e.rp.result(); res.err != nil || res.idToken.Subject != e.aliceID {
		t.Fatalf("after confirm: %v", res.err)
	}
	// The link now signs alice in through Corp.
	_, status, _ = newBrowser(t, s).upstream(e.rp.srv.URL, "corp")
	if res := e.rp.result(); status != 200 || res.err != nil || res.idToken.Subject != e.aliceID {
		t.Fatalf("linked sign-in: %d %v", status, res.err)
	}
	// The account page lists it.
	_, status, page = b.get(s.url + "/oauth/v1/account/identities")
	if status != 200 || !strings.Contains(page, "Corp (alice@acme.example)") {
		t.Errorf("account page: %d %s", status, page)
	}

	alice := "Bearer " + loginJWTTenant(t, s, "alice", "user-password-1", "ACMEFED001")
	me := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, s.srv.URL+"/api/v1/me/identities"+path, nil)
		req.Header.Set("Authorization", alice)
		resp, err := s.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if status, body := me("GET", ""); status != 200 || !strings.Contains(body, `"providerId":"corp","subject":"u-alice","email":"alice@acme.example"`) {
		t.Errorf("GET /me/identities: %d %s", status, body)
	}
	if status, _ := me("DELETE", "/nope"); status != 404 {
		t.Errorf("unlink unknown: %d", status)
	}
	if status, _ := me("DELETE", "/corp"); status != 204 {
		t.Errorf("unlink (alice has a password): %d", status)
	}

	// An administrator links u-x to alice (a migration); carol cannot
	// take it, neither by the admin route nor by "Connect".
	users := "/api/v1/admin/tenants/" + e.tenantID + "/users/"
	s.api("POST", users+e.aliceID+"/identities", map[string]any{"providerId": "corp", "subject": "u-x"})
	carol := s.api("POST", "/api/v1/admin/tenants/"+e.tenantID+"/users", map[string]any{"name": "carol", "password": "user-password-1"})
	if status := statusOf(t, s, "POST", users+carol["id"].(string)+"/identities", `{"providerId":"corp","subject":"u-x"}`); status != 409 {
		t.Errorf("admin link of an identity linked to alice: %d", status)
	}
	if status := statusOf(t, s, "POST", users+carol["id"].(string)+"/identities", `{"providerId":"nope","subject":"u-y"}`); status != 400 {
		t.Errorf("admin link to an unknown provider: %d", status)
	}
	cb := newBrowser(t, s)
	pageURL, _, page = cb.get(e.rp.srv.URL + "/login")
	cb.signIn(pageURL, page, "carol", "user-password-1")
	e.rp.result()
	_, status, page = cb.get(s.url + "/oauth/v1/account/identities")
	if status != 200 || !strings.Contains(page, `id="connect-corp"`) {
		t.Fatalf("carol's account page: %d %s", status, page)
	}
	e.idp.SignInClaims("u-x", map[string]any{"email": "x@acme.example", "email_verified": true})
	_, status, body := cb.postPage("/oauth/v1/account/identities", url.Values{"csrf_token": {csrfOf(t, page)}, "action": {"connect"}, "provider": {"corp"}})
	if status != 409 || !strings.Contains(body, federation.MsgLinkedElse) {
		t.Errorf("connect an identity linked to alice: %d %s", status, body)
	}
	if _, status, _ := cb.postPage("/oauth/v1/account/identities", url.Values{"action": {"connect"}, "provider": {"corp"}}); status != 403 {
		t.Errorf("connect without the CSRF token: %d", status)
	}
	// carol connects an identity of her own.
	e.idp.SignInClaims("u-carol", map[string]any{"email": "carol@acme.example", "email_verified": true})
	_, status, body = cb.postPage("/oauth/v1/account/identities", url.Values{"csrf_token": {csrfOf(t, page)}, "action": {"connect"}, "provider": {"corp"}})
	if status != 200 || !strings.Contains(body, `id="disconnect-corp"`) {
		t.Errorf("connect: %d %s", status, body)
	}
	if _, status, _ := newBrowser(t, s).get(s.url + "/oauth/v1/account/identities"); status != 401 {
		t.Errorf("account page without a session: %d", status)
	}

	// A JIT user has no password: its only link cannot go.
	e.idp.SignInClaims("u-dan", map[string]any{"email": "dan@acme.example", "email_verified": true})
	db := newBrowser(t, s)
	db.upstream(e.rp.srv.URL, "corp")
	e.rp.result()
	_, _, page = db.get(s.url + "/oauth/v1/account/identities")
	_, status, body = db.postPage("/oauth/v1/account/identities", url.Values{"csrf_token": {csrfOf(t, page)}, "action": {"disconnect"}, "provider": {"corp"}})
	if status != 409 || !strings.Contains(body, "last way to sign in") {
		t.Errorf("disconnect the last way to sign in: %d %s", status, body)
	}
	// The same refusal through the API: dan's own platform JWT.
	list := s.api("GET", "/api/v1/admin/tenants/"+e.tenantID+"/users?limit=1000", nil)
	var danID string
	for _, u := range list["resources"].([]any) {
		if m := u.(map[string]any); m["email"] == "dan@acme.example" {
			danID = m["id"].(string)
		}
	}
	dan, _, err := s.p.Identity.Keys().Sign(t.Context(), identity.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: danID},
		TenantID: e.tenantID, TenantCode: "ACMEFED001", Roles: []string{identity.RoleUser}}, time.Minute)
	if err != nil || danID == "" {
		t.Fatalf("dan's JWT: %q %v", danID, err)
	}
	req, _ := http.NewRequest("DELETE", s.srv.URL+"/api/v1/me/identities/corp", nil)
	req.Header.Set("Authorization", "Bearer "+dan)
	if resp, err := s.http.Do(req); err != nil || resp.StatusCode != 409 {
		t.Errorf("DELETE /me/identities/corp, the last way in: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// The account page's form: disconnecting a provider with no link
	// (404, shown on the page), connecting an unknown one and an
	// unknown action (the error page, 400).
	_, _, page = cb.get(s.url + "/oauth/v1/account/identities")
	if _, status, _ := cb.postPage("/oauth/v1/account/identities", url.Values{"csrf_token": {csrfOf(t, page)}, "action": {"disconnect"}, "provider": {"nope"}}); status != 404 {
		t.Errorf("disconnect a provider with no link: %d", status)
	}
	if _, status, _ := cb.postPage("/oauth/v1/account/identities", url.Values{"csrf_token": {csrfOf(t, page)}, "action": {"connect"}, "provider": {"nope"}}); status != 400 {
		t.Errorf("connect an unknown provider: %d", status)
	}
	if _, status, _ := cb.postPage("/oauth/v1/account/identities", url.Values{"csrf_token": {csrfOf(t, page)}, "action": {"dance"}}); status != 400 {
		t.Errorf("an unknown action: %d", status)
	}
}

func statusOf(t *testing.T, s *oidcServer, method, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func loginJWTTenant(t *testing.T, s *oidcServer, name, password, domain string) string {
	t.Helper()
	resp, err := s.http.Post(s.srv.URL+"/api/v1/auth/tokens/", "application/json",
		strings.NewReader(`{"name":"`+name+`","password":"`+password+`","auth_domain":"`+domain+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr identity.TokenResponse
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || tr.JWT == "" {
		t.Fatalf("login: %d %v", resp.StatusCode, err)
	}
	return tr.JWT
}
