package oidc_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// TestProfileAndEmailClaims: the profile and email scopes carry the
// user's profile fields, in the ID token and from userinfo alike, and only
// the scopes granted; a user without an email gets no email claims.
func TestProfileAndEmailClaims(t *testing.T) {
	f := newFx(t)
	ctx := t.Context()
	admin := identity.Principal{Kind: identity.KindUser, TenantID: f.e.Root.ID, TenantCode: f.e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
	bea, err := f.e.Platform.Identity.CreateUserWith(ctx, admin, f.tenant.ID, identity.NewUser{Name: "bea", Password: "bea-password-1",
		Profile: identity.Profile{Email: "bea@example.com", EmailVerified: true, DisplayName: "Bea Arthur", GivenName: "Bea", FamilyName: "Arthur"}})
	if err != nil {
		t.Fatal(err)
	}
	client, secret, err := f.e.Platform.Identity.RegisterOAuthClient(ctx, admin, f.tenant.ID, identity.NewOAuthClient{Name: "mail",
		Scopes: []string{"openid", "profile", "email"}, GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{redirect}})
	if err != nil {
		t.Fatal(err)
	}
	verified := true
	full := oidc.StandardClaims{PreferredUsername: "bea", Name: "Bea Arthur", GivenName: "Bea", FamilyName: "Arthur", Email: "bea@example.com", EmailVerified: &verified}
	for _, tc := range []struct {
		name, user, password, scope string
		want                        oidc.StandardClaims
	}{
		{"profile and email", "bea", "bea-password-1", "openid profile email", full},
		{"email only", "bea", "bea-password-1", "openid email", oidc.StandardClaims{Email: full.Email, EmailVerified: &verified}},
		{"profile only", "bea", "bea-password-1", "openid profile", oidc.StandardClaims{PreferredUsername: "bea", Name: "Bea Arthur", GivenName: "Bea", FamilyName: "Arthur"}},
		{"openid alone", "bea", "bea-password-1", "openid", oidc.StandardClaims{}},
		{"no email on record", "alice", "alice-password-1", "openid profile email", oidc.StandardClaims{PreferredUsername: "alice", Name: "alice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := f.params(map[string]string{"client_id": client.ID, "scope": tc.scope})
			out, err := f.svc.Authorize(ctx, params, "")
			if err != nil || out.SignIn == "" {
				t.Fatalf("Authorize: %+v %v", out, err)
			}
			res, err := f.svc.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, CSRFToken: f.svc.CSRFToken(browser + tc.name), BrowserID: browser + tc.name,
				Username: tc.user, Password: tc.password})
			if err != nil {
				t.Fatalf("SignIn: %v", err)
			}
			code := redirectQuery(t, res.Outcome.Redirect, redirect).Get("code")
			tok, err := f.exchange(oidc.TokenRequest{ClientID: client.ID, ClientSecret: secret, Code: code, RedirectURI: redirect, CodeVerifier: verifier})
			if err != nil {
				t.Fatal(err)
			}
			var c oidc.IDClaims
			if err := f.e.Platform.Identity.Keys().ParseIDToken(tok.IDToken, &c); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, c.StandardClaims); d != "" {
				t.Errorf("ID token claims (-want +got):\n%s", d)
			}
			p, err := f.e.Platform.Identity.Authenticate(ctx, tok.AccessToken, identity.AccessToken)
			if err != nil {
				t.Fatal(err)
			}
			info, err := f.svc.UserInfo(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, info.StandardClaims); d != "" {
				t.Errorf("userinfo (-want +got):\n%s", d)
			}
			if tc.user == "bea" && info.Subject != bea.ID.String() {
				t.Errorf("userinfo sub = %q", info.Subject)
			}
		})
	}
}
