package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/oidctest"
	"github.com/latchkey/latchkey/latchkeytest"
)

// fedEnv is a platform (over TLS, so the flow cookie is __Host-) with a
// tenant whose provider "corp" is an OpenID provider of its own
// (internal/oidctest), a relying party of the tenant, and alice, whose
// verified address is alice@acme.example.
type fedEnv struct {
	s        *oidcServer
	idp      *oidctest.Provider
	rp       *relyingParty
	tenantID string
	aliceID  string
	base     string // the tenant's identity-providers route
}

func allowPrivate(c *latchkey.Config) { c.AllowPrivateEndpoints = true }

func newFedEnv(t *testing.T, provider map[string]any) *fedEnv {
	t.Helper()
	s := newOIDCServer(t, allowPrivate)
	tn := s.api("POST", "/api/v1/admin/tenants", map[string]string{"name": "Acme", "code": "ACMEFED001"})
	e := &fedEnv{s: s, tenantID: tn["id"].(string)}
	u := s.api("POST", "/api/v1/admin/tenants/"+e.tenantID+"/users", map[string]any{"name": "alice", "password": "user-password-1",
		"email": "alice@acme.example", "emailVerified": true})
	e.aliceID = u["id"].(string)
	e.idp = oidctest.New("latchkey-acme", "acme-client-secret", time.Now)
	t.Cleanup(e.idp.Close)
	e.base = "/api/v1/admin/tenants/" + e.tenantID + "/identity-providers"
	body := map[string]any{"id": "corp", "displayName": "Corp", "type": "oidc", "issuer": e.idp.Issuer(), "clientId": e.idp.ClientID,
		"clientSecret": e.idp.ClientSecret, "allowedDomains": []string{"acme.example"}, "linking": "verifiedEmail", "provisioning": "jit"}
	for k, v := range provider {
		body[k] = v
	}
	p := s.api("POST", e.base, body)
	if p["redirectUri"] != s.url+"/oauth/v1/federation/ACMEFED001/corp/callback" || strings.Contains(jsonString(p), e.idp.ClientSecret) {
		t.Fatalf("created provider: %v", p)
	}
	cl := s.api("POST", "/api/v1/admin/tenants/"+e.tenantID+"/oauth-clients", map[string]any{"name": "Acme web",
		"scopes": []string{"openid", "profile", "email", "offline_access"}, "grant_types": []string{"authorization_code", "refresh_token"}, "redirect_uris": []string{"http://127.0.0.1/cb"}})
	e.rp = newRelyingParty(t, s, cl["client_id"].(string), cl["client_secret"].(string))
	return e
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// upstream starts a sign-in at the relying party, presses "Sign in with
// <provider>" and follows every redirect (through the upstream and the
// callback); it returns the last response.
func (b *browser) upstream(rpURL, provider string) (*url.URL, int, string) {
	b.t.Helper()
	pageURL, status, page := b.get(rpURL + "/login")
	if status != 200 || !strings.Contains(page, `name="provider" value="`+provider+`"`) {
		b.t.Fatalf("sign-in page %s: %d %s", pageURL, status, page)
	}
	return b.pressProvider(pageURL, page, provider)
}

func (b *browser) pressProvider(pageURL *url.URL, page, provider string) (*url.URL, int, string) {
	b.t.Helper()
	csrf, request := formValues(b.t, []byte(page))
	resp, err := b.c.PostForm(pageURL.Scheme+"://"+pageURL.Host+pageURL.Path, url.Values{"csrf_token": {csrf}, "request": {request}, "provider": {provider}, "username": {""}, "password": {""}})
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Request.URL, resp.StatusCode, string(body)
}

// stopping is the browser's client that stops at the first redirect.
func (b *browser) stopping() *http.Client {
	c := *b.c
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// TestFederationSignIn signs in through an upstream OpenID provider:
// just in time provisioning, the link used again, an automatic link to a
// verified account, and each refusal of API-federation.md.
func TestFederationSignIn(t *testing.T) {
	e := newFedEnv(t, nil)
	s := e.s

	t.Run("jit", func(t *testing.T) {
		e.idp.SignInClaims("u-bob", map[string]any{"email": "Bob@ACME.example", "email_verified": true, "name": "Bob Builder", "given_name": "Bob"})
		b := newBrowser(t, s)
		_, status, body := b.upstream(e.rp.srv.URL, "corp")
		res := e.rp.result()
		if status != 200 || res.err != nil {
			t.Fatalf("JIT sign-in: %d %s %v", status, body, res.err)
		}
		if !slices.Equal(anyStrings(res.claims["amr"]), []string{"fed"}) {
			t.Errorf("amr %v, want [fed]", res.claims["amr"])
		}
		users := s.api("GET", "/api/v1/admin/tenants/"+e.tenantID+"/users?name=bob@acme.example", nil)
		list, _ := users["resources"].([]any)
		if len(list) != 1 {
			t.Fatalf("JIT user: %v", users)
		}
		bob := list[0].(map[string]any)
		if bob["id"] != res.idToken.Subject || bob["email"] != "bob@acme.example" || bob["emailVerified"] != true || bob["displayName"] != "Bob Builder" ||
			!slices.Equal(anyStrings(bob["roles"]), []string{"user"}) {
			t.Errorf("JIT user %v (ID token sub %s)", bob, res.idToken.Subject)
		}
		// The same upstream identity again: the link, no new user.
		e.idp.SignInClaims("u-bob", map[string]any{"email": "bob@acme.example", "email_verified": true})
		_, status, body = newBrowser(t, s).upstream(e.rp.srv.URL, "corp")
		if status != 200 || !strings.Contains(body, "signed in as") {
			t.Fatalf("linked sign-in: %d %s", status, body)
		}
		if again := e.rp.result(); again.err != nil || again.idToken.Subject != res.idToken.Subject {
			t.Errorf("linked sign-in: %d %v", status, again.err)
		}
	})

	t.Run("auto-link", func(t *testing.T) {
		e.idp.SignInClaims("u-alice", map[string]any{"email": "alice@acme.example", "email_verified": true})
		_, status, body := newBrowser(t, s).upstream(e.rp.srv.URL, "corp")
		res := e.rp.result()
		if status != 200 || res.err != nil || res.idToken.Subject != e.aliceID {
			t.Fatalf("auto-link: %d %s %v", status, body, res.err)
		}
	})

	// The account-takeover cases: none signs anyone in.
	refused := func(t *testing.T, status int, body string, wantStatus int, want string) {
		t.Helper()
		if status != wantStatus || !strings.Contains(body, want) {
			t.Errorf("status %d, want %d with %q: %s", status, wantStatus, want, body)
		}
		select {
		case r := <-e.rp.results:
			t.Errorf("the relying party got a callback: %v", r)
		default:
		}
	}
	t.Run("unverified email", func(t *testing.T) {
		e.idp.SignInClaims("u-mallory", map[string]any{"email": "alice@acme.example", "email_verified": false})
		_, status, body := newBrowser(t, s).upstream(e.rp.srv.URL, "corp")
		refused(t, status, body, 200, "An account with this e-mail exists. Sign in to connect Corp.")
	})
	t.Run("domain not allowed", func(t *testing.T) {
		e.idp.SignInClaims("u-eve", map[string]any{"email": "eve@evil.example", "email_verified": true})
		_, status, body := newBrowser(t, s).upstream(e.rp.srv.URL, "corp")
		refused(t, status, body, 400, "allowed domains")
	})
	t.Run("upstream error", func(t *testing.T) {
		e.idp.FailNext("access_denied")
		_, status, body := newBrowser(t, s).upstream(e.rp.srv.URL, "corp")
		refused(t, status, body, 200, "Corp did not sign you in")
	})
	t.Run("wrong nonce", func(t *testing.T) {
		e.idp.SignInClaims("u-bob", map[string]any{"email": "bob@acme.example", "email_verified": true})
		e.idp.WrongNonce("forged")
		defer e.idp.WrongNonce("")
		_, status, body := newBrowser(t, s).upstream(e.rp.srv.URL, "corp")
		refused(t, status, body, 400, "nonce")
	})

	// callbackOf runs browser b up to the upstream's redirect back and
	// returns the callback URL without following it.
	callbackOf := func(t *testing.T, b *browser) *url.URL {
		t.Helper()
		pageURL, _, page := b.get(e.rp.srv.URL + "/login")
		csrf, request := formValues(t, []byte(page))
		c := b.stopping()
		resp, err := c.PostForm(pageURL.Scheme+"://"+pageURL.Host+pageURL.Path, url.Values{"csrf_token": {csrf}, "request": {request}, "provider": {"corp"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("start: %d", resp.StatusCode)
		}
		if got := resp.Cookies(); len(got) == 0 || got[0].Name != "__Host-latchkey-fed" || !got[0].HttpOnly || !got[0].Secure || got[0].SameSite != http.SameSiteLaxMode {
			t.Errorf("flow cookie %v", got)
		}
		resp, err = c.Get(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		back, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusFound {
			t.Fatalf("upstream: %d %v", resp.StatusCode, err)
		}
		return back
	}
	t.Run("state from another browser", func(t *testing.T) {
		e.idp.SignInClaims("u-alice", map[string]any{"email": "alice@acme.example", "email_verified": true})
		victim, attacker := newBrowser(t, s), newBrowser(t, s)
		cb := callbackOf(t, attacker) // the attacker's code...
		callbackOf(t, victim)         // ...in a victim browser with its own flow
		_, status, body := victim.get(cb.String())
		refused(t, status, body, 400, federation.MsgExpired)
		jar, _ := cookiejar.New(nil) // and a browser with no flow at all
		fresh := *victim.c
		fresh.Jar = jar
		resp, err := fresh.Get(cb.String())
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		refused(t, resp.StatusCode, string(got), 400, federation.MsgExpired)
	})
	t.Run("callback of another provider", func(t *testing.T) {
		s.api("POST", e.base, map[string]any{"id": "other", "displayName": "Other", "type": "oidc", "issuer": e.idp.Issuer(),
			"clientId": e.idp.ClientID, "clientSecret": e.idp.ClientSecret})
		b := newBrowser(t, s)
		cb := callbackOf(t, b)
		cb.Path = strings.Replace(cb.Path, "/corp/", "/other/", 1)
		_, status, body := b.get(cb.String())
		refused(t, status, body, 400, federation.MsgExpired)
	})
	t.Run("flow cookie spent", func(t *testing.T) {
		e.idp.SignInClaims("u-alice", map[string]any{"email": "alice@acme.example", "email_verified": true})
		b := newBrowser(t, s)
		cb := callbackOf(t, b)
		if _, status, _ := b.get(cb.String()); status != 200 {
			t.Fatalf("callback: %d", status)
		}
		e.rp.result()
		_, status, body := b.get(cb.String())
		refused(t, status, body, 400, federation.MsgExpired)
	})
	t.Run("start without CSRF token, unknown provider", func(t *testing.T) {
		b := newBrowser(t, s)
		pageURL, _, page := b.get(e.rp.srv.URL + "/login")
		_, request := formValues(t, []byte(page))
		resp, err := b.c.PostForm(pageURL.String(), url.Values{"request": {request}, "provider": {"corp"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("no CSRF token: %d", resp.StatusCode)
		}
		_, status, body := b.pressProvider(pageURL, page, "nope")
		refused(t, status, body, 400, federation.MsgUnknown)
		s.api("PATCH", e.base+"/other", map[string]any{"enabled": false})
		_, status, body = b.pressProvider(pageURL, page, "other")
		refused(t, status, body, 400, federation.MsgUnknown)
	})
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	out := []string{}
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestFederationIDPHintAndClaim: idp_hint=<id> at the authorization
// endpoint skips the sign-in page (an unknown or not allowed one shows
// it, a malformed one is invalid_request), and the tokens of a federated
// sign-in, refreshed ones too, carry the provider's id as idp.
func TestFederationIDPHintAndClaim(t *testing.T) {
	e := newFedEnv(t, nil)
	s := e.s
	e.idp.SignInClaims("u-alice", map[string]any{"email": "alice@acme.example", "email_verified": true})

	b := newBrowser(t, s)
	last, status, body := b.get(e.rp.srv.URL + "/login?idp_hint=corp")
	if status != 200 || !strings.Contains(body, "signed in as "+e.aliceID) {
		t.Fatalf("idp_hint=corp: %s %d %s", last, status, body)
	}
	res := e.rp.result()
	if res.err != nil || res.claims["idp"] != "corp" || !slices.Equal(anyStrings(res.claims["amr"]), []string{"fed"}) {
		t.Fatalf("federated ID token: %v %v", res.err, res.claims)
	}
	// The refreshed ID token keeps it.
	tok, err := e.rp.conf.TokenSource(e.rp.ctx, &oauth2.Token{RefreshToken: res.token.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := e.rp.verifier.Verify(e.rp.ctx, raw)
	var claims map[string]any
	if err == nil {
		err = idt.Claims(&claims)
	}
	if err != nil || claims["idp"] != "corp" {
		t.Errorf("refreshed ID token: %v %v", err, claims)
	}

	// A password sign-in has no idp.
	b2 := newBrowser(t, s)
	pageURL, _, page := b2.get(e.rp.srv.URL + "/login")
	if _, status, body := b2.signIn(pageURL, page, "alice", "user-password-1"); status != 200 {
		t.Fatalf("password sign-in: %d %s", status, body)
	}
	if res := e.rp.result(); res.err != nil || res.claims["idp"] != nil {
		t.Errorf("password sign-in: %v idp %v", res.err, res.claims["idp"])
	}

	// An unknown or disabled provider: the page, with its buttons.
	s.api("POST", e.base, map[string]any{"id": "off", "displayName": "Off", "type": "oidc", "issuer": e.idp.Issuer(),
		"clientId": e.idp.ClientID, "clientSecret": e.idp.ClientSecret, "enabled": false})
	for _, hint := range []string{"nope", "off"} {
		last, status, body := newBrowser(t, s).get(e.rp.srv.URL + "/login?idp_hint=" + hint)
		if status != 200 || last.Path != "/oauth/v1/sign-in" || !strings.Contains(body, `id="provider-corp"`) {
			t.Errorf("idp_hint=%s: %s %d", hint, last, status)
		}
	}
	// A malformed hint is the client's error.
	newBrowser(t, s).get(e.rp.srv.URL + "/login?idp_hint=Bad%20Hint")
	if res := e.rp.result(); res.err == nil || !strings.Contains(res.err.Error(), "invalid_request") {
		t.Errorf("malformed idp_hint: %v", res.err)
	}
}

// TestFederationFailuresThrottle: a refused sign-in of an upstream
// identity linked to a user counts against that user as a wrong password
// does (5 in 15 minutes), after which neither its password nor the
// upstream signs it in; refusals of an identity linked to no one count
// nothing.
func TestFederationFailuresThrottle(t *testing.T) {
	e := newFedEnv(t, nil)
	s := e.s
	login := func() int {
		resp, err := s.http.Post(s.srv.URL+"/api/v1/auth/tokens/", "application/json",
			strings.NewReader(`{"name":"alice","password":"user-password-1","auth_domain":"ACMEFED001"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// alice's identity, linked by its verified address.
	e.idp.SignInClaims("u-alice", map[string]any{"email": "alice@acme.example", "email_verified": true})
	if _, status, body := newBrowser(t, s).upstream(e.rp.srv.URL, "corp"); status != 200 {
		t.Fatalf("auto-link: %d %s", status, body)
	}
	e.rp.result()
	// Someone else's identity outside the allowed domains: refused, not counted.
	e.idp.SignInClaims("u-stranger", map[string]any{"email": "s@elsewhere.example", "email_verified": true})
	for range 6 {
		if _, status, _ := newBrowser(t, s).upstream(e.rp.srv.URL, "corp"); status != 400 {
			t.Fatalf("stranger: %d", status)
		}
	}
	if got := login(); got != 200 {
		t.Fatalf("alice's password after a stranger's refusals: %d", got)
	}
	// alice's identity now fails the provider's requiredClaims: each
	// refusal counts against alice.
	s.api("PATCH", e.base+"/corp", map[string]any{"requiredClaims": map[string]string{"hd": "acme.example"}})
	e.idp.SignInClaims("u-alice", map[string]any{"email": "alice@acme.example", "email_verified": true})
	for range 5 {
		if _, status, _ := newBrowser(t, s).upstream(e.rp.srv.URL, "corp"); status != 400 {
			t.Fatalf("required claim: %d", status)
		}
	}
	if got := login(); got != http.StatusTooManyRequests {
		t.Errorf("alice's password after 5 refused upstream sign-ins: %d, want 429", got)
	}
	// And the upstream, satisfied again, does not sign a throttled user in.
	e.idp.SignInClaims("u-alice", map[string]any{"email": "alice@acme.example", "email_verified": true, "hd": "acme.example"})
	if _, status, body := newBrowser(t, s).upstream(e.rp.srv.URL, "corp"); status != http.StatusTooManyRequests {
		t.Errorf("throttled upstream sign-in: %d %s", status, body)
	}
	select {
	case r := <-e.rp.results:
		t.Errorf("the relying party got a callback: %v", r.claims)
	default:
	}
}

// TestFederationStepUpKeepsIDP: a request for acr mfa on a federated
// session asks alice only her second factor, and the session that replaces
// it (same sid) still names the provider: the ID token keeps idp and fed.
func TestFederationStepUpKeepsIDP(t *testing.T) {
	e := newFedEnv(t, nil)
	s := e.s
	st, login := s.post("/api/v1/auth/tokens/", map[string]any{"name": "alice", "password": "user-password-1", "auth_domain": "ACMEFED001"})
	if st != http.StatusOK {
		t.Fatalf("alice's login: %d %v", st, login)
	}
	enroll := func(method, path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, s.srv.URL+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+login["jwt"].(string))
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out := map[string]any{}
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, out)
		}
		return out
	}
	dev := enroll("POST", "/api/v1/me/mfa/totp", map[string]any{"friendlyName": "phone"})
	secret, err := latchkeytest.TOTPSecret(dev["secret"].(string))
	if err != nil {
		t.Fatal(err)
	}
	enroll("POST", "/api/v1/me/mfa/totp/"+dev["id"].(string)+"/confirm", map[string]any{"otp": latchkeytest.TOTP(secret, time.Now(), 6)})

	e.idp.SignInClaims("u-alice", map[string]any{"email": "alice@acme.example", "email_verified": true})
	b := newBrowser(t, s)
	if last, status, body := b.get(e.rp.srv.URL + "/login?idp_hint=corp"); status != 200 || !strings.Contains(body, "signed in as "+e.aliceID) {
		t.Fatalf("federated sign-in: %s %d %s", last, status, body)
	}
	first := e.rp.result()
	if first.err != nil || first.claims["idp"] != "corp" {
		t.Fatalf("federated ID token: %v %v", first.err, first.claims)
	}

	pageURL, status, page := b.get(e.rp.srv.URL + "/login?acr_values=" + url.QueryEscape(identity.ACRMFA))
	if status != 200 || !strings.Contains(page, `name="mfa_token"`) || strings.Contains(page, `name="password"`) {
		t.Fatalf("step-up page: %s %d %s", pageURL, status, page)
	}
	csrf, request := formValues(t, []byte(page))
	resp, err := b.c.PostForm(pageURL.Scheme+"://"+pageURL.Host+pageURL.Path, url.Values{"csrf_token": {csrf}, "request": {request},
		"mfa_token": {hidden(t, []byte(page), mfaTokenInput)}, "otp": {latchkeytest.TOTP(secret, time.Now().Add(30*time.Second), 6)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "signed in as "+e.aliceID) {
		t.Fatalf("second factor: %d %s", resp.StatusCode, body)
	}
	res := e.rp.result()
	if res.err != nil {
		t.Fatal(res.err)
	}
	amr := anyStrings(res.claims["amr"])
	if res.claims["idp"] != "corp" || res.claims["acr"] != identity.ACRMFA || !slices.Contains(amr, "fed") || !slices.Contains(amr, "otp") || res.claims["sid"] != first.claims["sid"] {
		t.Errorf("stepped-up ID token: idp %v acr %v amr %v sid %v (before: sid %v)", res.claims["idp"], res.claims["acr"], amr, res.claims["sid"], first.claims["sid"])
	}
}
