package httpapi_test

import (
	"net/url"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
)

// TestFAPI2PS256IDTokens: a FAPI 2.0 client registered for PS256 ID
// tokens gets them signed by an RSA-2048 key of their own (made at the
// registration, not the RS256 key), published in the JWKS with alg PS256,
// against which go-jose verifies the token; the discovery lists PS256.
func TestFAPI2PS256IDTokens(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	key := newAssertionKey(t, "k1")
	cl := registerClient(t, e, tn, map[string]any{"name": "bank", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
		"redirect_uris": []string{"https://bank.example/cb"}, "token_endpoint_auth_method": "private_key_jwt", "jwks": key.jwks(),
		"dpop_bound_access_tokens": true, "profile": "fapi2", "id_token_signed_response_alg": "PS256"})
	if cl["id_token_signed_response_alg"] != "PS256" {
		t.Fatalf("registered %v", cl)
	}
	id := cl["client_id"].(string)
	const iss = "https://latchkey.test"
	var set jose.JSONWebKeySet
	if err := jsonUnmarshal(e.Do("GET", "/.well-known/jwks.json", nil).Body, &set); err != nil {
		t.Fatal(err)
	}
	var ps256 []jose.JSONWebKey
	for _, k := range set.Keys {
		if k.Algorithm == "PS256" {
			ps256 = append(ps256, k)
		}
	}
	if len(ps256) != 1 {
		t.Fatalf("JWKS PS256 keys %+v", ps256)
	}
	for _, k := range set.Keys {
		if k.Algorithm == "RS256" && k.KeyID == ps256[0].KeyID {
			t.Error("the PS256 key is the RS256 key")
		}
	}
	if algs, _ := e.Do("GET", "/.well-known/openid-configuration", nil).JSON()["id_token_signing_alg_values_supported"].([]any); len(algs) != 3 || algs[2] != "PS256" {
		t.Errorf("id_token_signing_alg_values_supported %v", algs)
	}
	dpop := latchkeytest.NewDPoPKey(t, "ES256")
	auth := func() url.Values {
		return url.Values{"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
			"client_assertion": {key.assertion(nil, assertionClaims(id, iss, e.Clock.Now()))}}
	}
	post := func(path string, form url.Values) latchkeytest.Response {
		return e.Do("POST", path, form.Encode(), formCT, "DPoP: "+dpop.Proof("POST", e.Server.URL+path, "", e.Clock.Now()))
	}
	verifier, challenge := pkce("ps256")
	par := auth()
	for k, v := range map[string]string{"response_type": "code", "redirect_uri": "https://bank.example/cb", "scope": "openid",
		"code_challenge": challenge, "code_challenge_method": "S256", "nonce": "n1"} {
		par.Set(k, v)
	}
	r := post("/oauth/v1/par", par)
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
	tok := auth()
	for k, v := range map[string]string{"grant_type": "authorization_code", "code": u.Query().Get("code"), "redirect_uri": "https://bank.example/cb", "code_verifier": verifier} {
		tok.Set(k, v)
	}
	r = post("/oauth/v1/token", tok)
	if r.Status != 200 {
		t.Fatalf("code exchange: %d %s", r.Status, r.Body)
	}
	idt, err := jose.ParseSigned(r.JSON()["id_token"].(string), []jose.SignatureAlgorithm{jose.PS256})
	if err != nil {
		t.Fatalf("ID token not PS256: %v", err)
	}
	if h := idt.Signatures[0].Header; h.KeyID != ps256[0].KeyID {
		t.Errorf("kid %s, want the PS256 key %s", h.KeyID, ps256[0].KeyID)
	}
	payload, err := idt.Verify(ps256[0].Key)
	if err != nil {
		t.Fatalf("PS256 signature: %v", err)
	}
	var claims map[string]any
	if err := jsonUnmarshal(payload, &claims); err != nil || claims["nonce"] != "n1" || claims["iss"] != iss {
		t.Errorf("claims %v %v", claims, err)
	}
	// The provider reads its own PS256 ID tokens back (id_token_hint).
	var back oidc.IDClaims
	if err := e.Platform.Identity.Keys().ParseIDToken(r.JSON()["id_token"].(string), &back); err != nil || back.Nonce != "n1" {
		t.Errorf("ParseIDToken: %+v %v", back, err)
	}
}
