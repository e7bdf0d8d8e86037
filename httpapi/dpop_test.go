package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

const formCT = "Content-Type: application/x-www-form-urlencoded"

// dpopToken asks the token endpoint for a token with a DPoP proof of key.
func dpopToken(t *testing.T, e *latchkeytest.Env, id, secret string, key *latchkeytest.DPoPKey) latchkeytest.Response {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	proof := key.Proof("POST", e.Server.URL+"/oauth/v1/token", "", e.Clock.Now())
	return e.Do("POST", "/oauth/v1/token", form.Encode(), formCT, "DPoP: "+proof)
}

// TestDPoPTokensForEveryAlgorithm: a token request with a proof of each
// accepted algorithm (Ed25519 under both its names) gets token_type DPoP
// and a token bound to the proof's key, which then works with fresh proofs
// on a protected route of area F.
func TestDPoPTokensForEveryAlgorithm(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	id, secret := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
	for _, alg := range []string{"ES256", "EdDSA", "Ed25519"} {
		t.Run(alg, func(t *testing.T) {
			key := latchkeytest.NewDPoPKey(t, alg)
			r := dpopToken(t, e, id, secret, key)
			if r.Status != http.StatusOK || r.JSON()["token_type"] != "DPoP" {
				t.Fatalf("token: %d %s, want 200 with token_type DPoP", r.Status, r.Body)
			}
			tok := r.JSON()["access_token"].(string)
			cnf, _ := latchkeytest.UnverifiedClaims(t, tok)["cnf"].(map[string]any)
			if d := cmp.Diff(map[string]any{"jkt": key.Thumbprint()}, cnf); d != "" {
				t.Errorf("cnf (-want +got):\n%s", d)
			}
			const path = "/events/v1/events?size=1"
			for i := range 2 { // each request with its own proof
				proof := key.Proof("GET", e.Server.URL+"/events/v1/events", tok, e.Clock.Now())
				if r := e.Do("GET", path, nil, "Authorization: DPoP "+tok, "DPoP: "+proof); r.Status != http.StatusOK {
					t.Fatalf("request %d with a fresh proof: %d %s", i, r.Status, r.Body)
				}
			}
		})
	}
	t.Run("without a proof the token is a bearer token", func(t *testing.T) {
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
		r := e.Do("POST", "/oauth/v1/token", form.Encode(), formCT)
		if r.Status != 200 || r.JSON()["token_type"] != "Bearer" || latchkeytest.UnverifiedClaims(t, r.JSON()["access_token"].(string))["cnf"] != nil {
			t.Errorf("token without proof: %d %s, want a Bearer token without cnf", r.Status, r.Body)
		}
	})
}

// TestDPoPRefusals: each rule of RFC 9449 §4.3 and §7 that a resource
// request must pass, broken alone, is a 401 with a DPoP challenge naming
// invalid_dpop_proof (or invalid_token for a token that is not DPoP-bound),
// and the right request right after still passes.
func TestDPoPRefusals(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	id, secret := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
	key := latchkeytest.NewDPoPKey(t, "ES256")
	r := dpopToken(t, e, id, secret, key)
	if r.Status != 200 {
		t.Fatalf("token: %d %s", r.Status, r.Body)
	}
	tok := r.JSON()["access_token"].(string)
	bearerTok := e.AccessToken(id, secret)
	url := e.Server.URL + "/events/v1/events"
	now := e.Clock.Now()
	fresh := func() string { return key.Proof("GET", url, tok, now) }
	claims := func(over map[string]any) map[string]any {
		c := map[string]any{"jti": "j-" + strings.Repeat("x", 8) + time.Now().String(), "htm": "GET", "htu": url, "iat": now.Unix(), "ath": identity.AccessTokenHash(tok)}
		for k, v := range over {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	header := map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": key.JWK}
	other := latchkeytest.NewDPoPKey(t, "ES256")
	replayed := fresh()
	if r := e.Do("GET", "/events/v1/events", nil, "Authorization: DPoP "+tok, "DPoP: "+replayed); r.Status != 200 {
		t.Fatalf("first use of a proof: %d %s", r.Status, r.Body)
	}
	privJWK := key.PrivateJWK()
	tests := []struct {
		name      string
		headers   []string
		challenge string // the error of the WWW-Authenticate challenge
	}{
		{"no proof", []string{"Authorization: DPoP " + tok}, `DPoP realm="latchkey", algs="ES256 EdDSA Ed25519", error="invalid_dpop_proof"`},
		{"bound token sent as Bearer", []string{"Authorization: Bearer " + tok, "DPoP: " + fresh()}, `error="invalid_dpop_proof"`},
		{"replayed jti", []string{"Authorization: DPoP " + tok, "DPoP: " + replayed}, `error="invalid_dpop_proof"`},
		{"token stolen and replayed with another key", []string{"Authorization: DPoP " + tok, "DPoP: " + other.Proof("GET", url, tok, now)}, `error="invalid_dpop_proof"`},
		{"wrong htm", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(header, claims(map[string]any{"htm": "POST"}))}, `error="invalid_dpop_proof"`},
		{"wrong htu", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(header, claims(map[string]any{"htu": "https://elsewhere.example/events/v1/events"}))}, `error="invalid_dpop_proof"`},
		{"iat too old", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(header, claims(map[string]any{"iat": now.Add(-61 * time.Second).Unix()}))}, `error="invalid_dpop_proof"`},
		{"iat in the future", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(header, claims(map[string]any{"iat": now.Add(61 * time.Second).Unix()}))}, `error="invalid_dpop_proof"`},
		{"no jti", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(header, claims(map[string]any{"jti": nil}))}, `error="invalid_dpop_proof"`},
		{"wrong ath", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(header, claims(map[string]any{"ath": identity.AccessTokenHash(bearerTok)}))}, `error="invalid_dpop_proof"`},
		{"no ath", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(header, claims(map[string]any{"ath": nil}))}, `error="invalid_dpop_proof"`},
		{"typ not dpop+jwt", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(map[string]any{"typ": "JWT", "alg": "ES256", "jwk": key.JWK}, claims(nil))}, `error="invalid_dpop_proof"`},
		{"alg none", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(map[string]any{"typ": "dpop+jwt", "alg": "none", "jwk": key.JWK}, claims(nil))}, `error="invalid_dpop_proof"`},
		{"alg HS256", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(map[string]any{"typ": "dpop+jwt", "alg": "HS256", "jwk": key.JWK}, claims(nil))}, `error="invalid_dpop_proof"`},
		{"alg names another key type", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(map[string]any{"typ": "dpop+jwt", "alg": "EdDSA", "jwk": key.JWK}, claims(nil))}, `error="invalid_dpop_proof"`},
		{"jwk of another key", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": other.JWK}, claims(nil))}, `error="invalid_dpop_proof"`},
		{"private key in jwk", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": privJWK}, claims(nil))}, `error="invalid_dpop_proof"`},
		{"no jwk", []string{"Authorization: DPoP " + tok, "DPoP: " + key.Sign(map[string]any{"typ": "dpop+jwt", "alg": "ES256"}, claims(nil))}, `error="invalid_dpop_proof"`},
		{"garbage proof", []string{"Authorization: DPoP " + tok, "DPoP: not.a.jwt"}, `error="invalid_dpop_proof"`},
		{"bearer token sent with the DPoP scheme", []string{"Authorization: DPoP " + bearerTok, "DPoP: " + key.Proof("GET", url, bearerTok, now)}, `DPoP realm="latchkey", algs="ES256 EdDSA Ed25519", error="invalid_token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do("GET", "/events/v1/events", nil, tt.headers...)
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("status %d %s, want 401", r.Status, r.Body)

			}
			if got := r.Header.Get("WWW-Authenticate"); !strings.Contains(got, tt.challenge) {
				t.Errorf("WWW-Authenticate %q, want it to contain %q", got, tt.challenge)
			}
		})
	}
	t.Run("two DPoP headers", func(t *testing.T) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "DPoP "+tok)
		req.Header.Add("DPoP", fresh())
		req.Header.Add("DPoP", fresh())
		resp, err := e.Server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_dpop_proof"`) {
			t.Errorf("status %d %q, want 401 invalid_dpop_proof", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("a right request still passes", func(t *testing.T) {
		if r := e.Do("GET", "/events/v1/events", nil, "Authorization: DPoP "+tok, "DPoP: "+fresh()); r.Status != 200 {
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
	})
}

// TestDPoPTokenEndpointRefusals: a bad proof at the token endpoint is a
// 400 invalid_dpop_proof (RFC 9449 §5) and issues nothing.
func TestDPoPTokenEndpointRefusals(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	id, secret := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
	key := latchkeytest.NewDPoPKey(t, "Ed25519")
	tokenURL := e.Server.URL + "/oauth/v1/token"
	now := e.Clock.Now()
	used := key.Proof("POST", tokenURL, "", now)
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}.Encode()
	if r := e.Do("POST", "/oauth/v1/token", form, formCT, "DPoP: "+used); r.Status != 200 {
		t.Fatalf("first use: %d %s", r.Status, r.Body)
	}
	for _, tt := range []struct{ name, proof string }{
		{"replayed proof", used},
		{"proof for GET", key.Proof("GET", tokenURL, "", now)},
		{"proof for another URL", key.Proof("POST", e.Server.URL+"/oauth/v1/revoke", "", now)},
		{"proof with ath", key.Proof("POST", tokenURL, "some-token", now)},
		{"stale proof", key.Proof("POST", tokenURL, "", now.Add(-2*time.Minute))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do("POST", "/oauth/v1/token", form, formCT, "DPoP: "+tt.proof)
			if r.Status != 400 || r.JSON()["error"] != "invalid_dpop_proof" {
				t.Errorf("status %d %s, want 400 invalid_dpop_proof", r.Status, r.Body)
			}
		})
	}
}
