package identity_test

import (
	"context"
	"testing"

	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// TestRegisterRelyingParty: the relying-party fields of a client
// registration, their defaults and every refusal.
func TestRegisterRelyingParty(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	admin := identity.Principal{Kind: identity.KindUser, TenantID: e.Root.ID, TenantCode: e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
	for _, tc := range []struct {
		name  string
		req   identity.NewOAuthClient
		field string // the refused field, or "" for a registration
	}{
		{"client_credentials by default", identity.NewOAuthClient{Scopes: []string{"audit:export"}}, ""},
		{"public client", identity.NewOAuthClient{Type: "public", Scopes: []string{"openid"}, RedirectURIs: []string{"https://spa.example/cb"}}, ""},
		{"native client", identity.NewOAuthClient{Type: "public", Scopes: []string{"openid"}, RedirectURIs: []string{"com.example.app:/cb", "http://127.0.0.1/cb", "http://[::1]/cb"}}, ""},
		{"ES256 ID tokens", identity.NewOAuthClient{GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{"https://a.example/cb"}, IDTokenAlg: "ES256"}, ""},
		{"unknown type", identity.NewOAuthClient{Type: "secret"}, "type"},
		{"unknown ID token alg", identity.NewOAuthClient{IDTokenAlg: "HS256"}, "id_token_signed_response_alg"},
		{"none alg", identity.NewOAuthClient{IDTokenAlg: "none"}, "id_token_signed_response_alg"},
		{"unknown grant", identity.NewOAuthClient{GrantTypes: []string{"password"}}, "grant_types"},
		{"implicit grant", identity.NewOAuthClient{GrantTypes: []string{"implicit"}}, "grant_types"},
		{"public client_credentials", identity.NewOAuthClient{Type: "public", GrantTypes: []string{"client_credentials"}}, "grant_types"},
		{"refresh without code", identity.NewOAuthClient{GrantTypes: []string{"refresh_token"}}, "grant_types"},
		{"code without redirect", identity.NewOAuthClient{GrantTypes: []string{"authorization_code"}}, "redirect_uris"},
		{"http redirect", identity.NewOAuthClient{GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{"http://app.example/cb"}}, "redirect_uris"},
		{"redirect with fragment", identity.NewOAuthClient{GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{"https://app.example/cb#x"}}, "redirect_uris"},
		{"relative redirect", identity.NewOAuthClient{GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{"/cb"}}, "redirect_uris"},
		{"javascript redirect", identity.NewOAuthClient{GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{"javascript:alert(1)"}}, "redirect_uris"},
		{"bad logout redirect", identity.NewOAuthClient{PostLogoutRedirectURIs: []string{"http://app.example/"}}, "post_logout_redirect_uris"},
		{"unknown scope", identity.NewOAuthClient{Scopes: []string{"admin"}}, "scopes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Name = "app"
			c, secret, err := e.Platform.Identity.RegisterOAuthClient(t.Context(), admin, tn.ID, tc.req)
			if tc.field != "" {
				if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != tc.field {
					t.Errorf("got %v (field %q), want a refusal of %s", err, fault.FieldOf(err), tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (secret == "") != (tc.req.Type == "public") || (c.SecretHash == nil) != (tc.req.Type == "public") {
				t.Errorf("type %q: secret %q, hash %x", c.Type, secret, c.SecretHash)
			}
			got, err := e.Store.GetOAuthClient(t.Context(), c.ID)
			if err != nil || got.IDTokenAlgorithm() != c.IDTokenAlgorithm() || len(got.GrantTypes) == 0 {
				t.Errorf("stored %+v %v", got, err)
			}
			if tc.req.Type == "public" && got.AllowsGrant(identity.GrantClientCredentials) {
				t.Error("a public client may use client_credentials")
			}
		})
	}
}

// TestRSAKeyMadeOnceAndReloaded: the RS256 key of ID tokens is made on
// first use, stored sealed, published in the JWKS beside the ES256 key,
// and loaded again by a key set opened later on the same store.
func TestRSAKeyMadeOnceAndReloaded(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	s, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktest.New(latchkeytest.Start)
	ks, err := identity.LoadKeySet(ctx, st, s, clk, "https://issuer.example")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ks.JWKS()); n != 1 {
		t.Fatalf("%d keys before the first ID token, want the ES256 key only", n)
	}
	tok, err := ks.SignIDToken(ctx, identity.AlgRS256, map[string]any{"sub": "u", "iss": "https://issuer.example"})
	if err != nil {
		t.Fatal(err)
	}
	jwks := ks.JWKS()
	if len(jwks) != 2 || jwks[1].Kty != "RSA" || jwks[1].Alg != "RS256" || jwks[1].E != "AQAB" || jwks[1].N == "" {
		t.Fatalf("JWKS %+v", jwks)
	}
	again, err := identity.LoadKeySet(ctx, st, s, clk, "https://issuer.example")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Sub string `json:"sub"`
	}
	if err := again.ParseIDToken(tok, &c); err != nil || c.Sub != "u" {
		t.Errorf("the reloaded key set reads the ID token: %+v %v", c, err)
	}
	if err := again.EnsureRSA(ctx); err != nil || len(again.JWKS()) != 2 {
		t.Errorf("a second key was made: %+v %v", again.JWKS(), err)
	}
	if keys, _ := st.ListSigningKeys(ctx); len(keys) != 2 {
		t.Errorf("%d stored keys, want 2", len(keys))
	}
	// A token of another key set (another master key's) is refused.
	other, _ := identity.LoadKeySet(ctx, memstore.New(), s, clk, "https://issuer.example")
	forged, err := other.SignIDToken(ctx, identity.AlgES256, map[string]any{"sub": "u"})
	if err != nil {
		t.Fatal(err)
	}
	if err := again.ParseIDToken(forged, &c); !fault.Is(fault.Invalid, err) {
		t.Errorf("another key set's ID token: %v", err)
	}
}
