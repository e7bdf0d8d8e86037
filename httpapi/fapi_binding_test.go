package httpapi_test

import (
	"net/url"
	"testing"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
)

// codeFor signs tenant t's "tadmin" in for client id through the
// provider and returns the code of the request params (PKCE added) and
// its verifier.
func codeFor(tb testing.TB, e *latchkeytest.Env, id string, params url.Values) (code, verifier string) {
	tb.Helper()
	ctx := tb.Context()
	verifier, challenge := pkce("binding")
	q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {"https://app.example/cb"}, "scope": {"openid offline_access"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	for k, v := range params {
		q[k] = v
	}
	out, err := e.Platform.OIDC.Authorize(ctx, q, "")
	if err != nil || out.SignIn == "" {
		tb.Fatalf("authorize: %+v %v", out, err)
	}
	res, err := e.Platform.OIDC.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, BrowserID: "b", CSRFToken: e.Platform.OIDC.CSRFToken("b"),
		Username: "tadmin", Password: "tenant-password-1"})
	if err != nil {
		tb.Fatal(err)
	}
	u, _ := url.Parse(res.Outcome.Redirect)
	return u.Query().Get("code"), verifier
}

// TestSenderConstraintOnCodeAndRefresh: the code and refresh grants bind
// the access token to a DPoP proof's key (never the ID token); a client
// with dpop_bound_access_tokens gets nothing without a proof, and its
// refresh without one spends nothing.
func TestSenderConstraintOnCodeAndRefresh(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	cl := registerClient(t, e, tn, map[string]any{"name": "web", "scopes": []string{"openid", "offline_access"}, "grant_types": []string{"authorization_code", "refresh_token"},
		"redirect_uris": []string{"https://app.example/cb"}, "token_endpoint_auth_method": "client_secret_post", "dpop_bound_access_tokens": true})
	id, secret := cl["client_id"].(string), cl["client_secret"].(string)
	tokenURL := e.Server.URL + "/oauth/v1/token"
	k := latchkeytest.NewDPoPKey(t, "ES256")
	exchange := func(code, verifier string, proof bool) latchkeytest.Response {
		form := url.Values{"grant_type": {"authorization_code"}, "client_id": {id}, "client_secret": {secret}, "code": {code},
			"redirect_uri": {"https://app.example/cb"}, "code_verifier": {verifier}}
		h := []string{formCT}
		if proof {
			h = append(h, "DPoP: "+k.Proof("POST", tokenURL, "", e.Clock.Now()))
		}
		return e.Do("POST", "/oauth/v1/token", form.Encode(), h...)
	}
	code, verifier := codeFor(t, e, id, nil)
	if r := exchange(code, verifier, false); r.Status != 400 || r.JSON()["error"] != "invalid_request" {
		t.Fatalf("code exchange without a proof: %d %s", r.Status, r.Body)
	}
	code, verifier = codeFor(t, e, id, nil)
	r := exchange(code, verifier, true)
	if r.Status != 200 || r.JSON()["token_type"] != identity.TokenTypeDPoP {
		t.Fatalf("code exchange with a proof: %d %s", r.Status, r.Body)
	}
	body := r.JSON()
	if cnf, _ := latchkeytest.UnverifiedClaims(t, body["access_token"].(string))["cnf"].(map[string]any); cnf["jkt"] != k.Thumbprint() {
		t.Errorf("access token cnf %v, want the proof key's jkt", cnf)
	}
	if _, bound := latchkeytest.UnverifiedClaims(t, body["id_token"].(string))["cnf"]; bound {
		t.Error("the ID token is bound")
	}
	refresh := func(proof bool) latchkeytest.Response {
		form := url.Values{"grant_type": {"refresh_token"}, "client_id": {id}, "client_secret": {secret}, "refresh_token": {body["refresh_token"].(string)}}
		h := []string{formCT}
		if proof {
			h = append(h, "DPoP: "+k.Proof("POST", tokenURL, "", e.Clock.Now()))
		}
		return e.Do("POST", "/oauth/v1/token", form.Encode(), h...)
	}
	if r := refresh(false); r.Status != 400 || r.JSON()["error"] != "invalid_request" {
		t.Fatalf("refresh without a proof: %d %s", r.Status, r.Body)
	}
	if r := refresh(true); r.Status != 200 || r.JSON()["token_type"] != "DPoP" {
		t.Fatalf("refresh with a proof after the refused one (nothing spent): %d %s", r.Status, r.Body)
	}
}

// TestPublicClientRefreshTokenBoundToDPoPKey: a public client's refresh
// token obtained with a DPoP proof is bound to that key (RFC 9449 §5):
// presented with another key it is stolen, invalid_grant, and its grant's
// tokens are revoked; a confidential client may refresh with a new key.
func TestPublicClientRefreshTokenBoundToDPoPKey(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	tokenURL := e.Server.URL + "/oauth/v1/token"
	get := func(id, secret string, k *latchkeytest.DPoPKey) map[string]any {
		code, verifier := codeFor(t, e, id, nil)
		form := url.Values{"grant_type": {"authorization_code"}, "client_id": {id}, "code": {code}, "redirect_uri": {"https://app.example/cb"}, "code_verifier": {verifier}}
		if secret != "" {
			form.Set("client_secret", secret)
		}
		r := e.Do("POST", "/oauth/v1/token", form.Encode(), formCT, "DPoP: "+k.Proof("POST", tokenURL, "", e.Clock.Now()))
		if r.Status != 200 {
			t.Fatalf("code exchange: %d %s", r.Status, r.Body)
		}
		return r.JSON()
	}
	refresh := func(id, secret, rt string, k *latchkeytest.DPoPKey) latchkeytest.Response {
		form := url.Values{"grant_type": {"refresh_token"}, "client_id": {id}, "refresh_token": {rt}}
		if secret != "" {
			form.Set("client_secret", secret)
		}
		return e.Do("POST", "/oauth/v1/token", form.Encode(), formCT, "DPoP: "+k.Proof("POST", tokenURL, "", e.Clock.Now()))
	}
	k1, k2 := latchkeytest.NewDPoPKey(t, "ES256"), latchkeytest.NewDPoPKey(t, "ES256")
	spa := registerClient(t, e, tn, map[string]any{"name": "spa", "type": "public", "scopes": []string{"openid", "offline_access"},
		"grant_types": []string{"authorization_code", "refresh_token"}, "redirect_uris": []string{"https://app.example/cb"}})["client_id"].(string)
	first := get(spa, "", k1)
	r := refresh(spa, "", first["refresh_token"].(string), k1)
	if r.Status != 200 {
		t.Fatalf("public client, same key: %d %s", r.Status, r.Body)
	}
	second := r.JSON()
	if r := refresh(spa, "", second["refresh_token"].(string), k2); r.Status != 400 || r.JSON()["error"] != "invalid_grant" {
		t.Fatalf("public client, another key: %d %s", r.Status, r.Body)
	}
	in := e.Do("POST", "/oauth/v1/introspect", url.Values{"client_id": {spa}, "token": {second["access_token"].(string)}}.Encode(), formCT)
	if in.JSON()["active"] != false {
		t.Errorf("the grant's access token after the theft: %s", in.Body)
	}
	web := registerClient(t, e, tn, map[string]any{"name": "web", "scopes": []string{"openid", "offline_access"}, "token_endpoint_auth_method": "client_secret_post",
		"grant_types": []string{"authorization_code", "refresh_token"}, "redirect_uris": []string{"https://app.example/cb"}, "dpop_bound_access_tokens": true})
	got := get(web["client_id"].(string), web["client_secret"].(string), k1)
	if r := refresh(web["client_id"].(string), web["client_secret"].(string), got["refresh_token"].(string), k2); r.Status != 200 {
		t.Errorf("confidential client, a new key: %d %s", r.Status, r.Body)
	} else if cnf, _ := latchkeytest.UnverifiedClaims(t, r.JSON()["access_token"].(string))["cnf"].(map[string]any); cnf["jkt"] != k2.Thumbprint() {
		t.Errorf("the new access token binds to %v, want the new key", cnf)
	}
}
