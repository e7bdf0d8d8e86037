package httpapi_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/vault"
)

// TestTokenChallenges: RFC 6750 §3: a request without a token gets the
// bare challenge; a bad, expired, revoked or wrong-audience token gets
// error="invalid_token" (so a client tells it from a missing one); a token
// whose scope is too narrow 403 with error="insufficient_scope" and the
// scope needed.
func TestTokenChallenges(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	const api = "https://api.acme.example"
	r := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/oauth-clients", map[string]any{"name": "c", "scopes": []string{identity.ScopeEventConsumer}, "resources": []string{api}}, bearer(tn.AdminToken))
	if r.Status != 201 {
		t.Fatalf("create client: %d %s", r.Status, r.Body)
	}
	id, secret := r.JSON()["client_id"].(string), r.JSON()["client_secret"].(string)
	good := e.AccessToken(id, secret)
	revoked := e.AccessToken(id, secret)
	if r := e.Do("POST", "/oauth/v1/revoke", url.Values{"token": {revoked}, "client_id": {id}, "client_secret": {secret}}.Encode(), formCT); r.Status != 200 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "resource": {api}}
	r = e.Do("POST", "/oauth/v1/token", form.Encode(), formCT)
	if r.Status != 200 {
		t.Fatalf("token for the API: %d %s", r.Status, r.Body)
	}
	forAPI := r.JSON()["access_token"].(string)
	expiring := e.AccessToken(id, secret)

	const events = "/events/v1/events"
	tests := []struct {
		name      string
		path      string
		headers   []string
		status    int
		challenge string // exact WWW-Authenticate
		oauthErr  string // the body's error, on a route of OAuth-shaped errors
	}{
		{"no token", events, nil, 401, `Bearer realm="latchkey"`, ""},
		{"another scheme", events, []string{"Authorization: Basic Zm9vOmJhcg=="}, 401, `Bearer realm="latchkey"`, ""},
		{"malformed token", events, []string{"Authorization: Bearer not-a-jwt"}, 401, `Bearer realm="latchkey", error="invalid_token", error_description="invalid token"`, ""},
		{"revoked token", events, []string{"Authorization: Bearer " + revoked}, 401, `Bearer realm="latchkey", error="invalid_token", error_description="token revoked"`, ""},
		{"token for another resource", events, []string{"Authorization: Bearer " + forAPI}, 401, `Bearer realm="latchkey", error="invalid_token", error_description="the token is not for this resource (aud)"`, ""},
		{"scope too narrow", "/events/v1/events", []string{"Authorization: Bearer " + good, "Content-Type: application/json"}, 0, "", ""},
		{"platform route, bad JWT", "/api/v1/vault/keys2", []string{"Authorization: Bearer not-a-jwt"}, 401, `Bearer realm="latchkey", error="invalid_token", error_description="invalid token"`, ""},
		{"platform route, no JWT", "/api/v1/vault/keys2", nil, 401, `Bearer realm="latchkey"`, ""},
		{"good token", events, []string{"Authorization: Bearer " + good}, 200, "", ""},
		{"userinfo, bad token", "/oauth/v1/userinfo", []string{"Authorization: Bearer not-a-jwt"}, 401, `Bearer realm="latchkey", error="invalid_token", error_description="invalid token"`, "invalid_token"},
		{"userinfo, revoked token", "/oauth/v1/userinfo", []string{"Authorization: Bearer " + revoked}, 401, `Bearer realm="latchkey", error="invalid_token", error_description="token revoked"`, "invalid_token"},
		{"userinfo, no openid scope", "/oauth/v1/userinfo", []string{"Authorization: Bearer " + good}, 403, `Bearer realm="latchkey", error="insufficient_scope", error_description="the access token lacks scope openid", scope="openid"`, "insufficient_scope"},
		{"userinfo, no token", "/oauth/v1/userinfo", nil, 401, `Bearer realm="latchkey"`, "invalid_request"},
	}
	for _, tt := range tests {
		if tt.status == 0 {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do("GET", tt.path, nil, tt.headers...)
			if r.Status != tt.status {
				t.Fatalf("status %d %s, want %d", r.Status, r.Body, tt.status)
			}
			if d := cmp.Diff(tt.challenge, r.Header.Get("WWW-Authenticate")); d != "" {
				t.Errorf("WWW-Authenticate (-want +got):\n%s", d)
			}
			if tt.oauthErr != "" && r.JSON()["error"] != tt.oauthErr {
				t.Errorf("body %s, want error %q as the challenge says", r.Body, tt.oauthErr)
			}
		})
	}
	t.Run("scope too narrow", func(t *testing.T) {
		r := e.Do("POST", events, map[string]any{"e1": map[string]any{}}, "Authorization: Bearer "+good)
		if r.Status != 403 {
			t.Fatalf("status %d %s, want 403", r.Status, r.Body)
		}
		want := `Bearer realm="latchkey", error="insufficient_scope", error_description="the access token lacks scope event:event:producer", scope="event:event:producer"`
		if d := cmp.Diff(want, r.Header.Get("WWW-Authenticate")); d != "" {
			t.Errorf("WWW-Authenticate (-want +got):\n%s", d)
		}
	})
	t.Run("expired token", func(t *testing.T) {
		e.Clock.Advance(time.Hour + time.Second)
		r := e.Do("GET", events, nil, "Authorization: Bearer "+expiring)
		want := `Bearer realm="latchkey", error="invalid_token", error_description="token expired"`
		if r.Status != 401 || r.Header.Get("WWW-Authenticate") != want {
			t.Errorf("status %d, WWW-Authenticate %q; want 401 %q", r.Status, r.Header.Get("WWW-Authenticate"), want)
		}
	})
}

// TestIntrospectionAndRevocation: a client introspects and revokes tokens
// of its own tenant only; another tenant's token introspects as inactive
// and its revocation is refused (unauthorized_client) and changes nothing;
// a revoked token is refused by every route.
func TestIntrospectionAndRevocation(t *testing.T) {
	e := latchkeytest.New(t)
	a, b := e.NewTenant("Acme"), e.NewTenant("Bolt")
	aID, aSecret := e.OAuthClient(a, "", identity.ScopeEventConsumer, identity.ScopeNotificationAdmin)
	aOther, aOtherSecret := e.OAuthClient(a, "", identity.ScopeEventConsumer)
	bID, bSecret := e.OAuthClient(b, "", identity.ScopeEventConsumer)
	tokA := e.AccessToken(aID, aSecret)
	key := latchkeytest.NewDPoPKey(t, "EdDSA")
	dpopA := dpopToken(t, e, aID, aSecret, key).JSON()["access_token"].(string)
	oauth := func(path, id, secret, token string) latchkeytest.Response {
		return e.Do("POST", path, url.Values{"token": {token}, "client_id": {id}, "client_secret": {secret}}.Encode(), formCT)
	}
	use := func(tok string) int {
		return e.Do("GET", "/events/v1/events", nil, "Authorization: Bearer "+tok).Status
	}

	t.Run("introspection by the token's client", func(t *testing.T) {
		got := oauth("/oauth/v1/introspect", aID, aSecret, tokA).JSON()
		c := latchkeytest.UnverifiedClaims(t, tokA)
		want := map[string]any{"active": true, "client_id": aID, "sub": aID, "scope": c["scope"], "token_type": "Bearer", "iss": "https://latchkey.test",
			"aud": []any{"https://latchkey.test"}, "tid": a.ID, "jti": c["jti"], "exp": c["exp"], "iat": c["iat"], "nbf": c["nbf"]}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("introspection (-want +got):\n%s", d)
		}
	})
	t.Run("introspection of a DPoP token", func(t *testing.T) {
		got := oauth("/oauth/v1/introspect", aID, aSecret, dpopA).JSON()
		if got["token_type"] != "DPoP" || !cmp.Equal(got["cnf"], map[string]any{"jkt": key.Thumbprint()}) {
			t.Errorf("introspection %v, want token_type DPoP and cnf.jkt", got)
		}
	})
	t.Run("another client of the tenant may introspect", func(t *testing.T) {
		if got := oauth("/oauth/v1/introspect", aOther, aOtherSecret, tokA).JSON()["active"]; got != true {
			t.Errorf("active = %v", got)
		}
	})
	t.Run("another tenant's client sees it inactive", func(t *testing.T) {
		if d := cmp.Diff(map[string]any{"active": false}, oauth("/oauth/v1/introspect", bID, bSecret, tokA).JSON()); d != "" {
			t.Errorf("introspection by tenant B (-want +got):\n%s", d)
		}
	})
	t.Run("another tenant's client cannot revoke it", func(t *testing.T) {
		r := oauth("/oauth/v1/revoke", bID, bSecret, tokA)
		if r.Status != 400 || r.JSON()["error"] != "unauthorized_client" {
			t.Fatalf("revoke by tenant B: %d %s, want 400 unauthorized_client", r.Status, r.Body)
		}
		if s := use(tokA); s != 200 {
			t.Errorf("token after tenant B's attempt: %d, want 200", s)
		}
	})
	t.Run("garbage is no error", func(t *testing.T) {
		if r := oauth("/oauth/v1/revoke", aID, aSecret, "garbage"); r.Status != 200 || len(r.Body) != 0 {
			t.Errorf("revoke garbage: %d %q, want 200 and no body", r.Status, r.Body)
		}
	})
	t.Run("revoked token refused by every route", func(t *testing.T) {
		if r := oauth("/oauth/v1/revoke", aOther, aOtherSecret, tokA); r.Status != 200 {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
		for _, route := range []struct{ method, path string }{
			{"GET", "/events/v1/events"},
			{"POST", "/notification/v1/subscriptions"},
			{"GET", "/audit/v1/service_instances"},
			{"GET", "/eventstream/v1/subscriptions"},
		} {
			r := e.Do(route.method, route.path, map[string]any{}, "Authorization: Bearer "+tokA)
			if r.Status != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Errorf("%s %s with a revoked token: %d %q, want 401 invalid_token", route.method, route.path, r.Status, r.Header.Get("WWW-Authenticate"))
			}
		}
		if got := oauth("/oauth/v1/introspect", aID, aSecret, tokA).JSON()["active"]; got != false {
			t.Errorf("revoked token introspects active=%v", got)
		}
		if s := use(e.AccessToken(aID, aSecret)); s != 200 {
			t.Errorf("a new token of the client: %d", s)
		}
	})
	t.Run("audited", func(t *testing.T) {
		if rec := lastAuditWhere(t, e, a.ID, "oauth.revoke"); rec.Meta["client_id"] != aOther || rec.Meta["jti"] != latchkeytest.UnverifiedClaims(t, tokA)["jti"] {
			t.Errorf("revocation audit = %+v", rec)
		}
		if rec := lastAuditWhere(t, e, a.ID, "oauth.introspect"); rec.Meta["client_id"] != aID {
			t.Errorf("introspection audit = %+v", rec)
		}
		if rec := lastAuditWhere(t, e, b.ID, "oauth.revoke"); rec.Status == "success" || rec.Meta["client_id"] != bID {
			t.Errorf("refused revocation audit in tenant B = %+v", rec)
		}
	})
}

// TestMetadataOnBothListeners: the RFC 8414 metadata names the new
// endpoints and, when the server has a mutual-TLS listener, their aliases
// there; the TLS listener serves the same document (one issuer).
func TestMetadataOnBothListeners(t *testing.T) {
	e := latchkeytest.New(t)
	opts := httpapi.Defaults()
	opts.PublicURL = "https://id.example"
	opts.MTLSURL = "https://mtls.id.example:8443"
	h := httpapi.New(e.Platform, opts)
	plain := httptest.NewServer(h)
	defer plain.Close()
	tlsSrv := httptest.NewUnstartedServer(h)
	tlsSrv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	var docs []map[string]any
	for _, srv := range []*httptest.Server{plain, tlsSrv} {
		r := e.DoWith(srv.Client(), srv.URL, "GET", "/.well-known/oauth-authorization-server", nil)
		if r.Status != 200 {
			t.Fatalf("metadata: %d", r.Status)
		}
		docs = append(docs, r.JSON())
	}
	if d := cmp.Diff(docs[0], docs[1]); d != "" {
		t.Errorf("metadata differs between listeners (-plain +tls):\n%s", d)
	}
	md := docs[0]
	want := map[string]any{
		"issuer":                 "https://latchkey.test",
		"token_endpoint":         "https://id.example/oauth/v1/token",
		"introspection_endpoint": "https://id.example/oauth/v1/introspect",
		"revocation_endpoint":    "https://id.example/oauth/v1/revoke",
		"mtls_endpoint_aliases": map[string]any{
			"token_endpoint":                        "https://mtls.id.example:8443/oauth/v1/token",
			"introspection_endpoint":                "https://mtls.id.example:8443/oauth/v1/introspect",
			"revocation_endpoint":                   "https://mtls.id.example:8443/oauth/v1/revoke",
			"pushed_authorization_request_endpoint": "https://mtls.id.example:8443/oauth/v1/par",
			"device_authorization_endpoint":         "https://mtls.id.example:8443/oauth/v1/device_authorization",
		},
		"pushed_authorization_request_endpoint": "https://id.example/oauth/v1/par",
		"device_authorization_endpoint":         "https://id.example/oauth/v1/device_authorization",
		"grant_types_supported": []any{"client_credentials", "authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange",
			"urn:ietf:params:oauth:grant-type:device_code"},
		"token_endpoint_auth_signing_alg_values_supported":         []any{"ES256", "PS256", "EdDSA", "Ed25519", "RS256"},
		"introspection_endpoint_auth_signing_alg_values_supported": []any{"ES256", "PS256", "EdDSA", "Ed25519", "RS256"},
		"revocation_endpoint_auth_signing_alg_values_supported":    []any{"ES256", "PS256", "EdDSA", "Ed25519", "RS256"},
		"dpop_signing_alg_values_supported":                        []any{"ES256", "EdDSA", "Ed25519"},
		"tls_client_certificate_bound_access_tokens":               true,
	}
	got := map[string]any{}
	for k := range want {
		got[k] = md[k]
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("metadata (-want +got):\n%s", d)
	}
	if _, ok := latchkeytest.New(t).Do("GET", "/.well-known/oauth-authorization-server", nil).JSON()["mtls_endpoint_aliases"]; ok {
		t.Error("a server without a mutual-TLS listener publishes mtls_endpoint_aliases")
	}
}

// TestMetadataInBothDiscoveryDocuments: every field API-fapi.md's
// "Metadata (both documents)" lists is in the OpenID Provider
// configuration and the RFC 8414 metadata alike, with the same value,
// mtls_endpoint_aliases (RFC 8705 §5) with the PAR and device endpoints
// among them when the server has a mutual-TLS listener.
func TestMetadataInBothDiscoveryDocuments(t *testing.T) {
	e := latchkeytest.New(t)
	opts := httpapi.Defaults()
	opts.PublicURL = "https://id.example"
	opts.MTLSURL = "https://mtls.id.example:8443"
	srv := httptest.NewServer(httpapi.New(e.Platform, opts))
	defer srv.Close()
	docs := map[string]map[string]any{}
	for _, path := range []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"} {
		r := e.DoWith(srv.Client(), srv.URL, "GET", path, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %d", path, r.Status)
		}
		docs[path] = r.JSON()
	}
	algs := []any{"ES256", "PS256", "EdDSA", "Ed25519", "RS256"}
	m := "https://mtls.id.example:8443/oauth/v1/"
	want := map[string]any{
		"pushed_authorization_request_endpoint": "https://id.example/oauth/v1/par",
		"require_pushed_authorization_requests": false,
		"device_authorization_endpoint":         "https://id.example/oauth/v1/device_authorization",
		"grant_types_supported": []any{"client_credentials", "authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange",
			"urn:ietf:params:oauth:grant-type:device_code"},
		"token_endpoint_auth_methods_supported":                    []any{"client_secret_basic", "client_secret_post", "private_key_jwt", "tls_client_auth", "none"},
		"introspection_endpoint_auth_methods_supported":            []any{"client_secret_basic", "client_secret_post", "private_key_jwt", "tls_client_auth"},
		"revocation_endpoint_auth_methods_supported":               []any{"client_secret_basic", "client_secret_post", "private_key_jwt", "tls_client_auth"},
		"token_endpoint_auth_signing_alg_values_supported":         algs,
		"introspection_endpoint_auth_signing_alg_values_supported": algs,
		"revocation_endpoint_auth_signing_alg_values_supported":    algs,
		"request_parameter_supported":                              true,
		"request_uri_parameter_supported":                          false,
		"require_signed_request_object":                            false,
		"request_object_signing_alg_values_supported":              algs,
		"id_token_signing_alg_values_supported":                    []any{"RS256", "ES256", "PS256"},
		"mtls_endpoint_aliases": map[string]any{"token_endpoint": m + "token", "introspection_endpoint": m + "introspect", "revocation_endpoint": m + "revoke",
			"pushed_authorization_request_endpoint": m + "par", "device_authorization_endpoint": m + "device_authorization"},
		"dpop_signing_alg_values_supported":          []any{"ES256", "EdDSA", "Ed25519"},
		"tls_client_certificate_bound_access_tokens": true,
	}
	for path, md := range docs {
		got := map[string]any{}
		for k := range want {
			if v, ok := md[k]; ok {
				got[k] = v
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", path, d)
		}
	}
	// Without a mutual-TLS listener neither document has aliases.
	for _, path := range []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"} {
		if _, ok := e.Do("GET", path, nil).JSON()["mtls_endpoint_aliases"]; ok {
			t.Errorf("%s: mtls_endpoint_aliases without a mutual-TLS listener", path)
		}
	}
}

// TestCertificateBoundClientJWT: the JWT of a registered client's
// mutual-TLS login carries cnf x5t#S256 of its certificate and is accepted
// only with that certificate: refused over plain HTTP, with no
// certificate, and when stolen and presented with another client's
// certificate.
func TestCertificateBoundClientJWT(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("A")
	e.ClientProfile(a, map[string]any{"name": "p", "role": "application-owner"})
	robot := e.RegisterClient("robot", e.RegistrationToken(a, "p", 2, 3600))
	thief := e.RegisterClient("thief", e.RegistrationToken(a, "p", 1, 3600))
	srv := e.TLSServer(httpapi.Defaults())
	r := e.DoWith(latchkeytest.HTTPSClient(srv, robot.TLSCertificate), srv.URL, "POST", "/api/v1/auth/tokens/",
		map[string]any{"grant_type": "client_credential", "client_id": robot.ID})
	if r.Status != 200 {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	jwt := r.JSON()["jwt"].(string)
	cnf, _ := latchkeytest.UnverifiedClaims(t, jwt)["cnf"].(map[string]any)
	if want := identity.CertificateThumbprint(robot.TLSCertificate.Certificate[0]); cnf["x5t#S256"] != want {
		t.Fatalf("cnf = %v, want x5t#S256 %s", cnf, want)
	}
	for _, tt := range []struct {
		name   string
		do     func() latchkeytest.Response
		status int
	}{
		{"same certificate", func() latchkeytest.Response {
			return e.DoWith(latchkeytest.HTTPSClient(srv, robot.TLSCertificate), srv.URL, "GET", "/api/v1/vault/keys2", nil, bearer(jwt))
		}, 200},
		{"plain HTTP", func() latchkeytest.Response { return e.Do("GET", "/api/v1/vault/keys2", nil, bearer(jwt)) }, 401},
		{"TLS without certificate", func() latchkeytest.Response {
			return e.DoWith(latchkeytest.HTTPSClient(srv), srv.URL, "GET", "/api/v1/vault/keys2", nil, bearer(jwt))
		}, 401},
		{"stolen, with another client's certificate", func() latchkeytest.Response {
			return e.DoWith(latchkeytest.HTTPSClient(srv, thief.TLSCertificate), srv.URL, "GET", "/api/v1/vault/keys2", nil, bearer(jwt))
		}, 401},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.do()
			if r.Status != tt.status {
				t.Fatalf("status %d %s, want %d", r.Status, r.Body, tt.status)
			}
			if tt.status == 401 && !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Errorf("WWW-Authenticate %q, want invalid_token", r.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestRequireAccessTokenWithDPoP: an embedder's API guarded by
// RequireAccessToken takes DPoP-bound tokens for its audience with fresh
// proofs naming its URL, and refuses a scope it does not hold.
func TestRequireAccessTokenWithDPoP(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	const api = "https://api.acme.example"
	r := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/oauth-clients", map[string]any{"name": "c", "scopes": []string{identity.ScopeEventConsumer}, "resources": []string{api}}, bearer(tn.AdminToken))
	id, secret := r.JSON()["client_id"].(string), r.JSON()["client_secret"].(string)
	key := latchkeytest.NewDPoPKey(t, "ES256")
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "resource": {api}}
	r = e.Do("POST", "/oauth/v1/token", form.Encode(), formCT, "DPoP: "+key.Proof("POST", e.Server.URL+"/oauth/v1/token", "", e.Clock.Now()))
	if r.Status != 200 {
		t.Fatalf("token: %d %s", r.Status, r.Body)
	}
	tok := r.JSON()["access_token"].(string)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	for _, tt := range []struct {
		name   string
		opts   httpapi.ResourceOptions
		proof  string
		status int
	}{
		{"fresh proof for the API's URL", httpapi.ResourceOptions{Audience: api, URL: api}, key.Proof("GET", api+"/things", tok, e.Clock.Now()), 204},
		{"proof for another URL", httpapi.ResourceOptions{Audience: api, URL: api}, key.Proof("GET", "https://other.example/things", tok, e.Clock.Now()), 401},
		{"scope not held", httpapi.ResourceOptions{Audience: api, URL: api, Scope: identity.ScopeAuditExport}, key.Proof("GET", api+"/things", tok, e.Clock.Now()), 403},
		{"another audience", httpapi.ResourceOptions{Audience: "https://billing.example", URL: api}, key.Proof("GET", api+"/things", tok, e.Clock.Now()), 401},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(httpapi.RequireAccessToken(e.Platform, tt.opts)(ok))
			defer srv.Close()
			r := e.DoWith(srv.Client(), srv.URL, "GET", "/things", nil, "Authorization: DPoP "+tok, "DPoP: "+tt.proof)
			if r.Status != tt.status {
				t.Errorf("status %d %s (%s), want %d", r.Status, r.Body, r.Header.Get("WWW-Authenticate"), tt.status)
			}
		})
	}
}

// TestScopeRefusalsAudited: a request refused because the caller's token
// lacks the route's scope never reaches the area's service, and is
// audited all the same: in the caller's tenant, under the route's area,
// failed, with the refusal as meta.errorMessage.
func TestScopeRefusalsAudited(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	id, secret := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
	tok := e.AccessToken(id, secret)
	for _, c := range []struct {
		method, path, source string
		body                 any
	}{
		{"POST", "/events/v1/events", audit.SourceEvents, map[string]any{"e1": map[string]any{}}},
		{"GET", "/audit/v1/service_instances", audit.SourceAudit, nil},
		{"GET", "/eventstream/v1/subscriptions", audit.SourceEventStream, nil},
		{"POST", "/notification/v1/subscriptions", audit.SourceNotification, map[string]any{}},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			if r := e.Do(c.method, c.path, c.body, "Authorization: Bearer "+tok); r.Status != 403 {
				t.Fatalf("status %d %s, want 403", r.Status, r.Body)
			}
			rec := lastAuditWhere(t, e, tn.ID, httpapi.ActionAccessDenied)
			want := map[string]any{"method": c.method, "route": c.path, "client_id": id, "errorMessage": rec.Meta["errorMessage"]}
			if d := cmp.Diff(want, rec.Meta); d != "" || rec.Source != c.source || rec.Status != audit.StatusFailed || rec.ActorID != id ||
				!strings.Contains(fmt.Sprint(rec.Meta["errorMessage"]), "lacks scope") {
				t.Errorf("record %+v (meta -want +got:\n%s), want source %s, failed, actor %s", rec, d, c.source, id)
			}
		})
	}
	// Without a token there is no tenant to write to: 401, and no record.
	before := lastAuditWhere(t, e, tn.ID, httpapi.ActionAccessDenied).Seq
	if r := e.Do("GET", "/events/v1/events", nil); r.Status != 401 {
		t.Errorf("no token: %d", r.Status)
	}
	if after := lastAuditWhere(t, e, tn.ID, httpapi.ActionAccessDenied).Seq; after != before {
		t.Errorf("a request without a token was recorded in the tenant (seq %d after %d)", after, before)
	}
}

// TestRefusalsBeforeTheServiceAudited: a request refused by the HTTP
// layer after authentication (a body that does not decode, a bad query
// parameter) has one failed record, written there since no area saw the
// request; a refusal an area records is not recorded twice.
func TestRefusalsBeforeTheServiceAudited(t *testing.T) {
	e := latchkeytest.New(t)
	root := "Authorization: Bearer " + e.AdminToken()
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		action             string
	}{
		{"body not JSON", "POST", "/api/v1/vault/keys2", "{not json", 400, httpapi.ActionRequestRefused},
		{"body of the wrong shape", "PATCH", "/api/v1/vault/keys2/some-key", `{"name": 7}`, 400, httpapi.ActionRequestRefused},
		{"bad query parameter", "GET", "/api/v1/vault/keys2?limit=many", nil, 400, httpapi.ActionRequestRefused},
		{"refused by the area", "POST", "/api/v1/vault/keys2", map[string]any{"name": "k", "algorithm": "AES", "size": 100}, 400, vault.ActionCreate},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.Do(c.method, c.path, c.body, root)
			if r.Status != c.status {
				t.Fatalf("status %d %s, want %d", r.Status, r.Body, c.status)
			}
			trace := r.Header.Get("X-Trace-Id")
			if trace == "" {
				t.Fatal("no X-Trace-Id")
			}
			recs, _ := e.Store.ListAuditRecords(t.Context(), e.Root.ID, 0, 1_000_000)
			var got []string
			for _, rec := range recs {
				if rec.TraceID == trace {
					got = append(got, rec.Action+" "+rec.Status)
				}
			}
			if d := cmp.Diff([]string{c.action + " " + audit.StatusFailed}, got); d != "" {
				t.Errorf("the request's records (-want +got):\n%s", d)
			}
		})
	}
}
