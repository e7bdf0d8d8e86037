package httpapi_test

import (
	"crypto/rand"
	"net/url"
	"strings"
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
)

// TestPushedAuthorizationRequests: RFC 9126 and RFC 9101 as API-fapi.md
// has them: a pushed request (plain or a signed request object) gets a
// one-time request_uri living 60 s; every check runs at the push with
// RFC 9126's codes; a client that must push cannot skip it; a DPoP proof
// at the push binds the code.
func TestPushedAuthorizationRequests(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	key := newAssertionKey(t, "k1")
	cl := registerClient(t, e, tn, map[string]any{"name": "fapi", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
		"redirect_uris": []string{"https://app.example/cb"}, "token_endpoint_auth_method": "private_key_jwt", "jwks": key.jwks(),
		"require_pushed_authorization_requests": true})
	id := cl["client_id"].(string)
	iss := "https://latchkey.test"
	_, challenge := pkce("par")
	base := url.Values{"response_type": {"code"}, "redirect_uri": {"https://app.example/cb"}, "scope": {"openid"}, "state": {"s1"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	push := func(params url.Values, headers ...string) latchkeytest.Response {
		form := url.Values{"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
			"client_assertion": {key.assertion(nil, assertionClaims(id, iss, e.Clock.Now()))}}
		for k, v := range params {
			form[k] = v
		}
		return e.Do("POST", "/oauth/v1/par", form.Encode(), append([]string{formCT}, headers...)...)
	}
	authorize := func(q url.Values) (oidc.Outcome, error) { return e.Platform.OIDC.Authorize(t.Context(), q, "") }
	r := push(base)
	if r.Status != 201 || r.JSON()["expires_in"] != float64(60) || !strings.HasPrefix(r.JSON()["request_uri"].(string), oidc.RequestURIPrefix) ||
		r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("push: %d %v %s", r.Status, r.Header, r.Body)
	}
	uri := r.JSON()["request_uri"].(string)
	out, err := authorize(url.Values{"client_id": {id}, "request_uri": {uri}, "scope": {"ignored"}})
	if err != nil || out.SignIn == "" {
		t.Fatalf("authorize with the request_uri: %+v %v", out, err)
	}
	out, err = authorize(url.Values{"client_id": {id}, "request_uri": {uri}})
	if err != nil || !strings.Contains(out.Redirect, "error=invalid_request_uri") || !strings.Contains(out.Redirect, "state=s1") || !strings.Contains(out.Redirect, "iss=") {
		t.Errorf("second use: %+v %v", out, err)
	}
	uri2 := push(base).JSON()["request_uri"].(string)
	if _, err := authorize(url.Values{"client_id": {"lkc_other"}, "request_uri": {uri2}}); err == nil {
		t.Error("another client_id: no error page")
	}
	uri3 := push(base).JSON()["request_uri"].(string)
	e.Clock.Advance(61 * time.Second)
	if out, err := authorize(url.Values{"client_id": {id}, "request_uri": {uri3}}); err != nil || !strings.Contains(out.Redirect, "error=invalid_request_uri") {
		t.Errorf("expired: %+v %v", out, err)
	}
	for _, bad := range []string{oidc.RequestURIPrefix + "unknown", "https://app.example/request.jwt"} {
		if _, err := authorize(url.Values{"client_id": {id}, "request_uri": {bad}}); err == nil {
			t.Errorf("request_uri %s: no error page", bad)
		}
	}
	plain := url.Values{"client_id": {id}}
	for k, v := range base {
		plain[k] = v
	}
	if out, err := authorize(plain); err != nil || !strings.Contains(out.Redirect, "error=invalid_request") {
		t.Errorf("a client that must push, not pushing: %+v %v", out, err)
	}
	with := func(k, v string) url.Values {
		q := url.Values{}
		for n, vv := range base {
			q[n] = vv
		}
		q.Set(k, v)
		return q
	}
	for _, tt := range []struct {
		name   string
		params url.Values
		code   string
	}{
		{"request_uri in the body", with("request_uri", oidc.RequestURIPrefix+"x"), "invalid_request"},
		{"unregistered redirect_uri", with("redirect_uri", "https://evil.example/cb"), "invalid_request"},
		{"unknown scope", with("scope", "openid admin"), "invalid_scope"},
		{"plain PKCE", with("code_challenge_method", "plain"), "invalid_request"},
		{"repeated parameter", url.Values{"scope": {"openid", "openid"}}, "invalid_request"},
		{"bad request object", with("request", "a.b.c"), "invalid_request_object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := push(tt.params); r.Status != 400 || r.JSON()["error"] != tt.code {
				t.Errorf("%d %s, want 400 %s", r.Status, r.Body, tt.code)
			}
		})
	}
	if r := e.Do("POST", "/oauth/v1/par", "scope="+strings.Repeat("a", 17<<10), formCT); r.Status != 400 || r.JSON()["error"] != "invalid_request" {
		t.Errorf("body over 16 KiB: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/oauth/v1/par", base.Encode()+"&client_id="+id, formCT); r.Status != 400 || r.JSON()["error"] != "invalid_client" {
		t.Errorf("no client authentication: %d %s", r.Status, r.Body)
	}

	t.Run("signed request object", func(t *testing.T) {
		now := e.Clock.Now()
		object := func(mod func(c map[string]any), header map[string]any) string {
			c := map[string]any{"iss": id, "client_id": id, "aud": iss, "exp": now.Add(5 * time.Minute).Unix(), "nbf": now.Unix(), "jti": rand.Text()}
			for k, v := range base {
				c[k] = v[0]
			}
			if mod != nil {
				mod(c)
			}
			h := map[string]any{"typ": "oauth-authz-req+jwt"}
			for k, v := range header {
				h[k] = v
			}
			return key.assertion(h, c)
		}
		r := push(url.Values{"request": {object(nil, nil)}, "client_id": {id}})
		if r.Status != 201 {
			t.Fatalf("push of a request object: %d %s", r.Status, r.Body)
		}
		if out, err := authorize(url.Values{"client_id": {id}, "request_uri": {r.JSON()["request_uri"].(string)}}); err != nil || out.SignIn == "" {
			t.Fatalf("authorize: %+v %v", out, err)
		}
		for _, tt := range []struct {
			name string
			obj  string
		}{
			{"aud another", object(func(c map[string]any) { c["aud"] = "https://other.example" }, nil)},
			{"iss another", object(func(c map[string]any) { c["iss"] = "lkc_other" }, nil)},
			{"no nbf", object(func(c map[string]any) { delete(c, "nbf") }, nil)},
			{"life over 60 minutes", object(func(c map[string]any) { c["exp"] = now.Add(61 * time.Minute).Unix() }, nil)},
			{"expired", object(func(c map[string]any) { c["exp"] = now.Add(-time.Second).Unix() }, nil)},
			{"alg none", object(nil, map[string]any{"alg": "none"})},
			{"typ another", object(nil, map[string]any{"typ": "JWT"})},
			{"unknown kid", object(nil, map[string]any{"kid": "k9"})},
			{"JWE", "a.b.c.d.e"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if r := push(url.Values{"request": {tt.obj}}); r.Status != 400 || r.JSON()["error"] != "invalid_request_object" {
					t.Errorf("push: %d %s", r.Status, r.Body)
				}
			})
		}
		// At the authorization endpoint, by value: the object's parameters
		// count; a bad object goes back to the client.
		pubID := registerClient(t, e, tn, map[string]any{"name": "jar", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
			"redirect_uris": []string{"https://app.example/cb"}, "token_endpoint_auth_method": "private_key_jwt", "jwks": key.jwks(),
			"require_signed_request_object": true})["client_id"].(string)
		id = pubID
		if out, err := authorize(url.Values{"client_id": {pubID}, "request": {object(nil, nil)}, "scope": {"ignored"}}); err != nil || out.SignIn == "" {
			t.Errorf("authorize with a request object: %+v %v", out, err)
		}
		out, err := authorize(url.Values{"client_id": {pubID}, "request": {object(func(c map[string]any) { c["aud"] = "x" }, nil)}, "redirect_uri": {"https://app.example/cb"}})
		if err != nil || !strings.Contains(out.Redirect, "error=invalid_request_object") {
			t.Errorf("authorize with a bad object: %+v %v", out, err)
		}
		plain := with("client_id", pubID)
		if out, err := authorize(plain); err != nil || !strings.Contains(out.Redirect, "error=invalid_request") {
			t.Errorf("plain parameters from a client requiring objects: %+v %v", out, err)
		}
	})
}

// TestPARBindsTheCode: a DPoP proof at the push binds the code to its
// key: the exchange without a proof, or with another key's, is
// invalid_grant and spends the code.
func TestPARBindsTheCode(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	cl := registerClient(t, e, tn, map[string]any{"name": "web", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
		"redirect_uris": []string{"https://app.example/cb"}, "token_endpoint_auth_method": "client_secret_post"})
	id, secret := cl["client_id"].(string), cl["client_secret"].(string)
	k, other := latchkeytest.NewDPoPKey(t, "ES256"), latchkeytest.NewDPoPKey(t, "ES256")
	verifier, challenge := pkce("bound")
	form := url.Values{"client_id": {id}, "client_secret": {secret}, "response_type": {"code"}, "redirect_uri": {"https://app.example/cb"},
		"scope": {"openid"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	code := func() string {
		r := e.Do("POST", "/oauth/v1/par", form.Encode(), formCT, "DPoP: "+k.Proof("POST", e.Server.URL+"/oauth/v1/par", "", e.Clock.Now()))
		if r.Status != 201 {
			t.Fatalf("push: %d %s", r.Status, r.Body)
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
		return u.Query().Get("code")
	}
	exchange := func(code string, proof *latchkeytest.DPoPKey) latchkeytest.Response {
		f := url.Values{"grant_type": {"authorization_code"}, "client_id": {id}, "client_secret": {secret}, "code": {code},
			"redirect_uri": {"https://app.example/cb"}, "code_verifier": {verifier}}
		h := []string{formCT}
		if proof != nil {
			h = append(h, "DPoP: "+proof.Proof("POST", e.Server.URL+"/oauth/v1/token", "", e.Clock.Now()))
		}
		return e.Do("POST", "/oauth/v1/token", f.Encode(), h...)
	}
	for name, p := range map[string]*latchkeytest.DPoPKey{"no proof": nil, "another key": other} {
		c := code()
		if r := exchange(c, p); r.Status != 400 || r.JSON()["error"] != "invalid_grant" {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
		if r := exchange(c, k); r.Status != 400 || r.JSON()["error"] != "invalid_grant" {
			t.Errorf("%s, then the right key: %d %s, want the code spent", name, r.Status, r.Body)
		}
	}
	if r := exchange(code(), k); r.Status != 200 || r.JSON()["token_type"] != "DPoP" {
		t.Errorf("the bound key: %d %s", r.Status, r.Body)
	}
	bad := url.Values{}
	for n, v := range form {
		bad[n] = v
	}
	bad.Set("dpop_jkt", other.Thumbprint())
	if r := e.Do("POST", "/oauth/v1/par", bad.Encode(), formCT, "DPoP: "+k.Proof("POST", e.Server.URL+"/oauth/v1/par", "", e.Clock.Now())); r.Status != 400 || r.JSON()["error"] != "invalid_dpop_proof" {
		t.Errorf("dpop_jkt of another key than the proof's: %d %s", r.Status, r.Body)
	}
}

// TestRequirePARServerWide: with Config.RequirePAR every client must push,
// and both metadata documents say so.
func TestRequirePARServerWide(t *testing.T) {
	e := latchkeytest.New(t, func(c *latchkey.Config) { c.RequirePAR = true })
	tn := e.NewTenant("Acme")
	cl := registerClient(t, e, tn, map[string]any{"name": "web", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
		"redirect_uris": []string{"https://app.example/cb"}})
	_, challenge := pkce("server-wide")
	out, err := e.Platform.OIDC.Authorize(t.Context(), url.Values{"client_id": {cl["client_id"].(string)}, "response_type": {"code"},
		"redirect_uri": {"https://app.example/cb"}, "scope": {"openid"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}, "")
	if err != nil || !strings.Contains(out.Redirect, "error=invalid_request") {
		t.Errorf("not pushed: %+v %v", out, err)
	}
	for _, doc := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		md := e.Do("GET", doc, nil).JSON()
		if md["require_pushed_authorization_requests"] != true || md["pushed_authorization_request_endpoint"] != "http://127.0.0.1:8080/oauth/v1/par" ||
			md["request_parameter_supported"] != true || md["request_uri_parameter_supported"] != false {
			t.Errorf("%s: %v", doc, md)
		}
	}
}
