package oidc_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
	"github.com/latchkey/latchkey/seal"
)

const (
	redirect = "https://app.example/cb"
	loopback = "http://127.0.0.1:8000/cb"
	browser  = "browser-one"
)

// fx is a platform with a tenant, its user alice, a confidential client
// and a public one, driven through package oidc alone (no HTTP).
type fx struct {
	t       testing.TB
	e       *latchkeytest.Env
	svc     *oidc.Service
	tenant  latchkeytest.Tenant
	conf    identity.OAuthClient
	secret  string
	public  identity.OAuthClient
	aliceID string
}

func newFx(t testing.TB) *fx {
	t.Helper()
	e := latchkeytest.New(t)
	f := &fx{t: t, e: e, svc: e.Platform.OIDC, tenant: e.NewTenant("Acme")}
	ctx := t.Context()
	admin := identity.Principal{Kind: identity.KindUser, TenantID: e.Root.ID, TenantCode: e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
	u, err := e.Platform.Identity.CreateUser(ctx, admin, f.tenant.ID, "alice", "alice-password-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.aliceID = u.ID.String()
	f.conf, f.secret, err = e.Platform.Identity.RegisterOAuthClient(ctx, admin, f.tenant.ID, identity.NewOAuthClient{Name: "web",
		Scopes: []string{"openid", "profile", "offline_access"}, GrantTypes: []string{"authorization_code", "refresh_token"},
		RedirectURIs: []string{redirect, "http://127.0.0.1/cb"}, PostLogoutRedirectURIs: []string{"https://app.example/bye"}})
	if err != nil {
		t.Fatal(err)
	}
	f.public, _, err = e.Platform.Identity.RegisterOAuthClient(ctx, admin, f.tenant.ID, identity.NewOAuthClient{Name: "spa", Type: identity.ClientPublic,
		Scopes: []string{"openid"}, RedirectURIs: []string{"https://spa.example/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const verifier = "a-verifier-of-forty-three-or-more-characters-long"

func challengeOf(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// params is a valid authorization request of the confidential client,
// changed by set ("" deletes a parameter).
func (f *fx) params(set map[string]string) url.Values {
	q := url.Values{"response_type": {"code"}, "client_id": {f.conf.ID}, "redirect_uri": {redirect}, "scope": {"openid profile offline_access"},
		"state": {"the-state"}, "nonce": {"the-nonce"}, "code_challenge": {challengeOf(verifier)}, "code_challenge_method": {"S256"}}
	for k, v := range set {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	return q
}

// signIn runs params through the sign-in page with alice's password and
// returns the redirect's query and the session id.
func (f *fx) signIn(params url.Values) (url.Values, string) {
	f.t.Helper()
	ctx := f.t.Context()
	out, err := f.svc.Authorize(ctx, params, "")
	if err != nil || out.SignIn == "" {
		f.t.Fatalf("Authorize: %+v %v", out, err)
	}
	res, err := f.svc.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, CSRFToken: f.svc.CSRFToken(browser), BrowserID: browser,
		Username: "alice", Password: "alice-password-1"})
	if err != nil {
		f.t.Fatalf("SignIn: %v", err)
	}
	return redirectQuery(f.t, res.Outcome.Redirect, params.Get("redirect_uri")), res.SessionID
}

func redirectQuery(t testing.TB, to, want string) url.Values {
	t.Helper()
	u, err := url.Parse(to)
	if err != nil || !strings.HasPrefix(to, want+"?") {
		t.Fatalf("redirect %q, want one to %s", to, want)
	}
	return u.Query()
}

func (f *fx) exchange(req oidc.TokenRequest) (oidc.Tokens, error) {
	if req.GrantType == "" {
		req.GrantType = identity.GrantAuthorizationCode
	}
	return f.svc.Exchange(f.t.Context(), req)
}

func (f *fx) redeem(code string) oidc.TokenRequest {
	return oidc.TokenRequest{ClientID: f.conf.ID, ClientSecret: f.secret, Code: code, RedirectURI: redirect, CodeVerifier: verifier}
}

// active reports whether an access token is accepted by the platform's routes.
func (f *fx) active(token string) bool {
	_, err := f.e.Platform.Identity.AuthenticateRequest(context.Background(), token, identity.AccessToken, "", identity.Presentation{Scheme: identity.SchemeBearer})
	return err == nil
}

// TestAuthorizeRefusals: what must never redirect is an error (the
// error page), and every other refusal goes back to the client with
// error, state and iss.
func TestAuthorizeRefusals(t *testing.T) {
	f := newFx(t)
	for _, tc := range []struct {
		name  string
		set   map[string]string
		page  string // the error page's field, or ""
		error string // the redirect's error, or "" for the sign-in page
	}{
		{"unknown client", map[string]string{"client_id": "lkc_nobody"}, "client_id", ""},
		{"no client", map[string]string{"client_id": ""}, "client_id", ""},
		{"unregistered redirect", map[string]string{"redirect_uri": "https://evil.example/cb"}, "redirect_uri", ""},
		{"redirect with another path", map[string]string{"redirect_uri": redirect + "/x"}, "redirect_uri", ""},
		{"redirect with a query added", map[string]string{"redirect_uri": redirect + "?x=1"}, "redirect_uri", ""},
		{"https redirect on another port", map[string]string{"redirect_uri": "https://app.example:8443/cb"}, "redirect_uri", ""},
		{"loopback redirect on another host", map[string]string{"redirect_uri": "http://localhost:8000/cb"}, "redirect_uri", ""},
		{"no redirect", map[string]string{"redirect_uri": ""}, "redirect_uri", ""},
		{"loopback redirect on another port", map[string]string{"redirect_uri": loopback}, "", ""},
		{"loopback redirect on another port and path", map[string]string{"redirect_uri": "http://127.0.0.1:8000/other"}, "redirect_uri", ""},
		{"loopback redirect with another scheme", map[string]string{"redirect_uri": "https://127.0.0.1:8000/cb"}, "redirect_uri", ""},
		{"loopback redirect with user info", map[string]string{"redirect_uri": "http://evil@127.0.0.1:8000/cb"}, "redirect_uri", ""},
		{"PKCE missing", map[string]string{"code_challenge": "", "code_challenge_method": ""}, "", "invalid_request"},
		{"PKCE plain", map[string]string{"code_challenge_method": "plain"}, "", "invalid_request"},
		{"PKCE method absent (plain)", map[string]string{"code_challenge_method": ""}, "", "invalid_request"},
		{"PKCE challenge malformed", map[string]string{"code_challenge": "short"}, "", "invalid_request"},
		{"implicit flow", map[string]string{"response_type": "token"}, "", "unsupported_response_type"},
		{"no response_type", map[string]string{"response_type": ""}, "", "invalid_request"},
		{"scope not allowed", map[string]string{"scope": "openid audit:export"}, "", "invalid_scope"},
		{"no scope", map[string]string{"scope": ""}, "", "invalid_scope"},
		{"prompt unknown", map[string]string{"prompt": "consent"}, "", "invalid_request"},
		{"prompt none with login", map[string]string{"prompt": "none login"}, "", "invalid_request"},
		{"max_age negative", map[string]string{"max_age": "-1"}, "", "invalid_request"},
		{"request object not a JWS", map[string]string{"request": "eyJ"}, "", "invalid_request_object"},
		{"prompt none without a session", map[string]string{"prompt": "none"}, "", "login_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := f.params(tc.set)
			out, err := f.svc.Authorize(t.Context(), params, "")
			switch {
			case tc.page != "":
				if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != tc.page || out.Redirect != "" {
					t.Errorf("got %+v %v, want an error page for %s", out, err, tc.page)
				}
			case tc.error == "":
				if err != nil || out.SignIn == "" {
					t.Errorf("got %+v %v, want the sign-in page", out, err)
				}
			default:
				if err != nil {
					t.Fatalf("error page %v, want a redirect with %s", err, tc.error)
				}
				q := redirectQuery(t, out.Redirect, params.Get("redirect_uri"))
				if q.Get("error") != tc.error || q.Get("state") != "the-state" || q.Get("iss") != f.svc.Issuer() || q.Get("code") != "" {
					t.Errorf("redirect %v, want error %s with state and iss", q, tc.error)
				}
			}
		})
	}
	t.Run("repeated parameter", func(t *testing.T) {
		params := f.params(nil)
		params.Add("scope", "openid")
		out, err := f.svc.Authorize(t.Context(), params, "")
		if err != nil || redirectQuery(t, out.Redirect, redirect).Get("error") != "invalid_request" {
			t.Errorf("got %+v %v", out, err)
		}
	})
	t.Run("client without the code flow", func(t *testing.T) {
		id, _ := f.e.OAuthClient(f.tenant, "", "audit:export")
		out, err := f.svc.Authorize(t.Context(), f.params(map[string]string{"client_id": id}), "")
		if !fault.Is(fault.Invalid, err) || out.Redirect != "" {
			t.Errorf("got %+v %v, want the error page (no redirect URI registered)", out, err)
		}
	})
}

// TestCodeFlowCarriesStateAndNonce: the success redirect carries the
// code, state and iss; the ID token the nonce, amr, sid, auth_time and
// at_hash; the access token is the user's with the scopes granted.
func TestCodeFlowCarriesStateAndNonce(t *testing.T) {
	f := newFx(t)
	q, _ := f.signIn(f.params(nil))
	if q.Get("state") != "the-state" || q.Get("iss") != f.svc.Issuer() || q.Get("code") == "" {
		t.Fatalf("redirect %v", q)
	}
	tok, err := f.exchange(f.redeem(q.Get("code")))
	if err != nil {
		t.Fatal(err)
	}
	var c oidc.IDClaims
	if err := f.e.Platform.Identity.Keys().ParseIDToken(tok.IDToken, &c); err != nil {
		t.Fatal(err)
	}
	now := latchkeytest.Start.Unix()
	want := oidc.IDClaims{Issuer: f.svc.Issuer(), Subject: f.aliceID, Audience: []string{f.conf.ID}, AZP: f.conf.ID, IssuedAt: now,
		Expiry: now + 600, AuthTime: now, Nonce: "the-nonce", ACR: identity.ACRPassword, AMR: []string{"pwd"}, SID: c.SID, AtHash: oidc.AtHash(tok.AccessToken),
		StandardClaims: oidc.StandardClaims{PreferredUsername: "alice", Name: "alice"}}
	if d := cmp.Diff(want, c); c.SID == "" || d != "" {
		t.Errorf("ID token claims (-want +got):\n%s", d)
	}
	claims := latchkeytest.UnverifiedClaims(t, tok.AccessToken)
	if claims["sub"] != f.aliceID || claims["client_id"] != f.conf.ID || claims["scope"] != "offline_access openid profile" || !f.active(tok.AccessToken) {
		t.Errorf("access token claims %v", claims)
	}
	if tok.RefreshToken == "" || tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 {
		t.Errorf("token response %+v", tok)
	}
}

// TestCodeRefusals: each rule of the code's redemption, with a fresh
// code per case; a refused redemption spends the code.
func TestCodeRefusals(t *testing.T) {
	f := newFx(t)
	for _, tc := range []struct {
		name   string
		change func(r *oidc.TokenRequest)
		want   error
	}{
		{"PKCE verifier missing", func(r *oidc.TokenRequest) { r.CodeVerifier = "" }, identity.ErrInvalidGrant},
		{"PKCE verifier wrong", func(r *oidc.TokenRequest) { r.CodeVerifier = strings.Repeat("b", 50) }, identity.ErrInvalidGrant},
		{"PKCE verifier sent as the challenge (plain)", func(r *oidc.TokenRequest) { r.CodeVerifier = challengeOf(verifier) }, identity.ErrInvalidGrant},
		{"redirect_uri differs", func(r *oidc.TokenRequest) { r.RedirectURI = "http://127.0.0.1/cb" }, identity.ErrInvalidGrant},
		{"redirect_uri absent", func(r *oidc.TokenRequest) { r.RedirectURI = "" }, identity.ErrInvalidGrant},
		{"code of another client", func(r *oidc.TokenRequest) { r.ClientID, r.ClientSecret = f.public.ID, "" }, identity.ErrInvalidGrant},
		{"wrong secret", func(r *oidc.TokenRequest) { r.ClientSecret = "nope" }, identity.ErrInvalidClient},
		{"public client with a secret", func(r *oidc.TokenRequest) { r.ClientID, r.ClientSecret = f.public.ID, "x" }, identity.ErrInvalidClient},
		{"unknown code", func(r *oidc.TokenRequest) { r.Code = "nope" }, identity.ErrInvalidGrant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := f.signIn(f.params(nil))
			req := f.redeem(q.Get("code"))
			tc.change(&req)
			if _, err := f.exchange(req); !errors.Is(err, tc.want) || fault.KindOf(err) == fault.Internal {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("expired code", func(t *testing.T) {
		q, _ := f.signIn(f.params(nil))
		f.e.Clock.Advance(oidc.CodeTTL)
		if _, err := f.exchange(f.redeem(q.Get("code"))); !errors.Is(err, identity.ErrInvalidGrant) {
			t.Errorf("a code after 60 s: %v", err)
		}
	})
	t.Run("code just before expiry", func(t *testing.T) {
		q, _ := f.signIn(f.params(nil))
		f.e.Clock.Advance(oidc.CodeTTL - time.Second)
		if _, err := f.exchange(f.redeem(q.Get("code"))); err != nil {
			t.Errorf("a code after 59 s: %v", err)
		}
	})
}

// TestCodeReplayRevokesWhatItIssued: a second redemption is refused and
// revokes the access token and refresh token of the first (RFC 9700
// §4.5).
func TestCodeReplayRevokesWhatItIssued(t *testing.T) {
	f := newFx(t)
	q, _ := f.signIn(f.params(nil))
	first, err := f.exchange(f.redeem(q.Get("code")))
	if err != nil {
		t.Fatal(err)
	}
	if !f.active(first.AccessToken) {
		t.Fatal("the first access token is refused before the replay")
	}
	if _, err := f.exchange(f.redeem(q.Get("code"))); !errors.Is(err, identity.ErrInvalidGrant) {
		t.Fatalf("replay: %v", err)
	}
	if f.active(first.AccessToken) {
		t.Error("the first redemption's access token survived the replay")
	}
	if _, err := f.exchange(oidc.TokenRequest{GrantType: identity.GrantRefreshToken, ClientID: f.conf.ID, ClientSecret: f.secret, RefreshToken: first.RefreshToken}); !errors.Is(err, identity.ErrInvalidGrant) {
		t.Errorf("the first redemption's refresh token after the replay: %v", err)
	}
}

// TestRefreshRotation: a refresh token works once, its successor works,
// and presenting a used one revokes the whole grant.
func TestRefreshRotation(t *testing.T) {
	f := newFx(t)
	q, _ := f.signIn(f.params(nil))
	first, err := f.exchange(f.redeem(q.Get("code")))
	if err != nil {
		t.Fatal(err)
	}
	refresh := func(rt string) (oidc.Tokens, error) {
		return f.exchange(oidc.TokenRequest{GrantType: identity.GrantRefreshToken, ClientID: f.conf.ID, ClientSecret: f.secret, RefreshToken: rt})
	}
	second, err := refresh(first.RefreshToken)
	if err != nil || second.RefreshToken == "" || second.RefreshToken == first.RefreshToken || second.IDToken == "" {
		t.Fatalf("refresh: %+v %v", second, err)
	}
	third, err := refresh(second.RefreshToken)
	if err != nil {
		t.Fatalf("refresh of the second: %v", err)
	}
	if _, err := refresh(first.RefreshToken); !errors.Is(err, identity.ErrInvalidGrant) {
		t.Fatalf("reuse: %v", err)
	}
	if _, err := refresh(third.RefreshToken); !errors.Is(err, identity.ErrInvalidGrant) {
		t.Errorf("the newest refresh token after a reuse: %v", err)
	}
	for i, tok := range []oidc.Tokens{first, second, third} {
		if f.active(tok.AccessToken) {
			t.Errorf("access token %d survived the reuse", i)
		}
	}
	if _, err := refresh("nope"); !errors.Is(err, identity.ErrInvalidGrant) {
		t.Errorf("unknown refresh token: %v", err)
	}
	// A refresh token is bound to its client.
	q, _ = f.signIn(f.params(nil))
	second, err = f.exchange(f.redeem(q.Get("code")))
	if err != nil {
		t.Fatal(err)
	}
	admin := identity.Principal{Kind: identity.KindUser, TenantID: f.e.Root.ID, TenantCode: f.e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
	other, otherSecret, err := f.e.Platform.Identity.RegisterOAuthClient(t.Context(), admin, f.tenant.ID, identity.NewOAuthClient{Name: "other",
		Scopes: []string{"openid", "offline_access"}, GrantTypes: []string{"authorization_code", "refresh_token"}, RedirectURIs: []string{redirect}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.exchange(oidc.TokenRequest{GrantType: identity.GrantRefreshToken, ClientID: other.ID, ClientSecret: otherSecret, RefreshToken: second.RefreshToken}); !errors.Is(err, identity.ErrInvalidGrant) {
		t.Errorf("another client's refresh: %v", err)
	}
}

// TestSessionRules: a session answers prompt=none at once, in its own
// tenant only; prompt=login and an exceeded max_age ask for a sign-in.
func TestSessionRules(t *testing.T) {
	f := newFx(t)
	_, sid := f.signIn(f.params(nil))
	ctx := t.Context()
	out, err := f.svc.Authorize(ctx, f.params(map[string]string{"prompt": "none"}), sid)
	if err != nil || redirectQuery(t, out.Redirect, redirect).Get("code") == "" {
		t.Errorf("prompt=none with a session: %+v %v", out, err)
	}
	if out, _ := f.svc.Authorize(ctx, f.params(map[string]string{"prompt": "login"}), sid); out.SignIn == "" {
		t.Errorf("prompt=login with a session: %+v", out)
	}
	f.e.Clock.Advance(time.Minute)
	if out, _ := f.svc.Authorize(ctx, f.params(map[string]string{"max_age": "30"}), sid); out.SignIn == "" {
		t.Errorf("max_age exceeded: %+v", out)
	}
	if out, _ := f.svc.Authorize(ctx, f.params(map[string]string{"max_age": "120"}), sid); out.Redirect == "" {
		t.Errorf("max_age satisfied: %+v", out)
	}
	// A client of another tenant: the session is not its users'.
	other := f.e.NewTenant("Bolt")
	admin := identity.Principal{Kind: identity.KindUser, TenantID: f.e.Root.ID, TenantCode: f.e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
	c, _, err := f.e.Platform.Identity.RegisterOAuthClient(ctx, admin, other.ID, identity.NewOAuthClient{Name: "bolt", Scopes: []string{"openid"},
		GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{redirect}})
	if err != nil {
		t.Fatal(err)
	}
	out, err = f.svc.Authorize(ctx, f.params(map[string]string{"client_id": c.ID, "scope": "openid", "prompt": "none"}), sid)
	if err != nil || redirectQuery(t, out.Redirect, redirect).Get("error") != "login_required" {
		t.Errorf("another tenant's client with the session: %+v %v", out, err)
	}
	// Logout ends it.
	if _, err := f.svc.Logout(ctx, oidc.LogoutRequest{SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	out, _ = f.svc.Authorize(ctx, f.params(map[string]string{"prompt": "none"}), sid)
	if redirectQuery(t, out.Redirect, redirect).Get("error") != "login_required" {
		t.Errorf("prompt=none after logout: %+v", out)
	}
}

// TestSignInRefusals: the CSRF token of the browser's own cookie, a
// sealed request that is the server's and fresh, credentials of the
// client's tenant.
func TestSignInRefusals(t *testing.T) {
	f := newFx(t)
	ctx := t.Context()
	out, err := f.svc.Authorize(ctx, f.params(nil), "")
	if err != nil {
		t.Fatal(err)
	}
	ok := oidc.SignInRequest{Request: out.SignIn, CSRFToken: f.svc.CSRFToken(browser), BrowserID: browser, Username: "alice", Password: "alice-password-1"}
	// A user of another tenant only (every tenant has its own tadmin).
	bolt := f.e.NewTenant("Bolt")
	root := identity.Principal{Kind: identity.KindUser, TenantID: f.e.Root.ID, TenantCode: f.e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
	if _, err := f.e.Platform.Identity.CreateUser(ctx, root, bolt.ID, "mallory", "mallory-password-1", nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(r *oidc.SignInRequest)
		want   fault.Kind
	}{
		{"no CSRF token", func(r *oidc.SignInRequest) { r.CSRFToken = "" }, fault.Forbidden},
		{"another browser's CSRF token", func(r *oidc.SignInRequest) { r.BrowserID = "browser-two" }, fault.Forbidden},
		{"no cookie", func(r *oidc.SignInRequest) { r.BrowserID = "" }, fault.Forbidden},
		{"forged request", func(r *oidc.SignInRequest) { r.Request = "AAAA" + r.Request[4:] }, fault.Invalid},
		{"wrong password", func(r *oidc.SignInRequest) { r.Password = "nope" }, fault.Unauthenticated},
		{"user of another tenant", func(r *oidc.SignInRequest) { r.Username, r.Password = "mallory", "mallory-password-1" }, fault.Unauthenticated},
		{"no credentials", func(r *oidc.SignInRequest) { r.Username, r.Password = "", "" }, fault.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := ok
			tc.change(&req)
			res, err := f.svc.SignIn(ctx, req)
			if fault.KindOf(err) != tc.want || res.SessionID != "" {
				t.Errorf("got %+v %v, want %v", res, err, tc.want)
			}
		})
	}
	t.Run("expired request", func(t *testing.T) {
		f.e.Clock.Advance(oidc.RequestTTL + time.Second)
		if _, err := f.svc.SignIn(ctx, ok); !fault.Is(fault.Invalid, err) {
			t.Errorf("sign-in after the request expired: %v", err)
		}
	})
}

// TestLogoutRedirects: post_logout_redirect_uri must be registered for
// the client of the id_token_hint, exactly.
func TestLogoutRedirects(t *testing.T) {
	f := newFx(t)
	q, sid := f.signIn(f.params(nil))
	tok, err := f.exchange(f.redeem(q.Get("code")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		req  oidc.LogoutRequest
	}{
		{"no hint", oidc.LogoutRequest{PostLogoutRedirectURI: "https://app.example/bye"}},
		{"unregistered", oidc.LogoutRequest{IDTokenHint: tok.IDToken, PostLogoutRedirectURI: "https://app.example/bye2"}},
		{"forged hint", oidc.LogoutRequest{IDTokenHint: tok.IDToken[:len(tok.IDToken)-4] + "AAAA", PostLogoutRedirectURI: "https://app.example/bye"}},
		{"hint of another client", oidc.LogoutRequest{IDTokenHint: tok.IDToken, ClientID: f.public.ID, PostLogoutRedirectURI: "https://app.example/bye"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.SessionID = sid
			if to, err := f.svc.Logout(ctx, tc.req); !fault.Is(fault.Invalid, err) || to != "" {
				t.Errorf("got %q %v, want an error page", to, err)
			}
		})
	}
	to, err := f.svc.Logout(ctx, oidc.LogoutRequest{IDTokenHint: tok.IDToken, PostLogoutRedirectURI: "https://app.example/bye", State: "s", SessionID: sid})
	if err != nil || to != "https://app.example/bye?state=s" {
		t.Errorf("logout: %q %v", to, err)
	}
}

// passkeysOf is a passkey verifier that proves the user it is given, in
// the tenant it is given: the stand-in for area C in TestPasskeyOfAnotherTenant.
type passkeysOf struct {
	tenant identity.Tenant
	user   identity.User
}

func (p passkeysOf) CheckPasskey(ctx context.Context, flowID string, credential []byte, remoteAddr string) (identity.Tenant, identity.User, identity.Authn, error) {
	return p.tenant, p.user, identity.Authn{AMR: []string{"hwk", "user", "mfa"}, ACR: identity.ACRPhishingResistant}, nil
}

type auditLog struct{ entries []audit.Entry }

func (a *auditLog) Record(ctx context.Context, e audit.Entry) error {
	a.entries = append(a.entries, e)
	return nil
}

// TestPasskeyOfAnotherTenant: a passkey proves a user of its own tenant;
// when that is not the client's (a flow of another tenant's options), the
// sign-in is refused and audited. A passkey of the client's tenant signs
// in with amr hwk, user and mfa.
func TestPasskeyOfAnotherTenant(t *testing.T) {
	f := newFx(t)
	ctx := t.Context()
	acme, err := f.e.Store.GetTenant(ctx, f.tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	bolt, err := f.e.Store.GetTenant(ctx, f.e.NewTenant("Bolt").ID)
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := f.e.Store.GetUserByName(ctx, bolt.ID, "tadmin")
	if err != nil {
		t.Fatal(err)
	}
	alice, err := f.e.Store.GetUserByName(ctx, acme.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tenant identity.Tenant
		user   identity.User
		ok     bool
	}{{"another tenant's user", bolt, mallory, false}, {"the client's tenant's user", acme, alice, true}} {
		t.Run(tc.name, func(t *testing.T) {
			log := &auditLog{}
			svc := oidc.NewService(oidc.Config{Store: f.e.Store, Identity: f.e.Platform.Identity, Users: f.e.Store, Keys: f.e.Platform.Identity.Keys(),
				Passkeys: passkeysOf{tc.tenant, tc.user}, Sealer: sealer, CSRFKey: []byte("k"), Audit: log, Clock: f.e.Clock})
			out, err := svc.Authorize(ctx, f.params(nil), "")
			if err != nil {
				t.Fatal(err)
			}
			res, err := svc.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, CSRFToken: svc.CSRFToken(browser), BrowserID: browser, FlowID: "f", Credential: []byte(`{}`)})
			if !tc.ok {
				if !fault.Is(fault.Unauthenticated, err) || res.Outcome.Redirect != "" {
					t.Fatalf("got %+v %v, want a refusal", res, err)
				}
				if len(log.entries) != 1 || log.entries[0].Action != oidc.ActionSignIn || log.entries[0].TenantID != acme.ID || log.entries[0].Err == nil {
					t.Errorf("audit %+v", log.entries)
				}
				return
			}
			if err != nil || strings.Join(res.Session.AMR, " ") != "hwk user mfa" {
				t.Fatalf("passkey sign-in: %+v %v", res.Session, err)
			}
		})
	}
}

// TestRevokeAndIntrospectRefreshTokens: RFC 7009 and RFC 7662 at the OAuth
// endpoint reach the code flow's refresh tokens: revoking one revokes its
// grant (the refresh token and the access tokens it issued); a client
// reaches only its tenant's tokens, and a public client, authenticated by
// its client_id alone, only its own.
func TestRevokeAndIntrospectRefreshTokens(t *testing.T) {
	f := newFx(t)
	ctx := t.Context()
	admin := identity.Principal{Kind: identity.KindUser, TenantID: f.e.Root.ID, TenantCode: f.e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
	spa, _, err := f.e.Platform.Identity.RegisterOAuthClient(ctx, admin, f.tenant.ID, identity.NewOAuthClient{Name: "spa2", Type: identity.ClientPublic,
		Scopes: []string{"openid", "offline_access"}, GrantTypes: []string{"authorization_code", "refresh_token"}, RedirectURIs: []string{"https://spa.example/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	other := f.e.NewTenant("Other")
	stranger, strangerSecret, err := f.e.Platform.Identity.RegisterOAuthClient(ctx, admin, other.ID, identity.NewOAuthClient{Name: "stranger",
		Scopes: []string{"openid"}, RedirectURIs: []string{redirect}})
	if err != nil {
		t.Fatal(err)
	}

	q, _ := f.signIn(f.params(nil))
	web, err := f.exchange(f.redeem(q.Get("code")))
	if err != nil {
		t.Fatal(err)
	}
	q, _ = f.signIn(f.params(map[string]string{"client_id": spa.ID, "redirect_uri": "https://spa.example/cb", "scope": "openid offline_access"}))
	mine, err := f.exchange(oidc.TokenRequest{ClientID: spa.ID, Code: q.Get("code"), RedirectURI: "https://spa.example/cb", CodeVerifier: verifier})
	if err != nil || mine.RefreshToken == "" {
		t.Fatalf("public client's code exchange: %+v %v", mine, err)
	}

	introspect := func(id, secret, token string) identity.Introspection {
		t.Helper()
		out, err := f.svc.Introspect(ctx, id, secret, token)
		if err != nil {
			t.Fatalf("Introspect by %s: %v", id, err)
		}
		return out
	}
	refresh := func(id, secret, rt string) error {
		_, err := f.exchange(oidc.TokenRequest{GrantType: identity.GrantRefreshToken, ClientID: id, ClientSecret: secret, RefreshToken: rt})
		return err
	}

	got := introspect(f.conf.ID, f.secret, web.RefreshToken)
	want := identity.Introspection{Active: true, Scope: "offline_access openid profile", ClientID: f.conf.ID, Subject: f.aliceID,
		Issuer: f.svc.Issuer(), TenantID: f.tenant.ID, Exp: got.Exp, Iat: got.Iat}
	if d := cmp.Diff(want, got); d != "" || got.Exp <= got.Iat {
		t.Errorf("introspection of a live refresh token (-want +got):\n%s", d)
	}
	for name, c := range map[string]struct{ id, secret, token string }{
		"another tenant's client":              {stranger.ID, strangerSecret, web.RefreshToken},
		"a public client, another's token":     {spa.ID, "", web.RefreshToken},
		"a public client, another's JWT":       {spa.ID, "", web.AccessToken},
		"a garbage token":                      {f.conf.ID, f.secret, "not-a-token"},
		"an access token as a refresh token's": {f.conf.ID, f.secret, web.RefreshToken + "x"},
	} {
		if got := introspect(c.id, c.secret, c.token); got.Active {
			t.Errorf("introspection by %s: active", name)
		}
	}
	if !introspect(spa.ID, "", mine.RefreshToken).Active || !introspect(spa.ID, "", mine.AccessToken).Active {
		t.Error("a public client cannot introspect its own tokens")
	}

	for name, c := range map[string]struct{ id, secret, token string }{
		"another tenant's client":          {stranger.ID, strangerSecret, web.RefreshToken},
		"a public client, another's token": {spa.ID, "", web.RefreshToken},
		"a public client, another's JWT":   {spa.ID, "", web.AccessToken},
	} {
		if err := f.svc.Revoke(ctx, c.id, c.secret, c.token); !errors.Is(err, identity.ErrUnauthorizedClient) {
			t.Errorf("revocation by %s: %v, want unauthorized_client", name, err)
		}
	}
	if !introspect(f.conf.ID, f.secret, web.RefreshToken).Active || !f.active(web.AccessToken) {
		t.Fatal("a refused revocation revoked the token")
	}
	if err := f.svc.Revoke(ctx, f.conf.ID, f.secret, "not-a-token"); err != nil {
		t.Errorf("revocation of an unknown token: %v, want none (RFC 7009 §2.2)", err)
	}
	if err := f.svc.Revoke(ctx, f.conf.ID, "wrong", web.RefreshToken); !errors.Is(err, identity.ErrInvalidClient) {
		t.Errorf("revocation with a wrong secret: %v, want invalid_client", err)
	}

	if err := f.svc.Revoke(ctx, f.conf.ID, f.secret, web.RefreshToken); err != nil {
		t.Fatalf("revocation of a refresh token: %v", err)
	}
	if introspect(f.conf.ID, f.secret, web.RefreshToken).Active {
		t.Error("a revoked refresh token is active")
	}
	if err := refresh(f.conf.ID, f.secret, web.RefreshToken); !errors.Is(err, identity.ErrInvalidGrant) {
		t.Errorf("refresh with a revoked refresh token: %v, want invalid_grant", err)
	}
	if f.active(web.AccessToken) {
		t.Error("the access token of a revoked refresh token's grant is still accepted")
	}
	if err := f.svc.Revoke(ctx, f.conf.ID, f.secret, web.RefreshToken); err != nil {
		t.Errorf("revoking it again: %v", err)
	}

	// A public client revokes its own tokens with its client_id alone.
	if err := f.svc.Revoke(ctx, spa.ID, "", mine.RefreshToken); err != nil {
		t.Fatalf("a public client's revocation of its refresh token: %v", err)
	}
	if err := refresh(spa.ID, "", mine.RefreshToken); !errors.Is(err, identity.ErrInvalidGrant) {
		t.Errorf("refresh after the public client's revocation: %v, want invalid_grant", err)
	}
	if f.active(mine.AccessToken) {
		t.Error("the public client's access token survived its grant's revocation")
	}
}
