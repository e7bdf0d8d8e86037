package httpapi_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/identity/pki"
	"github.com/latchkey/latchkey/latchkeytest"
)

// assertionKey signs client assertions for tests: an ES256 key whose
// signatures are built with the standard library (latchkeytest.DPoPKey),
// named by kid.
type assertionKey struct {
	*latchkeytest.DPoPKey
	kid string
}

func newAssertionKey(t testing.TB, kid string) assertionKey {
	return assertionKey{latchkeytest.NewDPoPKey(t, "ES256"), kid}
}

// jwks is the key's public JWK Set.
func (k assertionKey) jwks() map[string]any {
	jwk := map[string]any{"kid": k.kid}
	for n, v := range k.JWK {
		jwk[n] = v
	}
	return map[string]any{"keys": []any{jwk}}
}

// claims are a valid assertion's claims for client id at now.
func assertionClaims(id, aud string, now time.Time) map[string]any {
	return map[string]any{"iss": id, "sub": id, "aud": aud, "jti": rand.Text(), "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}
}

func (k assertionKey) assertion(header, claims map[string]any) string {
	h := map[string]any{"alg": "ES256", "kid": k.kid, "typ": "JWT"}
	for n, v := range header {
		if v == nil {
			delete(h, n)
		} else {
			h[n] = v
		}
	}
	return k.Sign(h, claims)
}

func assertionForm(grant, assertion string) string {
	v := url.Values{"grant_type": {grant}, "client_assertion_type": {identity.AssertionTypeJWT}, "client_assertion": {assertion}}
	return v.Encode()
}

// registerClient registers an OAuth client of tn with body and returns
// the answer.
func registerClient(t testing.TB, e *latchkeytest.Env, tn latchkeytest.Tenant, body map[string]any) map[string]any {
	t.Helper()
	r := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/oauth-clients", body, bearer(tn.AdminToken))
	if r.Status != http.StatusCreated {
		t.Fatalf("register client: %d %s", r.Status, r.Body)
	}
	return r.JSON()
}

// TestPrivateKeyJWT: a private_key_jwt client gets tokens with an
// assertion that follows every rule of API-fapi.md, and each rule broken
// once is invalid_client, its reason audited as oauth.client-auth.
func TestPrivateKeyJWT(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	key := newAssertionKey(t, "k1")
	other := newAssertionKey(t, "k1")
	cl := registerClient(t, e, tn, map[string]any{"name": "signer", "scopes": []string{identity.ScopeEventConsumer},
		"token_endpoint_auth_method": "private_key_jwt", "jwks": key.jwks()})
	id := cl["client_id"].(string)
	if cl["client_secret"] != nil || cl["token_endpoint_auth_method"] != "private_key_jwt" {
		t.Fatalf("registered: %v", cl)
	}
	iss := "https://latchkey.test"
	tokenURL := httpapi.Defaults().PublicURL + "/oauth/v1/token" // the token endpoint at the public URL
	post := func(assertion string, extra ...string) latchkeytest.Response {
		form := assertionForm("client_credentials", assertion)
		for _, x := range extra {
			form += "&" + x
		}
		return e.Do("POST", "/oauth/v1/token", form, formCT)
	}
	now := e.Clock.Now()
	if r := post(key.assertion(nil, assertionClaims(id, iss, now))); r.Status != 200 {
		t.Fatalf("valid assertion: %d %s", r.Status, r.Body)
	}
	replayed := key.assertion(nil, assertionClaims(id, iss, now))
	if r := post(replayed); r.Status != 200 {
		t.Fatalf("first use: %d %s", r.Status, r.Body)
	}
	with := func(mod func(c map[string]any)) map[string]any {
		c := assertionClaims(id, iss, now)
		mod(c)
		return c
	}
	for _, tt := range []struct {
		name, assertion, extra, reason string
	}{
		{"replayed jti", replayed, "", "jti was used before"},
		{"aud a URL of another party", key.assertion(nil, with(func(c map[string]any) { c["aud"] = "https://other.example" })), "", "aud"},
		{"aud array of two", key.assertion(nil, with(func(c map[string]any) { c["aud"] = []string{iss, tokenURL} })), "", "aud"},
		{"aud missing", key.assertion(nil, with(func(c map[string]any) { delete(c, "aud") })), "", "aud"},
		{"iss not the client", key.assertion(nil, with(func(c map[string]any) { c["sub"] = "lkc_other" })), "", "iss and sub"},
		{"expired", key.assertion(nil, with(func(c map[string]any) { c["exp"] = now.Add(-time.Second).Unix() })), "", "expired"},
		{"no exp", key.assertion(nil, with(func(c map[string]any) { delete(c, "exp") })), "", "needs exp"},
		{"exp too far", key.assertion(nil, with(func(c map[string]any) { c["exp"] = now.Add(6 * time.Minute).Unix() })), "", "5 minutes"},
		{"iat in the future", key.assertion(nil, with(func(c map[string]any) {
			c["iat"], c["exp"] = now.Add(2*time.Minute).Unix(), now.Add(3*time.Minute).Unix()
		})), "", "iat"},
		{"nbf in the future", key.assertion(nil, with(func(c map[string]any) { c["nbf"] = now.Add(2 * time.Minute).Unix() })), "", "nbf"},
		{"no jti", key.assertion(nil, with(func(c map[string]any) { delete(c, "jti") })), "", "jti"},
		{"unknown kid", key.assertion(map[string]any{"kid": "k2"}, assertionClaims(id, iss, now)), "", "kid"},
		{"no kid", key.assertion(map[string]any{"kid": nil}, assertionClaims(id, iss, now)), "", "kid"},
		{"another key's signature", other.assertion(nil, assertionClaims(id, iss, now)), "", "signature"},
		{"alg none", key.assertion(map[string]any{"alg": "none"}, assertionClaims(id, iss, now)), "", "algorithm"},
		{"alg HS256", key.assertion(map[string]any{"alg": "HS256"}, assertionClaims(id, iss, now)), "", "algorithm"},
		{"alg of another key type", key.assertion(map[string]any{"alg": "RS256"}, assertionClaims(id, iss, now)), "", "signature"},
		{"typ dpop+jwt", key.assertion(map[string]any{"typ": "dpop+jwt"}, assertionClaims(id, iss, now)), "", "typ"},
		{"crit", key.assertion(map[string]any{"crit": []string{"exp"}}, assertionClaims(id, iss, now)), "", "crit"},
		{"embedded jwk", key.assertion(map[string]any{"jwk": key.JWK}, assertionClaims(id, iss, now)), "", "embed"},
		{"client_id of another client", key.assertion(nil, assertionClaims(id, iss, now)), "client_id=lkc_other", "client_id"},
		{"not a JWS", "a.b", "", "compact JWS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := post(tt.assertion, tt.extra)
			if r.Status != 400 || r.JSON()["error"] != "invalid_client" || !strings.Contains(r.JSON()["error_description"].(string), tt.reason) {
				t.Fatalf("%d %s, want 400 invalid_client naming %q", r.Status, r.Body, tt.reason)
			}
			if tt.extra != "" || tt.name == "not a JWS" {
				return // the client is not known: nothing in its tenant
			}
			rec := lastAuditWhere(t, e, tn.ID, identity.ActionClientAuth)
			if rec.Status != audit.StatusFailed || rec.Meta["client_id"] != id || !strings.Contains(rec.Meta["reason"].(string), tt.reason) {
				t.Errorf("audit %+v, want the refusal with its reason", rec)
			}
		})
	}
	t.Run("aud forms accepted for a client without profile fapi2", func(t *testing.T) {
		for _, aud := range []any{tokenURL, []string{iss}, []string{tokenURL}} {
			if r := post(key.assertion(nil, with(func(c map[string]any) { c["aud"] = aud }))); r.Status != 200 {
				t.Errorf("aud %v: %d %s", aud, r.Status, r.Body)
			}
		}
		if r := post(key.assertion(map[string]any{"typ": nil}, assertionClaims(id, iss, now))); r.Status != 200 {
			t.Errorf("no typ: %d %s", r.Status, r.Body)
		}
		if r := post(key.assertion(map[string]any{"typ": "client-authentication+jwt"}, assertionClaims(id, iss, now))); r.Status != 200 {
			t.Errorf("typ client-authentication+jwt: %d %s", r.Status, r.Body)
		}
	})
	t.Run("a secret is another method", func(t *testing.T) {
		r := e.Do("POST", "/oauth/v1/token", "grant_type=client_credentials&client_id="+id+"&client_secret=x", formCT)
		if r.Status != 400 || r.JSON()["error"] != "invalid_client" || !strings.Contains(r.JSON()["error_description"].(string), "private_key_jwt") {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("a secret client's assertion is another method", func(t *testing.T) {
		sid, _ := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
		r := post(key.assertion(nil, assertionClaims(sid, iss, now)))
		if r.Status != 400 || r.JSON()["error"] != "invalid_client" {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("introspection and revocation", func(t *testing.T) {
		tok := post(key.assertion(nil, assertionClaims(id, iss, now))).JSON()["access_token"].(string)
		in := e.Do("POST", "/oauth/v1/introspect", assertionForm("", key.assertion(nil, assertionClaims(id, iss, now)))+"&token="+tok, formCT)
		if in.Status != 200 || in.JSON()["active"] != true {
			t.Fatalf("introspect: %d %s", in.Status, in.Body)
		}
		bad := e.Do("POST", "/oauth/v1/revoke", assertionForm("", other.assertion(nil, assertionClaims(id, iss, now)))+"&token="+tok, formCT)
		if bad.Status != 400 || bad.JSON()["error"] != "invalid_client" {
			t.Fatalf("revoke with a bad assertion: %d %s", bad.Status, bad.Body)
		}
		if r := e.Do("POST", "/oauth/v1/revoke", assertionForm("", key.assertion(nil, assertionClaims(id, iss, now)))+"&token="+tok, formCT); r.Status != 200 {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
	})
}

// TestPrivateKeyJWTAlgorithms: PS256, RS256 and Ed25519 keys (signed by
// go-jose, as a client library would) are accepted, and a pinned
// algorithm refuses the others.
func TestPrivateKeyJWTAlgorithms(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ed := latchkeytest.NewDPoPKey(t, "Ed25519")
	edJWK := map[string]any{"kid": "ed"}
	for n, v := range ed.JWK {
		edJWK[n] = v
	}
	pub := jose.JSONWebKey{Key: &rsaKey.PublicKey, KeyID: "rsa"}
	pubJSON, _ := pub.MarshalJSON()
	var rsaJWK map[string]any
	json.Unmarshal(pubJSON, &rsaJWK)
	cl := registerClient(t, e, tn, map[string]any{"name": "signer", "token_endpoint_auth_method": "private_key_jwt",
		"jwks": map[string]any{"keys": []any{rsaJWK, edJWK}}})
	id := cl["client_id"].(string)
	signRSA := func(alg jose.SignatureAlgorithm) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: rsaKey, KeyID: "rsa"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(assertionClaims(id, "https://latchkey.test", e.Clock.Now()))
		obj, err := s.Sign(b)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := obj.CompactSerialize()
		return out
	}
	token := func(a string) latchkeytest.Response {
		return e.Do("POST", "/oauth/v1/token", assertionForm("client_credentials", a), formCT)
	}
	for name, a := range map[string]string{
		"PS256":   signRSA(jose.PS256),
		"RS256":   signRSA(jose.RS256),
		"EdDSA":   ed.Sign(map[string]any{"alg": "EdDSA", "kid": "ed"}, assertionClaims(id, "https://latchkey.test", e.Clock.Now())),
		"Ed25519": ed.Sign(map[string]any{"alg": "Ed25519", "kid": "ed"}, assertionClaims(id, "https://latchkey.test", e.Clock.Now())),
	} {
		if r := token(a); r.Status != 200 {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	one := "/api/v1/admin/tenants/" + tn.ID + "/oauth-clients/" + id
	if r := e.Do("PATCH", one, map[string]any{"token_endpoint_auth_signing_alg": "PS256"}, bearer(tn.AdminToken)); r.Status != 200 {
		t.Fatalf("pin: %d %s", r.Status, r.Body)
	}
	if r := token(signRSA(jose.RS256)); r.Status != 400 || !strings.Contains(r.JSON()["error_description"].(string), "PS256") {
		t.Errorf("RS256 with PS256 pinned: %d %s", r.Status, r.Body)
	}
	if r := token(signRSA(jose.PS256)); r.Status != 200 {
		t.Errorf("PS256 pinned: %d %s", r.Status, r.Body)
	}
}

// TestOAuthClientAdminRoutes: GET shows a client without its secret;
// PATCH changes the fields it names, checks the whole registration
// naming the field at fault, deletes the secret of a client leaving the
// secret methods and gives one to a client coming back; each change is
// audited; another tenant's administrator gets 404.
func TestOAuthClientAdminRoutes(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	other := e.NewTenant("Bolt")
	id, secret := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
	one := "/api/v1/admin/tenants/" + tn.ID + "/oauth-clients/" + id
	admin := bearer(tn.AdminToken)
	r := e.Do("GET", one, nil, admin)
	if r.Status != 200 || r.JSON()["client_secret"] != nil || r.JSON()["token_endpoint_auth_method"] != "client_secret_basic" || r.JSON()["name"] == nil {
		t.Fatalf("GET: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/api/v1/admin/tenants/"+other.ID+"/oauth-clients/"+id, nil, bearer(other.AdminToken)); r.Status != 404 {
		t.Errorf("another tenant's admin, own tenant's path: %d", r.Status)
	}
	if r := e.Do("GET", one, nil, bearer(other.AdminToken)); r.Status != 404 && r.Status != 403 {
		t.Errorf("another tenant's admin: %d", r.Status)
	}
	key := newAssertionKey(t, "k1")
	for _, tt := range []struct {
		name  string
		patch map[string]any
		field string
	}{
		{"unknown method", map[string]any{"token_endpoint_auth_method": "client_secret_jwt"}, "token_endpoint_auth_method"},
		{"private_key_jwt without keys", map[string]any{"token_endpoint_auth_method": "private_key_jwt"}, "jwks"},
		{"jwks and jwks_uri", map[string]any{"jwks": key.jwks(), "jwks_uri": "https://keys.example/jwks"}, "jwks"},
		{"a private key", map[string]any{"jwks": map[string]any{"keys": []any{key.PrivateJWK()}}}, "jwks"},
		{"a key without kid", map[string]any{"jwks": map[string]any{"keys": []any{key.JWK}}}, "jwks"},
		{"jwks_uri over http", map[string]any{"jwks_uri": "http://keys.example/jwks"}, "jwks_uri"},
		{"jwks_uri on loopback", map[string]any{"jwks_uri": "https://127.0.0.1/jwks"}, "jwks_uri"},
		{"pin unknown", map[string]any{"token_endpoint_auth_signing_alg": "HS256"}, "token_endpoint_auth_signing_alg"},
		{"tls_client_auth without subject", map[string]any{"token_endpoint_auth_method": "tls_client_auth"}, "tls_client_auth_subject_dn"},
		{"tls_client_auth with two subjects", map[string]any{"token_endpoint_auth_method": "tls_client_auth", "tls_client_auth_san_dns": "a.example", "tls_client_auth_san_email": "a@example.com"}, "tls_client_auth_subject_dn"},
		{"a subject without tls_client_auth", map[string]any{"tls_client_auth_san_dns": "a.example"}, "tls_client_auth_san_dns"},
		{"bad SAN IP", map[string]any{"token_endpoint_auth_method": "tls_client_auth", "tls_client_auth_san_ip": "not-an-ip"}, "tls_client_auth_san_ip"},
		{"none for a confidential client", map[string]any{"token_endpoint_auth_method": "none"}, "token_endpoint_auth_method"},
		{"unknown profile", map[string]any{"profile": "fapi1"}, "profile"},
		{"type change", map[string]any{"type": "public"}, "type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do("PATCH", one, tt.patch, admin)
			if r.Status != 400 || !strings.Contains(r.JSON()["message"].(string), tt.field) {
				t.Errorf("%d %s, want 400 naming %s", r.Status, r.Body, tt.field)
			}
		})
	}
	if rec := lastAuditWhere(t, e, tn.ID, identity.ActionOAuthClientUpdate); rec.Status != audit.StatusFailed {
		t.Errorf("refused change audited as %+v", rec)
	}
	// To private_key_jwt: the secret goes.
	r = e.Do("PATCH", one, map[string]any{"token_endpoint_auth_method": "private_key_jwt", "jwks": key.jwks(), "dpop_bound_access_tokens": true}, admin)
	if r.Status != 200 || r.JSON()["client_secret"] != nil || r.JSON()["dpop_bound_access_tokens"] != true || r.JSON()["jwks"] == nil {
		t.Fatalf("to private_key_jwt: %d %s", r.Status, r.Body)
	}
	if rec := lastAuditWhere(t, e, tn.ID, identity.ActionOAuthClientUpdate); rec.Status != audit.StatusSuccess || rec.Meta["client_id"] != id {
		t.Errorf("change audited as %+v", rec)
	}
	if r := e.Do("POST", "/oauth/v1/token", "grant_type=client_credentials", formCT, basicHeader(id, secret)); r.Status != 401 || r.JSON()["error"] != "invalid_client" {
		t.Errorf("old secret after the change: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", one, nil, admin); r.JSON()["scopes"].([]any)[0] != identity.ScopeEventConsumer || r.JSON()["dpop_bound_access_tokens"] != true {
		t.Errorf("unnamed fields kept: %s", r.Body)
	}
	// Back to client_secret_post: a new secret, accepted in the body only.
	r = e.Do("PATCH", one, map[string]any{"token_endpoint_auth_method": "client_secret_post", "jwks": nil, "dpop_bound_access_tokens": false}, admin)
	newSecret, _ := r.JSON()["client_secret"].(string)
	if r.Status != 200 || newSecret == "" {
		t.Fatalf("to client_secret_post: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/oauth/v1/token", "grant_type=client_credentials", formCT, basicHeader(id, newSecret)); r.Status != 401 || !strings.Contains(r.JSON()["error_description"].(string), "client_secret_post") {
		t.Errorf("HTTP Basic for a client_secret_post client: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/oauth/v1/token", "grant_type=client_credentials&client_id="+id+"&client_secret="+newSecret, formCT); r.Status != 200 {
		t.Errorf("client_secret_post: %d %s", r.Status, r.Body)
	}
	// A client registered without a method may send its secret either way.
	id2, secret2 := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
	if r := e.Do("POST", "/oauth/v1/token", "grant_type=client_credentials&client_id="+id2+"&client_secret="+secret2, formCT); r.Status != 200 {
		t.Errorf("unset method, secret in the body: %d %s", r.Status, r.Body)
	}
}

func basicHeader(id, secret string) string { return "Authorization: Basic " + basicAuth(id, secret) }

// TestTLSClientAuth: a tls_client_auth client authenticates with a
// certificate of the platform's client CA whose subject DN is the
// registered one, on the TLS listener only; no certificate, or another
// subject, is invalid_client.
func TestTLSClientAuth(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	e.ClientProfile(tn, map[string]any{"name": "robots"})
	robot := e.RegisterClient("robot", e.RegistrationToken(tn, "robots", 2, 3600))
	stranger := e.RegisterClient("stranger", e.RegistrationToken(tn, "robots", 2, 3600))
	srv := e.TLSServer(httpapi.Defaults())
	cert := robot.TLSCertificate
	leaf := mustParseCert(t, cert.Certificate[0])
	cl := registerClient(t, e, tn, map[string]any{"name": "mtls", "scopes": []string{identity.ScopeEventConsumer},
		"token_endpoint_auth_method": "tls_client_auth", "tls_client_auth_subject_dn": strings.ToLower(subjectDN(leaf))})
	id := cl["client_id"].(string)
	form := "grant_type=client_credentials&client_id=" + id
	if r := e.DoWith(latchkeytest.HTTPSClient(srv, cert), srv.URL, "POST", "/oauth/v1/token", form, formCT); r.Status != 200 {
		t.Fatalf("with the certificate: %d %s", r.Status, r.Body)
	}
	for name, c := range map[string]*http.Client{
		"no certificate":       latchkeytest.HTTPSClient(srv),
		"another subject's":    latchkeytest.HTTPSClient(srv, stranger.TLSCertificate),
		"plain HTTP, no proxy": e.Server.Client(),
	} {
		base := srv.URL
		if name == "plain HTTP, no proxy" {
			base = e.Server.URL
		}
		r := e.DoWith(c, base, "POST", "/oauth/v1/token", form, formCT)
		if r.Status != 400 || r.JSON()["error"] != "invalid_client" {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	recs, _ := e.Store.ListAuditRecords(t.Context(), tn.ID, 0, 1_000_000)
	reasons := map[any]bool{}
	for _, rec := range recs {
		if rec.Action == identity.ActionClientAuth && rec.Status == audit.StatusFailed {
			reasons[rec.Meta["reason"]] = true
		}
	}
	for _, want := range []string{"no client certificate", "the client certificate's subject is not the registered one"} {
		if !reasons[want] {
			t.Errorf("no oauth.client-auth refusal audited with reason %q (%v)", want, reasons)
		}
	}
}

func mustParseCert(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func subjectDN(c *x509.Certificate) string { return pki.SubjectDN(c) }

// TestBoundTokenFlags: a client with dpop_bound_access_tokens gets no
// token without a DPoP proof (invalid_request), and a DPoP token with one;
// a client with tls_client_certificate_bound_access_tokens gets no token
// without its certificate, and a token bound to it with one.
func TestBoundTokenFlags(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	cl := registerClient(t, e, tn, map[string]any{"name": "dpop", "scopes": []string{identity.ScopeEventConsumer}, "dpop_bound_access_tokens": true,
		"token_endpoint_auth_method": "client_secret_post"})
	form := "grant_type=client_credentials&client_id=" + cl["client_id"].(string) + "&client_secret=" + cl["client_secret"].(string)
	if r := e.Do("POST", "/oauth/v1/token", form, formCT); r.Status != 400 || r.JSON()["error"] != "invalid_request" {
		t.Errorf("no proof: %d %s", r.Status, r.Body)
	}
	k := latchkeytest.NewDPoPKey(t, "ES256")
	if r := e.Do("POST", "/oauth/v1/token", form, formCT, "DPoP: "+k.Proof("POST", e.Server.URL+"/oauth/v1/token", "", e.Clock.Now())); r.Status != 200 || r.JSON()["token_type"] != "DPoP" {
		t.Errorf("with a proof: %d %s", r.Status, r.Body)
	}

	e.ClientProfile(tn, map[string]any{"name": "robots"})
	robot := e.RegisterClient("robot", e.RegistrationToken(tn, "robots", 1, 3600))
	srv := e.TLSServer(httpapi.Defaults())
	leaf := mustParseCert(t, robot.TLSCertificate.Certificate[0])
	mtls := registerClient(t, e, tn, map[string]any{"name": "mtls", "scopes": []string{identity.ScopeEventConsumer}, "tls_client_certificate_bound_access_tokens": true,
		"token_endpoint_auth_method": "tls_client_auth", "tls_client_auth_subject_dn": subjectDN(leaf)})
	mform := "grant_type=client_credentials&client_id=" + mtls["client_id"].(string)
	r := e.DoWith(latchkeytest.HTTPSClient(srv, robot.TLSCertificate), srv.URL, "POST", "/oauth/v1/token", mform, formCT)
	if r.Status != 200 {
		t.Fatalf("with the certificate: %d %s", r.Status, r.Body)
	}
	tok := r.JSON()["access_token"].(string)
	cnf, _ := latchkeytest.UnverifiedClaims(t, tok)["cnf"].(map[string]any)
	if cnf["x5t#S256"] != identity.CertificateThumbprint(leaf.Raw) {
		t.Errorf("cnf %v, want the certificate's thumbprint", cnf)
	}
	if r := e.DoWith(latchkeytest.HTTPSClient(srv, robot.TLSCertificate), srv.URL, "GET", "/events/v1/events", nil, "Authorization: Bearer "+tok); r.Status != 200 {
		t.Errorf("protected call with the certificate: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/events/v1/events", nil, "Authorization: Bearer "+tok); r.Status != 401 {
		t.Errorf("protected call without the certificate: %d %s", r.Status, r.Body)
	}
}

// TestClientAuthRefusalReasonsAudited: the refusals API-fapi.md lists
// that other tests do not reach are invalid_client too, each with its
// reason in error_description and in the oauth.client-auth record: a
// method other than the registered one (both ways), a certificate that
// does not chain to a trusted client CA, and one out of its validity.
func TestClientAuthRefusalReasonsAudited(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	key := newAssertionKey(t, "k1")
	signer := registerClient(t, e, tn, map[string]any{"name": "signer", "scopes": []string{identity.ScopeEventConsumer},
		"token_endpoint_auth_method": "private_key_jwt", "jwks": key.jwks()})
	secret := registerClient(t, e, tn, map[string]any{"name": "secret", "scopes": []string{identity.ScopeEventConsumer},
		"token_endpoint_auth_method": "client_secret_post"})
	e.ClientProfile(tn, map[string]any{"name": "robots"})
	robot := e.RegisterClient("robot", e.RegistrationToken(tn, "robots", 1, 3600))
	leaf := mustParseCert(t, robot.TLSCertificate.Certificate[0])
	mtls := registerClient(t, e, tn, map[string]any{"name": "mtls", "scopes": []string{identity.ScopeEventConsumer},
		"token_endpoint_auth_method": "tls_client_auth", "tls_client_auth_subject_dn": subjectDN(leaf)})
	// A certificate of the same subject that no trusted CA issued.
	selfKey := latchkeytest.MustECKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: leaf.Subject, NotBefore: e.Clock.Now().Add(-time.Hour), NotAfter: e.Clock.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &selfKey.PublicKey, selfKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := e.TLSServer(httpapi.Defaults())
	iss := "https://latchkey.test"
	cc := "grant_type=client_credentials&client_id="
	for _, tt := range []struct {
		name   string
		client map[string]any
		c      *http.Client
		form   string
		reason string
		later  time.Duration
	}{
		{"a secret from a private_key_jwt client", signer, nil, cc + signer["client_id"].(string) + "&client_secret=s3cret", "authenticates with private_key_jwt", 0},
		{"an assertion from a secret client", secret, nil, assertionForm("client_credentials", key.assertion(nil, assertionClaims(secret["client_id"].(string), iss, e.Clock.Now()))) +
			"&client_id=" + secret["client_id"].(string), "authenticates with client_secret_post", 0},
		{"an untrusted certificate", mtls, latchkeytest.HTTPSClient(srv, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: selfKey}), cc + mtls["client_id"].(string),
			"does not chain to a trusted client CA", 0},
		{"an expired certificate", mtls, latchkeytest.HTTPSClient(srv, robot.TLSCertificate), cc + mtls["client_id"].(string), "expired", leaf.NotAfter.Sub(e.Clock.Now()) + 24*time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.Clock.Advance(tt.later)
			var r latchkeytest.Response
			if tt.c != nil {
				r = e.DoWith(tt.c, srv.URL, "POST", "/oauth/v1/token", tt.form, formCT)
			} else {
				r = e.Do("POST", "/oauth/v1/token", tt.form, formCT)
			}
			if r.Status != 400 || r.JSON()["error"] != "invalid_client" || !strings.Contains(r.JSON()["error_description"].(string), tt.reason) {
				t.Fatalf("%d %s, want 400 invalid_client naming %q", r.Status, r.Body, tt.reason)
			}
			rec := lastAuditWhere(t, e, tn.ID, identity.ActionClientAuth)
			if rec.Status != audit.StatusFailed || rec.Meta["client_id"] != tt.client["client_id"] || !strings.Contains(rec.Meta["reason"].(string), tt.reason) {
				t.Errorf("audit %+v, want the refusal with its reason", rec)
			}
		})
	}
}
