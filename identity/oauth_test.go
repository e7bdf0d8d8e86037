package identity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// TestJWKThumbprintRFC7638: the thumbprint of RFC 7638 §3.1's example key
// is the one the RFC prints, and members other than the required ones do
// not change it.
func TestJWKThumbprintRFC7638(t *testing.T) {
	const n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
	for name, jwk := range map[string]string{
		"required members":         `{"kty":"RSA","n":"` + n + `","e":"AQAB"}`,
		"with alg and kid (§3.1)":  `{"kty":"RSA","n":"` + n + `","e":"AQAB","alg":"RS256","kid":"2011-04-29"}`,
		"members in another order": `{"e":"AQAB","kid":"2011-04-29","n":"` + n + `","kty":"RSA"}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := identity.JWKThumbprint([]byte(jwk))
			if err != nil || got != "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs" {
				t.Errorf("JWKThumbprint = %q, %v; want RFC 7638's NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", got, err)
			}
		})
	}
}

// TestAccessTokenHashRFC9449: ath of RFC 9449 §7.1's example token.
func TestAccessTokenHashRFC9449(t *testing.T) {
	if got := identity.AccessTokenHash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"); got != "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo" {
		t.Errorf("AccessTokenHash = %q, want RFC 9449's fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo", got)
	}
}

// rfc9449Proof is RFC 9449 §4.1's example proof (Figure 3), made on
// 2019-07-04 by another implementation for POST https://server.example.com/token;
// RFC 9449 §6.1 prints its key's thumbprint.
const (
	rfc9449Proof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19.eyJqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2VydmVyLmV4YW1wbGUuY29tL3Rva2VuIiwiaWF0IjoxNTYyMjYyNjE2fQ.2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg4PtFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg"
	rfc9449JKT   = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
)

// discard is an audit sink that keeps nothing.
type discard struct{}

func (discard) Record(context.Context, audit.Entry) error { return nil }

// env is one "process": a Service on a shared store and clock.
type env struct {
	st    *memstore.Store
	clk   *clocktest.Fake
	seal  *seal.Sealer
	admin identity.Principal
}

func newEnv(t testing.TB, at time.Time) *env {
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: memstore.New(), clk: clocktest.New(at), seal: sealer}
}

func (e *env) service(t testing.TB, issuer string, shared bool) *identity.Service {
	keys, err := identity.LoadKeySet(t.Context(), e.st, e.seal, e.clk, issuer)
	if err != nil {
		t.Fatal(err)
	}
	return identity.NewService(identity.Config{Store: e.st, Keys: keys, Clock: e.clk, Audit: discard{}, SharedReplay: shared})
}

// client makes a tenant and an OAuth client in it through s.
func (e *env) client(t testing.TB, s *identity.Service, code string, resources ...string) (tenant identity.Tenant, id, secret string) {
	t.Helper()
	ctx := t.Context()
	root := identity.Principal{Kind: identity.KindUser, TenantCode: identity.RootTenantCode, Roles: []string{identity.RoleTenantAdmin}}
	tn, err := s.CreateTenant(ctx, root, "T "+code, code)
	if err != nil {
		t.Fatal(err)
	}
	c, secret, err := s.RegisterOAuthClient(ctx, root, tn.ID, identity.NewOAuthClient{Name: "c", Scopes: []string{identity.ScopeEventConsumer}, Resources: resources})
	if err != nil {
		t.Fatal(err)
	}
	return tn, c.ID, secret
}

// TestRFC9449ExampleProof: the RFC's own proof, signed by another
// implementation, is accepted at its time for its URL with the RFC's
// thumbprint (a DPoP token request binds the token to it), and refused
// for another URL or method, or 61 seconds later.
func TestRFC9449ExampleProof(t *testing.T) {
	at := time.Unix(1562262616, 0).UTC()
	for _, tt := range []struct {
		name    string
		url     string
		method  string
		later   time.Duration
		wantErr bool
	}{
		{"as made", "https://server.example.com/token", "POST", 0, false},
		{"default port and case", "HTTPS://Server.Example.com:443/token", "POST", 0, false},
		{"another URL", "https://server.example.com/other", "POST", 0, true},
		{"another method", "https://server.example.com/token", "GET", 0, true},
		{"too late", "https://server.example.com/token", "POST", 61 * time.Second, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, at.Add(tt.later))
			s := e.service(t, "https://server.example.com", false)
			_, id, secret := e.client(t, s, "ACME000001")
			g, err := s.Grant(t.Context(), identity.TokenRequest{ClientID: id, ClientSecret: secret,
				DPoP: &identity.DPoPRequest{Proof: rfc9449Proof, Method: tt.method, URLs: []string{tt.url}}})
			if tt.wantErr {
				if !errors.Is(err, identity.ErrInvalidDPoPProof) || !fault.Is(fault.Invalid, err) {
					t.Fatalf("Grant = %v, want a 400 invalid_dpop_proof", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Grant: %v", err)
			}
			cnf, _ := latchkeytest.UnverifiedClaims(t, g.AccessToken)["cnf"].(map[string]any)
			if g.TokenType != "DPoP" || cnf["jkt"] != rfc9449JKT {
				t.Errorf("token_type %q, cnf %v; want DPoP with RFC 9449's jkt %s", g.TokenType, cnf, rfc9449JKT)
			}
		})
	}
}

// TestDPoPReplayAcrossProcesses: with SharedReplay (a store several
// processes share), a proof accepted by one process is refused by another;
// without it, only the process that saw it refuses it, which is why the
// platform turns it on for a shared store.
func TestDPoPReplayAcrossProcesses(t *testing.T) {
	for _, shared := range []bool{true, false} {
		name := map[bool]string{true: "shared", false: "per process"}[shared]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, latchkeytest.Start)
			p1, p2 := e.service(t, "https://as.example", shared), e.service(t, "https://as.example", shared)
			_, id, secret := e.client(t, p1, "ACME000001")
			key := latchkeytest.NewDPoPKey(t, "ES256")
			const tokenURL = "https://as.example/oauth/v1/token"
			proof := key.Proof("POST", tokenURL, "", e.clk.Now())
			req := identity.TokenRequest{ClientID: id, ClientSecret: secret, DPoP: &identity.DPoPRequest{Proof: proof, Method: "POST", URLs: []string{tokenURL}}}
			if _, err := p1.Grant(t.Context(), req); err != nil {
				t.Fatalf("first use in process 1: %v", err)
			}
			if _, err := p1.Grant(t.Context(), req); !errors.Is(err, identity.ErrInvalidDPoPProof) {
				t.Errorf("replay to process 1: %v, want invalid_dpop_proof", err)
			}
			_, err := p2.Grant(t.Context(), req)
			if shared && !errors.Is(err, identity.ErrInvalidDPoPProof) {
				t.Errorf("replay to process 2 on a shared store: %v, want invalid_dpop_proof", err)
			}
			if !shared && err != nil {
				t.Errorf("replay to process 2 without the shared guard: %v (the shared guard is what refuses it)", err)
			}
		})
	}
}

// TestRevokeTokenAcrossProcesses: a token revoked through one process is
// refused there at once, by another process once it re-reads revocations
// (at once when told, RevocationsChanged, else within 5 seconds), and the
// client's other tokens stay valid. Introspection reads the store at once.
func TestRevokeTokenAcrossProcesses(t *testing.T) {
	e := newEnv(t, latchkeytest.Start)
	const iss = "https://as.example"
	p1, p2, p3 := e.service(t, iss, false), e.service(t, iss, false), e.service(t, iss, false)
	_, id, secret := e.client(t, p1, "ACME000001")
	ctx := t.Context()
	tok, _, _, err := p1.ClientCredentials(ctx, id, secret, "")
	if err != nil {
		t.Fatal(err)
	}
	other, _, _, _ := p1.ClientCredentials(ctx, id, secret, "")
	for i, p := range []*identity.Service{p1, p2, p3} {
		if _, err := p.Authenticate(ctx, tok, identity.AccessToken); err != nil {
			t.Fatalf("process %d before revocation: %v", i+1, err)
		}
	}
	if err := p1.Revoke(ctx, id, secret, tok, "access_token"); err != nil {
		t.Fatal(err)
	}
	revoked := func(p *identity.Service) bool {
		_, err := p.Authenticate(ctx, tok, identity.AccessToken)
		return fault.Is(fault.Unauthenticated, err) && fault.MessageOf(err) == "token revoked"
	}
	if !revoked(p1) {
		t.Error("revoking process accepts the token")
	}
	p2.RevocationsChanged() // as the platform does on a Notifier's signal
	if !revoked(p2) {
		t.Error("a process told of the revocation accepts the token")
	}
	if in, err := p3.Introspect(ctx, id, secret, tok); err != nil || in.Active {
		t.Errorf("introspection in a third process = %+v, %v; want inactive", in, err)
	}
	e.clk.Advance(5 * time.Second)
	if !revoked(p3) {
		t.Error("a process not told accepts the token after 5 seconds")
	}
	if _, err := p2.Authenticate(ctx, other, identity.AccessToken); err != nil {
		t.Errorf("the client's other token: %v", err)
	}
}

// TestAudience: a token names the issuer by default and is accepted by
// the platform's routes; a token asked for a registered resource names it
// and is accepted only by that resource; an unregistered resource is
// invalid_target.
func TestAudience(t *testing.T) {
	e := newEnv(t, latchkeytest.Start)
	const iss, api = "https://as.example", "https://api.example.com/v1"
	s := e.service(t, iss, false)
	_, id, secret := e.client(t, s, "ACME000001", api)
	ctx := t.Context()
	grant := func(res ...string) (string, error) {
		g, err := s.Grant(ctx, identity.TokenRequest{ClientID: id, ClientSecret: secret, Resources: res})
		return g.AccessToken, err
	}
	platform, err := grant()
	if err != nil {
		t.Fatal(err)
	}
	forAPI, err := grant(api)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, token, audience string
		ok                    bool
	}{
		{"default token at the platform", platform, "", true},
		{"default token at the platform, named", platform, iss, true},
		{"default token at the API", platform, api, false},
		{"API token at the API", forAPI, api, true},
		{"API token at the platform", forAPI, "", false},
		{"API token at another API", forAPI, "https://api.example.com/v2", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.AuthenticateRequest(ctx, tt.token, identity.AccessToken, tt.audience, identity.Presentation{Scheme: "Bearer"})
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, identity.ErrInvalidToken)) {
				t.Errorf("AuthenticateRequest = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if _, err := grant("https://evil.example.com"); !errors.Is(err, identity.ErrInvalidTarget) {
		t.Errorf("unregistered resource: %v, want invalid_target", err)
	}
}

// TestRegisterOAuthClientResources: resources must be absolute URIs
// without fragment.
func TestRegisterOAuthClientResources(t *testing.T) {
	e := newEnv(t, latchkeytest.Start)
	s := e.service(t, "https://as.example", false)
	root := identity.Principal{Kind: identity.KindUser, TenantCode: identity.RootTenantCode, Roles: []string{identity.RoleTenantAdmin}}
	tn, err := s.CreateTenant(t.Context(), root, "T", "ACME000001")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"relative/path", "https://api.example.com/#frag", "urn-without-colon", ""} {
		_, _, err := s.RegisterOAuthClient(context.Background(), root, tn.ID, identity.NewOAuthClient{Name: "c", Resources: []string{r}})
		if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "resources" {
			t.Errorf("resource %q: %v, want Invalid on field resources", r, err)
		}
	}
}

// TestClientReach: a client reaches the tokens of its tenant; a public
// client, whose client_id anyone may send, only those issued to it.
func TestClientReach(t *testing.T) {
	conf := identity.OAuthClient{ID: "c1", TenantID: "t1"}
	pub := identity.OAuthClient{ID: "p1", TenantID: "t1", Type: identity.ClientPublic}
	for _, tc := range []struct {
		name             string
		c                identity.OAuthClient
		tenant, clientID string
		ok               bool
	}{
		{"confidential, its own token", conf, "t1", "c1", true},
		{"confidential, another client of its tenant", conf, "t1", "c2", true},
		{"confidential, another tenant", conf, "t2", "c1", false},
		{"public, its own token", pub, "t1", "p1", true},
		{"public, another client of its tenant", pub, "t1", "c1", false},
		{"public, another tenant", pub, "t2", "p1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Reach(tc.tenant, tc.clientID)
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, identity.ErrUnauthorizedClient) {
				t.Errorf("Reach(%s, %s) = %v, want ok %v (else unauthorized_client)", tc.tenant, tc.clientID, err, tc.ok)
			}
		})
	}
}
