package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// oidcServer is a platform served over TLS on https://localhost:<port>,
// whose issuer is that URL, as a relying party sees a real provider.
type oidcServer struct {
	t     *testing.T
	url   string
	p     *latchkey.Platform
	st    *memstore.Store
	srv   *httptest.Server
	admin string // root admin JWT
	root  identity.Tenant
	http  *http.Client // trusts the server's certificate at s.url
}

func newOIDCServer(t *testing.T, configure ...func(*latchkey.Config)) *oidcServer {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	st := memstore.New()
	cfg := latchkey.Config{Store: st, MasterKey: seal.NewKey(), Issuer: u,
		PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true}
	for _, o := range configure {
		o(&cfg)
	}
	p, err := latchkey.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	boot, err := p.Bootstrap(t.Context(), "admin-password-1")
	if err != nil {
		t.Fatal(err)
	}
	opts := httpapi.Defaults()
	opts.PublicURL = u
	srv.Config.Handler = httpapi.New(p, opts)
	s := &oidcServer{t: t, url: u, p: p, st: st, srv: srv, root: boot.Tenant}
	// httptest's certificate names 127.0.0.1 and example.com, not
	// localhost: clients check it under the name it has.
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.ServerName = "example.com"
	s.http = &http.Client{Transport: tr}
	s.admin = loginJWT(t, srv, "admin", "admin-password-1")
	return s
}

// api calls an admin route with the root admin's JWT.
func (s *oidcServer) api(method, path string, body any) map[string]any {
	s.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.srv.URL+path, strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode >= 300 {
		s.t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, out)
	}
	return out
}

// tenant creates a tenant with one user (password user-password-1).
func (s *oidcServer) tenant(name, code, user string) (tenantID, userID string) {
	s.t.Helper()
	tn := s.api("POST", "/api/v1/admin/tenants", map[string]string{"name": name, "code": code})
	tenantID = tn["id"].(string)
	u := s.api("POST", "/api/v1/admin/tenants/"+tenantID+"/users", map[string]any{"name": user, "password": "user-password-1"})
	return tenantID, u["id"].(string)
}

// rpResult is what the relying party's callback saw.
type rpResult struct {
	query   url.Values
	token   *oauth2.Token
	idToken *gooidc.IDToken
	claims  map[string]any
	err     error
}

// relyingParty is an application using golang.org/x/oauth2 and go-oidc
// against the platform, as docs/oidc.md shows: /login starts the
// authorization code flow with PKCE, state and nonce; /cb checks state,
// redeems the code, verifies the ID token (signature, issuer, audience,
// expiry), its nonce and at_hash, and reports the result.
type relyingParty struct {
	t        *testing.T
	srv      *httptest.Server
	ctx      context.Context
	conf     oauth2.Config
	provider *gooidc.Provider
	verifier *gooidc.IDTokenVerifier

	mu      sync.Mutex
	pending map[string][2]string // state -> PKCE verifier, nonce
	results chan rpResult
}

func newRelyingParty(t *testing.T, s *oidcServer, clientID, secret string) *relyingParty {
	t.Helper()
	rp := &relyingParty{t: t, pending: map[string][2]string{}, results: make(chan rpResult, 8)}
	rp.srv = httptest.NewServer(http.HandlerFunc(rp.serve))
	t.Cleanup(rp.srv.Close)
	rp.ctx = gooidc.ClientContext(t.Context(), s.http)
	p, err := gooidc.NewProvider(rp.ctx, s.url)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	rp.provider = p
	rp.conf = oauth2.Config{ClientID: clientID, ClientSecret: secret, Endpoint: p.Endpoint(),
		RedirectURL: rp.srv.URL + "/cb", Scopes: []string{gooidc.ScopeOpenID, "profile", gooidc.ScopeOfflineAccess}}
	rp.verifier = p.Verifier(&gooidc.Config{ClientID: clientID, SupportedSigningAlgs: []string{"RS256", "ES256"}})
	return rp
}

func (rp *relyingParty) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/login":
		state, nonce, verifier := oauth2.GenerateVerifier()[:20], oauth2.GenerateVerifier()[:20], oauth2.GenerateVerifier()
		rp.mu.Lock()
		rp.pending[state] = [2]string{verifier, nonce}
		rp.mu.Unlock()
		opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), gooidc.Nonce(nonce)}
		for _, k := range []string{"prompt", "max_age", "scope", "acr_values", "idp_hint"} {
			if v := r.URL.Query().Get(k); v != "" {
				opts = append(opts, oauth2.SetAuthURLParam(k, v))
			}
		}
		http.Redirect(w, r, rp.conf.AuthCodeURL(state, opts...), http.StatusFound)
	case "/cb":
		res := rp.callback(r)
		rp.results <- res
		if res.err != nil {
			http.Error(w, res.err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `<!doctype html><p id="rp">signed in as %s</p>`, res.idToken.Subject)
	default:
		http.NotFound(w, r)
	}
}

func (rp *relyingParty) callback(r *http.Request) rpResult {
	q := r.URL.Query()
	res := rpResult{query: q}
	rp.mu.Lock()
	p, ok := rp.pending[q.Get("state")]
	delete(rp.pending, q.Get("state"))
	rp.mu.Unlock()
	if !ok {
		res.err = fmt.Errorf("unknown state %q", q.Get("state"))
		return res
	}
	if q.Get("error") != "" {
		res.err = fmt.Errorf("error %s: %s", q.Get("error"), q.Get("error_description"))
		return res
	}
	if q.Get("iss") != rp.provider.Endpoint().AuthURL[:len(q.Get("iss"))] {
		res.err = fmt.Errorf("iss %q is not the provider's", q.Get("iss")) // RFC 9207
		return res
	}
	tok, err := rp.conf.Exchange(rp.ctx, q.Get("code"), oauth2.VerifierOption(p[0]))
	if err != nil {
		res.err = err
		return res
	}
	res.token = tok
	res.idToken, res.err = rp.verify(tok, p[1])
	if res.err == nil {
		res.err = res.idToken.Claims(&res.claims)
	}
	return res
}

// verify checks the ID token of a token response: signature, iss, aud,
// exp (go-oidc), then nonce and at_hash.
func (rp *relyingParty) verify(tok *oauth2.Token, nonce string) (*gooidc.IDToken, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, fmt.Errorf("no id_token")
	}
	id, err := rp.verifier.Verify(rp.ctx, raw)
	if err != nil {
		return nil, err
	}
	if nonce != "" && id.Nonce != nonce {
		return nil, fmt.Errorf("nonce %q, want %q", id.Nonce, nonce)
	}
	if err := id.VerifyAccessToken(tok.AccessToken); err != nil {
		return nil, fmt.Errorf("at_hash: %w", err)
	}
	return id, nil
}

// result waits for the callback's result.
func (rp *relyingParty) result() rpResult {
	rp.t.Helper()
	select {
	case r := <-rp.results:
		return r
	case <-rp.t.Context().Done():
		rp.t.Fatal("no callback")
		return rpResult{}
	}
}

// browser is a Go HTTP client with a cookie jar that follows redirects
// and fills the hosted sign-in page's form, as a user would.
type browser struct {
	t *testing.T
	c *http.Client
	s *oidcServer
}

func newBrowser(t *testing.T, s *oidcServer) *browser {
	jar, _ := cookiejar.New(nil)
	c := s.http
	cl := *c
	cl.Jar = jar
	return &browser{t: t, c: &cl, s: s}
}

// get follows redirects from u and returns the last response's URL, status and body.
func (b *browser) get(u string) (*url.URL, int, string) {
	b.t.Helper()
	resp, err := b.c.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Request.URL, resp.StatusCode, string(body)
}

// signIn posts the sign-in page's form with a name and password and
// returns the final URL, status and body after the redirects.
func (b *browser) signIn(pageURL *url.URL, page, user, password string) (*url.URL, int, string) {
	b.t.Helper()
	csrf, request := formValues(b.t, []byte(page))
	resp, err := b.c.PostForm(pageURL.Scheme+"://"+pageURL.Host+pageURL.Path, url.Values{"csrf_token": {csrf}, "request": {request}, "username": {user}, "password": {password}})
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Request.URL, resp.StatusCode, string(body)
}

// TestOIDCConfidentialClientWithPassword runs the whole code flow of a
// confidential client with golang.org/x/oauth2 and go-oidc as the
// relying party: sign-in by password on the hosted page, ID token
// verified (RS256 from the JWKS, nonce, at_hash) with amr pwd, sid and
// auth_time, UserInfo, refresh rotation (the old refresh token refused
// and its grant revoked), prompt=none answered at once from the browser
// session, logout, and prompt=none after it answering login_required.
func TestOIDCConfidentialClientWithPassword(t *testing.T) {
	s := newOIDCServer(t)
	tenantID, userID := s.tenant("Acme", "ACMEOIDC01", "alice")
	cl := s.api("POST", "/api/v1/admin/tenants/"+tenantID+"/oauth-clients", map[string]any{"name": "Acme web",
		"scopes": []string{"openid", "profile", "offline_access"}, "grant_types": []string{"authorization_code", "refresh_token"},
		"redirect_uris": []string{"http://127.0.0.1/cb"}, "post_logout_redirect_uris": []string{"http://127.0.0.1/bye"}})
	rp := newRelyingParty(t, s, cl["client_id"].(string), cl["client_secret"].(string))
	b := newBrowser(t, s)

	pageURL, status, page := b.get(rp.srv.URL + "/login")
	if status != 200 || !strings.Contains(page, `name="username"`) || !strings.Contains(page, "Sign in with a passkey") {
		t.Fatalf("sign-in page %s: %d %s", pageURL, status, page)
	}
	if _, status, body := b.signIn(pageURL, page, "alice", "user-password-1"); status != 200 || !strings.Contains(body, "signed in as "+userID) {
		t.Fatalf("after sign-in: %d %s", status, body)
	}
	res := rp.result()
	if res.err != nil {
		t.Fatalf("relying party: %v", res.err)
	}
	if res.idToken.Subject != userID || res.claims["sid"] == "" || res.claims["auth_time"] == nil || res.claims["preferred_username"] != "alice" {
		t.Errorf("ID token claims %v", res.claims)
	}
	if amr, _ := res.claims["amr"].([]any); len(amr) != 1 || amr[0] != "pwd" {
		t.Errorf("amr %v, want [pwd]", res.claims["amr"])
	}
	info, err := rp.provider.UserInfo(rp.ctx, oauth2.StaticTokenSource(res.token))
	if err != nil || info.Subject != userID {
		t.Errorf("userinfo %+v %v", info, err)
	}

	// Refresh rotation.
	old := res.token.RefreshToken
	if old == "" {
		t.Fatal("no refresh token with offline_access")
	}
	stale := *res.token
	stale.Expiry = stale.Expiry.Add(-24 * 3600 * 1e9)
	fresh, err := rp.conf.TokenSource(rp.ctx, &stale).Token()
	if err != nil || fresh.RefreshToken == "" || fresh.RefreshToken == old {
		t.Fatalf("refresh: %+v %v", fresh, err)
	}
	if _, err := rp.verify(fresh, ""); err != nil {
		t.Errorf("refreshed ID token: %v", err)
	}
	if _, err := rp.conf.TokenSource(rp.ctx, &stale).Token(); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("reusing the rotated refresh token: %v, want invalid_grant", err)
	}
	// Its replay revoked the whole grant: the fresh refresh token too.
	fresh.Expiry = stale.Expiry
	if _, err := rp.conf.TokenSource(rp.ctx, fresh).Token(); err == nil {
		t.Error("the grant's newest refresh token still works after a replay")
	}

	// A second authorization with prompt=none: the session answers.
	if _, status, body := b.get(rp.srv.URL + "/login?prompt=none"); status != 200 || !strings.Contains(body, "signed in as "+userID) {
		t.Errorf("prompt=none with a session: %d %s", status, body)
	}
	second := rp.result()
	if second.err != nil || second.claims["sid"] != res.claims["sid"] {
		t.Errorf("prompt=none result %v, sid %v want %v", second.err, second.claims["sid"], res.claims["sid"])
	}
	// max_age=0 forces a new sign-in.
	if u, status, page := b.get(rp.srv.URL + "/login?max_age=0"); status != 200 || !strings.Contains(page, `name="password"`) {
		t.Errorf("max_age=0: %s %d", u, status)
	}

	// Logout ends the browser session; prompt=none then needs a sign-in.
	raw := second.token.Extra("id_token").(string)
	logout := s.url + "/oauth/v1/logout?" + url.Values{"id_token_hint": {raw}, "post_logout_redirect_uri": {"http://127.0.0.1/bye"}, "state": {"s1"}}.Encode()
	nf := *b.c
	nf.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := nf.Get(logout)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://127.0.0.1/bye?state=s1" {
		t.Errorf("logout: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, status, _ := b.get(rp.srv.URL + "/login?prompt=none"); status != http.StatusBadRequest {
		t.Errorf("prompt=none after logout: %d", status)
	}
	if r := rp.result(); r.query.Get("error") != "login_required" || r.query.Get("iss") != s.url {
		t.Errorf("prompt=none after logout: %v", r.query)
	}
	recs, err := s.st.ListAuditRecords(t.Context(), tenantID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, r := range recs {
		if strings.HasPrefix(r.Action, "oidc.") {
			actions = append(actions, r.Action+" "+r.Status)
		}
	}
	for _, want := range []string{"oidc.authorize success", "oidc.sign-in success", "oidc.code-exchange success", "oidc.refresh success", "oidc.refresh failed", "oidc.logout success", "oidc.authorize failed"} {
		if !slices.Contains(actions, want) {
			t.Errorf("audit lacks %q: %q", want, actions)
		}
	}
}

// TestOIDCPublicClientWithPassword runs the flow of a public client (no
// secret: PKCE is its proof) whose ID tokens are ES256; the RP verifies
// them through the JWKS. A public client cannot use client_credentials.
func TestOIDCPublicClientWithPassword(t *testing.T) {
	s := newOIDCServer(t)
	tenantID, userID := s.tenant("Acme", "ACMEOIDC02", "bob")
	cl := s.api("POST", "/api/v1/admin/tenants/"+tenantID+"/oauth-clients", map[string]any{"name": "Acme SPA", "type": "public",
		"scopes": []string{"openid", "profile"}, "redirect_uris": []string{"http://127.0.0.1/cb"}, "id_token_signed_response_alg": "ES256"})
	if _, ok := cl["client_secret"]; ok {
		t.Fatalf("a public client got a secret: %v", cl)
	}
	rp := newRelyingParty(t, s, cl["client_id"].(string), "")
	rp.conf.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	rp.conf.Scopes = []string{gooidc.ScopeOpenID, "profile"}
	b := newBrowser(t, s)
	pageURL, _, page := b.get(rp.srv.URL + "/login")
	if _, status, body := b.signIn(pageURL, page, "bob", "user-password-1"); status != 200 {
		t.Fatalf("after sign-in: %d %s", status, body)
	}
	res := rp.result()
	if res.err != nil {
		t.Fatalf("relying party: %v", res.err)
	}
	if res.idToken.Subject != userID || res.token.RefreshToken != "" {
		t.Errorf("sub %s refresh %q", res.idToken.Subject, res.token.RefreshToken)
	}
	raw := res.token.Extra("id_token").(string)
	hdr, _, _ := strings.Cut(raw, ".")
	if !strings.HasPrefix(hdr, "eyJhbGciOiJFUzI1NiI") { // {"alg":"ES256"
		t.Errorf("ID token header %s, want ES256", hdr)
	}
	resp, err := s.http.PostForm(s.srv.URL+"/oauth/v1/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {cl["client_id"].(string)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("client_credentials for a public client: %d", resp.StatusCode)
	}
}

// TestOIDCOtherTenantsUserCannotSignIn: the hosted page of a client
// checks credentials in the client's tenant only; a user of another
// tenant (with the right password there) is refused and gets no code.
func TestOIDCOtherTenantsUserCannotSignIn(t *testing.T) {
	s := newOIDCServer(t)
	tenantA, _ := s.tenant("Acme", "ACMEOIDC03", "alice")
	s.tenant("Bolt", "BOLTOIDC03", "mallory")
	cl := s.api("POST", "/api/v1/admin/tenants/"+tenantA+"/oauth-clients", map[string]any{"name": "Acme web",
		"scopes": []string{"openid"}, "grant_types": []string{"authorization_code"}, "redirect_uris": []string{"http://127.0.0.1/cb"}})
	rp := newRelyingParty(t, s, cl["client_id"].(string), cl["client_secret"].(string))
	rp.conf.Scopes = []string{gooidc.ScopeOpenID}
	b := newBrowser(t, s)
	pageURL, _, page := b.get(rp.srv.URL + "/login")
	u, status, body := b.signIn(pageURL, page, "mallory", "user-password-1")
	if status != http.StatusUnauthorized || u.Host != pageURL.Host || !strings.Contains(body, "Invalid username or password.") {
		t.Errorf("another tenant's user: %s %d %s", u, status, body)
	}
	select {
	case r := <-rp.results:
		t.Errorf("the relying party got a callback: %v", r.query)
	default:
	}
}
