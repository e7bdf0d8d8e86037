package httpapi_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

// TestTokenExchange: RFC 8693 delegation as API-fapi.md has it: the
// subject is kept and act names the requester (or the actor token's
// holder), a prior act nests, audience and scope only narrow, no refresh
// token, and revoking a token revokes what was exchanged from it; each
// refusal with its RFC code.
func TestTokenExchange(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	const api = "https://api.example"
	web := registerClient(t, e, tn, map[string]any{"name": "web", "scopes": []string{"openid", "event:event:consumer", "event:event:producer"},
		"grant_types": []string{"authorization_code", identity.GrantTokenExchange}, "redirect_uris": []string{"https://app.example/cb"},
		"token_endpoint_auth_method": "client_secret_post", "resources": []string{api}})
	svc := registerClient(t, e, tn, map[string]any{"name": "svc", "scopes": []string{"event:event:consumer", "audit:export"},
		"grant_types": []string{identity.GrantTokenExchange, "client_credentials"}, "token_endpoint_auth_method": "client_secret_post",
		"token_exchange_subject_audiences": []string{api}, "resources": []string{"https://billing.example"}})
	code, verifier := codeFor(t, e, web["client_id"].(string), url.Values{"scope": {"openid event:event:consumer event:event:producer"}})
	r := e.Do("POST", "/oauth/v1/token", url.Values{"grant_type": {"authorization_code"}, "client_id": {web["client_id"].(string)}, "client_secret": {web["client_secret"].(string)},
		"code": {code}, "redirect_uri": {"https://app.example/cb"}, "code_verifier": {verifier}}.Encode(), formCT)
	if r.Status != 200 {
		t.Fatalf("code exchange: %d %s", r.Status, r.Body)
	}
	idToken, userToken := r.JSON()["id_token"].(string), r.JSON()["access_token"].(string)
	user := latchkeytest.UnverifiedClaims(t, userToken)["sub"]
	exchange := func(cl map[string]any, extra url.Values) latchkeytest.Response {
		form := url.Values{"grant_type": {identity.GrantTokenExchange}, "client_id": {cl["client_id"].(string)}, "client_secret": {cl["client_secret"].(string)}}
		for k, v := range extra {
			form[k] = v
		}
		return e.Do("POST", "/oauth/v1/token", form.Encode(), formCT)
	}
	subject := func(tok string) url.Values {
		return url.Values{"subject_token": {tok}, "subject_token_type": {identity.TokenTypeAccessToken}}
	}
	// A token of web for the API: svc may exchange it (its audience).
	r = exchange(web, url.Values{"subject_token": {userToken}, "subject_token_type": {identity.TokenTypeAccessToken}, "resource": {api}})
	if r.Status != 200 {
		t.Fatalf("web exchanges its own token for the API: %d %s", r.Status, r.Body)
	}
	forAPI := r.JSON()["access_token"].(string)
	r = exchange(svc, subject(forAPI))
	if r.Status != 200 {
		t.Fatalf("svc exchanges a token for its audience: %d %s", r.Status, r.Body)
	}
	body := r.JSON()
	if body["refresh_token"] != nil || body["issued_token_type"] != identity.TokenTypeAccessToken || body["token_type"] != "Bearer" ||
		body["scope"] != "event:event:consumer" || body["expires_in"].(float64) > 3600 {
		t.Errorf("answer: %v", body)
	}
	child := body["access_token"].(string)
	claims := latchkeytest.UnverifiedClaims(t, child)
	wantAct := map[string]any{"sub": svc["client_id"], "act": map[string]any{"sub": web["client_id"]}}
	if claims["sub"] != user || claims["client_id"] != svc["client_id"] || cmp.Diff(wantAct, claims["act"]) != "" {
		t.Errorf("claims %v, want sub the user and act %v", claims, wantAct)
	}
	// An actor token names the actor; the prior act nests under it.
	actor := e.AccessToken(svc["client_id"].(string), svc["client_secret"].(string))
	r = exchange(svc, with(with(subject(forAPI), "actor_token", actor), "actor_token_type", identity.TokenTypeAccessToken))
	if r.Status != 200 {
		t.Fatalf("with an actor token: %d %s", r.Status, r.Body)
	}
	wantAct = map[string]any{"sub": svc["client_id"], "client_id": svc["client_id"], "act": map[string]any{"sub": web["client_id"]}}
	if d := cmp.Diff(wantAct, latchkeytest.UnverifiedClaims(t, r.JSON()["access_token"].(string))["act"]); d != "" {
		t.Errorf("act with an actor token (-want +got):\n%s", d)
	}
	for _, tt := range []struct {
		name   string
		cl     map[string]any
		params url.Values
		code   string
	}{
		{"a scope outside the subject's", svc, with(subject(forAPI), "scope", "audit:export"), "invalid_scope"},
		{"openid", web, with(subject(userToken), "scope", "openid"), "invalid_scope"},
		{"an unregistered audience", svc, with(subject(forAPI), "audience", "https://evil.example"), "invalid_target"},
		{"a token not for the client", svc, subject(userToken), "invalid_request"},
		{"another requested type", svc, with(subject(forAPI), "requested_token_type", "urn:ietf:params:oauth:token-type:refresh_token"), "invalid_request"},
		{"a SAML subject", svc, url.Values{"subject_token": {"x"}, "subject_token_type": {"urn:ietf:params:oauth:token-type:saml2"}}, "invalid_request"},
		{"no subject", svc, url.Values{}, "invalid_request"},
		{"a garbage subject", svc, subject("a.b.c"), "invalid_request"},
		{"an actor token of another client", svc, with(with(subject(forAPI), "actor_token", userToken), "actor_token_type", identity.TokenTypeAccessToken), "invalid_request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := exchange(tt.cl, tt.params); r.Status != 400 || r.JSON()["error"] != tt.code {
				t.Errorf("%d %s, want 400 %s", r.Status, r.Body, tt.code)
			}
		})
	}
	t.Run("unauthorized_client", func(t *testing.T) {
		id, secret := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
		r := e.Do("POST", "/oauth/v1/token", url.Values{"grant_type": {identity.GrantTokenExchange}, "client_id": {id}, "client_secret": {secret},
			"subject_token": {forAPI}, "subject_token_type": {identity.TokenTypeAccessToken}}.Encode(), formCT)
		if r.Status != 400 || r.JSON()["error"] != "unauthorized_client" {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("ID token subject", func(t *testing.T) {
		id := url.Values{"subject_token": {idToken}, "subject_token_type": {identity.TokenTypeIDToken}}
		if r := exchange(web, id); r.Status != 400 || r.JSON()["error"] != "invalid_scope" {
			t.Errorf("without scope: %d %s", r.Status, r.Body)
		}
		if r := exchange(web, with(id, "scope", "event:event:producer")); r.Status != 200 || latchkeytest.UnverifiedClaims(t, r.JSON()["access_token"].(string))["sub"] != user {
			t.Errorf("with scope: %d %s", r.Status, r.Body)
		}
		if r := exchange(svc, with(id, "scope", "event:event:consumer")); r.Status != 400 || r.JSON()["error"] != "invalid_request" {
			t.Errorf("another client's ID token: %d %s", r.Status, r.Body)
		}
	})
	t.Run("DPoP", func(t *testing.T) {
		k := latchkeytest.NewDPoPKey(t, "ES256")
		form := url.Values{"grant_type": {identity.GrantTokenExchange}, "client_id": {svc["client_id"].(string)}, "client_secret": {svc["client_secret"].(string)},
			"subject_token": {forAPI}, "subject_token_type": {identity.TokenTypeAccessToken}}
		r := e.Do("POST", "/oauth/v1/token", form.Encode(), formCT, "DPoP: "+k.Proof("POST", e.Server.URL+"/oauth/v1/token", "", e.Clock.Now()))
		if r.Status != 200 || r.JSON()["token_type"] != "DPoP" {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("revocation cascades", func(t *testing.T) {
		// child was issued to svc: svc may exchange it again.
		gc := exchange(svc, subject(child)).JSON()["access_token"]
		if gc == nil {
			t.Fatal("svc could not exchange its own exchanged token")
		}
		if act := latchkeytest.UnverifiedClaims(t, gc.(string))["act"].(map[string]any); act["act"] == nil || act["act"].(map[string]any)["act"] == nil {
			t.Errorf("act does not nest twice: %v", act)
		}
		if r := e.Do("POST", "/oauth/v1/revoke", url.Values{"client_id": {web["client_id"].(string)}, "client_secret": {web["client_secret"].(string)}, "token": {forAPI}}.Encode(), formCT); r.Status != 200 {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
		for name, tok := range map[string]string{"child": child, "grandchild": gc.(string)} {
			in := e.Do("POST", "/oauth/v1/introspect", url.Values{"client_id": {svc["client_id"].(string)}, "client_secret": {svc["client_secret"].(string)}, "token": {tok}}.Encode(), formCT)
			if in.JSON()["active"] != false {
				t.Errorf("%s after its parent's revocation: %s", name, in.Body)
			}
		}
		if r := exchange(svc, subject(forAPI)); r.Status != 400 || !strings.Contains(r.JSON()["error_description"].(string), "revoked") {
			t.Errorf("exchange of a revoked token: %d %s", r.Status, r.Body)
		}
	})
}

func with(v url.Values, k, val string) url.Values {
	out := url.Values{}
	for n, vv := range v {
		out[n] = vv
	}
	out.Set(k, val)
	return out
}
