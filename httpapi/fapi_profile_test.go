package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
)

// TestFAPI2Registration: profile fapi2 is refused, naming the field, for
// each rule of the FAPI 2.0 Security Profile broken once, and a client
// following them reads back with PAR required and ES256 ID tokens.
func TestFAPI2Registration(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	key := newAssertionKey(t, "k1")
	good := func() map[string]any {
		return map[string]any{"name": "bank", "scopes": []string{"openid", "offline_access"}, "grant_types": []string{"authorization_code", "refresh_token"},
			"redirect_uris": []string{"https://bank.example/cb"}, "token_endpoint_auth_method": "private_key_jwt", "jwks": key.jwks(),
			"dpop_bound_access_tokens": true, "profile": "fapi2"}
	}
	for _, tt := range []struct {
		name, field string
		v           any
	}{
		{"public", "type", "public"},
		{"secret method", "token_endpoint_auth_method", "client_secret_basic"},
		{"unbound tokens", "dpop_bound_access_tokens", false},
		{"http redirect", "redirect_uris", []string{"http://127.0.0.1/cb"}},
		{"PAR off", "require_pushed_authorization_requests", false},
		{"RS256 assertions", "token_endpoint_auth_signing_alg", "RS256"},
		{"RS256 ID tokens", "id_token_signed_response_alg", "RS256"},
		{"RS256 request objects", "request_object_signing_alg", "RS256"},
		{"the device grant", "grant_types", []string{"authorization_code", "urn:ietf:params:oauth:grant-type:device_code"}},
		{"token exchange", "grant_types", []string{"authorization_code", "urn:ietf:params:oauth:grant-type:token-exchange"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := good()
			b[tt.field] = tt.v
			if tt.field == "type" {
				delete(b, "token_endpoint_auth_method")
			}
			r := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/oauth-clients", b, bearer(tn.AdminToken))
			if r.Status != 400 || !strings.Contains(r.JSON()["message"].(string), "fapi2") {
				t.Errorf("%d %s, want 400 for the profile", r.Status, r.Body)
			}
		})
	}
	cl := registerClient(t, e, tn, good())
	if cl["require_pushed_authorization_requests"] != true || cl["id_token_signed_response_alg"] != "ES256" || cl["profile"] != "fapi2" {
		t.Errorf("registered: %v", cl)
	}
}

// TestFAPI2ClientWithDPoP: a FAPI 2.0 client (private_key_jwt, DPoP)
// pushes its request, signs a user in, exchanges the code with a proof,
// calls userinfo with the DPoP token and refreshes (twice with the same
// refresh token: no rotation); each per-request rule broken once is
// refused.
func TestFAPI2ClientWithDPoP(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	key := newAssertionKey(t, "k1")
	cl := registerClient(t, e, tn, map[string]any{"name": "bank", "scopes": []string{"openid", "offline_access"}, "grant_types": []string{"authorization_code", "refresh_token"},
		"redirect_uris": []string{"https://bank.example/cb"}, "token_endpoint_auth_method": "private_key_jwt", "jwks": key.jwks(),
		"dpop_bound_access_tokens": true, "profile": "fapi2"})
	id := cl["client_id"].(string)
	const iss = "https://latchkey.test"
	dpop := latchkeytest.NewDPoPKey(t, "ES256")
	auth := func(aud string) url.Values {
		return url.Values{"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
			"client_assertion": {key.assertion(nil, assertionClaims(id, aud, e.Clock.Now()))}}
	}
	post := func(path string, form url.Values, proof bool) latchkeytest.Response {
		h := []string{formCT}
		if proof {
			h = append(h, "DPoP: "+dpop.Proof("POST", e.Server.URL+path, "", e.Clock.Now()))
		}
		return e.Do("POST", path, form.Encode(), h...)
	}
	verifier, challenge := pkce("fapi2")
	par := auth(iss)
	for k, v := range map[string]string{"response_type": "code", "redirect_uri": "https://bank.example/cb", "scope": "openid offline_access",
		"code_challenge": challenge, "code_challenge_method": "S256", "state": "st"} {
		par.Set(k, v)
	}
	r := post("/oauth/v1/par", par, true)
	if r.Status != 201 {
		t.Fatalf("PAR: %d %s", r.Status, r.Body)
	}
	out, err := e.Platform.OIDC.Authorize(t.Context(), url.Values{"client_id": {id}, "request_uri": {r.JSON()["request_uri"].(string)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Platform.OIDC.SignIn(t.Context(), oidc.SignInRequest{Request: out.SignIn, BrowserID: "b", CSRFToken: e.Platform.OIDC.CSRFToken("b"),
		Username: "tadmin", Password: "tenant-password-1"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(res.Outcome.Redirect)
	if u.Query().Get("iss") != iss || u.Query().Get("state") != "st" {
		t.Errorf("redirect %s: iss and state", u)
	}
	tok := auth(iss)
	for k, v := range map[string]string{"grant_type": "authorization_code", "code": u.Query().Get("code"), "redirect_uri": "https://bank.example/cb", "code_verifier": verifier} {
		tok.Set(k, v)
	}
	r = post("/oauth/v1/token", tok, true)
	if r.Status != 200 || r.JSON()["token_type"] != "DPoP" || r.JSON()["refresh_token"] == nil {
		t.Fatalf("code exchange: %d %s", r.Status, r.Body)
	}
	if hdr, _, _ := jwtParts(t, r.JSON()["id_token"].(string)); hdr["alg"] != "ES256" {
		t.Errorf("ID token alg %v", hdr["alg"])
	}
	access, refresh := r.JSON()["access_token"].(string), r.JSON()["refresh_token"].(string)
	call := e.Do("GET", "/oauth/v1/userinfo", nil, "Authorization: DPoP "+access, "DPoP: "+dpop.Proof("GET", e.Server.URL+"/oauth/v1/userinfo", access, e.Clock.Now()))
	if call.Status != 200 {
		t.Fatalf("userinfo: %d %s", call.Status, call.Body)
	}
	for i := range 2 {
		rf := auth(iss)
		rf.Set("grant_type", "refresh_token")
		rf.Set("refresh_token", refresh)
		r := post("/oauth/v1/token", rf, true)
		if r.Status != 200 || r.JSON()["refresh_token"] != nil || r.JSON()["token_type"] != "DPoP" {
			t.Fatalf("refresh %d: %d %s, want a DPoP token and no new refresh token", i+1, r.Status, r.Body)
		}
	}
	t.Run("rules broken once", func(t *testing.T) {
		rf := auth(iss)
		rf.Set("grant_type", "refresh_token")
		rf.Set("refresh_token", refresh)
		if r := post("/oauth/v1/token", rf, false); r.Status != 400 || r.JSON()["error"] != "invalid_request" {
			t.Errorf("no DPoP proof: %d %s", r.Status, r.Body)
		}
		rf = auth(httpapi.Defaults().PublicURL + "/oauth/v1/token")
		rf.Set("grant_type", "refresh_token")
		rf.Set("refresh_token", refresh)
		if r := post("/oauth/v1/token", rf, true); r.Status != 400 || r.JSON()["error"] != "invalid_client" {
			t.Errorf("assertion aud the token endpoint: %d %s", r.Status, r.Body)
		}
		plain := url.Values{"client_id": {id}, "response_type": {"code"}, "redirect_uri": {"https://bank.example/cb"}, "scope": {"openid"},
			"code_challenge": {challenge}, "code_challenge_method": {"S256"}}
		if out, err := e.Platform.OIDC.Authorize(t.Context(), plain, ""); err != nil || !strings.Contains(out.Redirect, "error=invalid_request") {
			t.Errorf("not pushed: %+v %v", out, err)
		}
		rs := auth(iss)
		rs.Set("client_assertion", key.assertion(map[string]any{"alg": "RS256"}, assertionClaims(id, iss, e.Clock.Now())))
		rs.Set("grant_type", "refresh_token")
		rs.Set("refresh_token", refresh)
		if r := post("/oauth/v1/token", rs, true); r.Status != 400 || !strings.Contains(r.JSON()["error_description"].(string), "algorithm") {
			t.Errorf("RS256 assertion: %d %s", r.Status, r.Body)
		}
		// A request object signed RS256 (FAPI 2.0: PS256, ES256, Ed25519).
		ro := auth(iss)
		ro.Set("request", key.assertion(map[string]any{"alg": "RS256", "typ": "oauth-authz-req+jwt"}, map[string]any{"iss": id, "client_id": id, "aud": iss,
			"response_type": "code", "redirect_uri": "https://bank.example/cb", "scope": "openid", "code_challenge": challenge, "code_challenge_method": "S256",
			"nbf": e.Clock.Now().Unix(), "exp": e.Clock.Now().Add(time.Minute).Unix()}))
		ro.Set("client_id", id)
		if r := post("/oauth/v1/par", ro, true); r.Status != 400 || r.JSON()["error"] != "invalid_request_object" ||
			!strings.Contains(r.JSON()["error_description"].(string), `"RS256" is not accepted`) {
			t.Errorf("RS256 request object: %d %s", r.Status, r.Body)
		}
		// A code exchange without the DPoP proof: refused, and the code
		// (bound to the key at PAR) spent all the same (RFC 9449 §10.1).
		p := auth(iss)
		for k, v := range map[string]string{"response_type": "code", "redirect_uri": "https://bank.example/cb", "scope": "openid",
			"code_challenge": challenge, "code_challenge_method": "S256"} {
			p.Set(k, v)
		}
		pushed := post("/oauth/v1/par", p, true)
		if pushed.Status != 201 {
			t.Fatalf("PAR: %d %s", pushed.Status, pushed.Body)
		}
		out, err := e.Platform.OIDC.Authorize(t.Context(), url.Values{"client_id": {id}, "request_uri": {pushed.JSON()["request_uri"].(string)}}, res.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(out.Redirect)
		tok := auth(iss)
		for k, v := range map[string]string{"grant_type": "authorization_code", "code": u.Query().Get("code"), "redirect_uri": "https://bank.example/cb", "code_verifier": verifier} {
			tok.Set(k, v)
		}
		if r := post("/oauth/v1/token", tok, false); r.Status != 400 || r.JSON()["error"] != "invalid_request" {
			t.Errorf("code exchange without a DPoP proof: %d %s", r.Status, r.Body)
		}
		tok.Set("client_assertion", auth(iss).Get("client_assertion"))
		if r := post("/oauth/v1/token", tok, true); r.Status != 400 || r.JSON()["error"] != "invalid_grant" {
			t.Errorf("the code after an exchange without the proof: %d %s, want it spent", r.Status, r.Body)
		}
		// PKCE is required.
		p.Set("client_assertion", auth(iss).Get("client_assertion"))
		p.Del("code_challenge")
		p.Del("code_challenge_method")
		if r := post("/oauth/v1/par", p, true); r.Status != 400 || r.JSON()["error"] != "invalid_request" {
			t.Errorf("no PKCE: %d %s", r.Status, r.Body)
		}
	})
}

// TestFAPI2ClientWithMTLS: a FAPI 2.0 client authenticating with its
// certificate gets certificate-bound tokens over the TLS listener, and its
// protected call needs the same certificate.
func TestFAPI2ClientWithMTLS(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	e.ClientProfile(tn, map[string]any{"name": "robots"})
	regToken := e.RegistrationToken(tn, "robots", 2, 3600)
	robot := e.RegisterClient("bank-robot", regToken)
	leaf := mustParseCert(t, robot.TLSCertificate.Certificate[0])
	srv := e.TLSServer(httpapi.Defaults())
	withCert := latchkeytest.HTTPSClient(srv, robot.TLSCertificate)
	cl := registerClient(t, e, tn, map[string]any{"name": "bank", "scopes": []string{"openid", "offline_access"}, "grant_types": []string{"authorization_code", "refresh_token"},
		"redirect_uris": []string{"https://bank.example/cb"}, "token_endpoint_auth_method": "tls_client_auth", "tls_client_auth_subject_dn": subjectDN(leaf),
		"tls_client_certificate_bound_access_tokens": true, "profile": "fapi2"})
	id := cl["client_id"].(string)
	verifier, challenge := pkce("fapi2-mtls")
	par := url.Values{"client_id": {id}, "response_type": {"code"}, "redirect_uri": {"https://bank.example/cb"}, "scope": {"openid offline_access"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	r := e.DoWith(withCert, srv.URL, "POST", "/oauth/v1/par", par.Encode(), formCT)
	if r.Status != 201 {
		t.Fatalf("PAR: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/oauth/v1/par", par.Encode(), formCT); r.Status != 400 || r.JSON()["error"] != "invalid_client" {
		t.Errorf("PAR without the certificate: %d %s", r.Status, r.Body)
	}
	out, err := e.Platform.OIDC.Authorize(t.Context(), url.Values{"client_id": {id}, "request_uri": {r.JSON()["request_uri"].(string)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Platform.OIDC.SignIn(t.Context(), oidc.SignInRequest{Request: out.SignIn, BrowserID: "b", CSRFToken: e.Platform.OIDC.CSRFToken("b"),
		Username: "tadmin", Password: "tenant-password-1"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(res.Outcome.Redirect)
	tok := url.Values{"client_id": {id}, "grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "redirect_uri": {"https://bank.example/cb"}, "code_verifier": {verifier}}
	r = e.DoWith(withCert, srv.URL, "POST", "/oauth/v1/token", tok.Encode(), formCT)
	if r.Status != 200 {
		t.Fatalf("code exchange: %d %s", r.Status, r.Body)
	}
	access := r.JSON()["access_token"].(string)
	if cnf, _ := latchkeytest.UnverifiedClaims(t, access)["cnf"].(map[string]any); cnf["x5t#S256"] == nil {
		t.Errorf("access token not certificate-bound: %v", cnf)
	}
	for name, c := range map[string]*http.Client{"with the certificate": withCert, "without": latchkeytest.HTTPSClient(srv)} {
		want := 200
		if name == "without" {
			want = 401
		}
		if r := e.DoWith(c, srv.URL, "GET", "/oauth/v1/userinfo", nil, "Authorization: Bearer "+access); r.Status != want {
			t.Errorf("userinfo %s: %d %s", name, r.Status, r.Body)
		}
	}
	rf := url.Values{"client_id": {id}, "grant_type": {"refresh_token"}, "refresh_token": {r.JSON()["refresh_token"].(string)}}
	// Rules broken once: no certificate, or another client's (a
	// certificate of the same CA, another subject), is invalid_client
	// and spends nothing.
	other := e.RegisterClient("other-robot", regToken)
	for name, c := range map[string]*http.Client{"without a certificate": latchkeytest.HTTPSClient(srv), "with another subject's": latchkeytest.HTTPSClient(srv, other.TLSCertificate)} {
		if r := e.DoWith(c, srv.URL, "POST", "/oauth/v1/token", rf.Encode(), formCT); r.Status != 400 || r.JSON()["error"] != "invalid_client" {
			t.Errorf("refresh %s: %d %s, want invalid_client", name, r.Status, r.Body)
		}
	}
	if r := e.DoWith(withCert, srv.URL, "POST", "/oauth/v1/token", rf.Encode(), formCT); r.Status != 200 {
		t.Errorf("refresh: %d %s", r.Status, r.Body)
	}
}
