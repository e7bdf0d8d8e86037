package httpapi_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

// These tests use Latchkey the way third-party code does, with
// well-kept libraries that share nothing with the platform's own token
// code (golang-jwt signs the tokens; these verify and build with others):
// golang.org/x/oauth2's client-credentials client, go-jose as an RFC 9068
// access-token validator on the resource-server side, and go-jose as the
// DPoP proof builder on the client side.

// TestInteropClientCredentials: x/oauth2 gets tokens with both client
// authentication styles and calls a protected route; a wrong secret sent
// in the body comes back as the RFC 6749 error invalid_client, which the
// library reports as such.
func TestInteropClientCredentials(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	id, secret := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
	ctx := context.WithValue(t.Context(), oauth2.HTTPClient, e.Server.Client())
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		cfg := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: e.Server.URL + "/oauth/v1/token", AuthStyle: style}
		resp, err := cfg.Client(ctx).Get(e.Server.URL + "/events/v1/events?size=1")
		if err != nil {
			t.Fatalf("auth style %v: %v", style, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("auth style %v: protected call %d", style, resp.StatusCode)
		}
		bad := cfg
		bad.ClientSecret = "wrong"
		_, err = bad.Token(ctx)
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_client" {
			t.Errorf("auth style %v, wrong secret: %v, want a RetrieveError invalid_client", style, err)
		}
	}
}

// TestInteropRFC9068Validation validates access tokens as an RFC 9068 §4
// resource server would, with go-jose and the published JWKS and
// metadata: typ at+jwt, ES256, iss equal to the metadata's issuer, aud
// naming the resource, exp, iat, sub, client_id and jti present.
func TestInteropRFC9068Validation(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	id, secret := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
	var md struct {
		Issuer string `json:"issuer"`
	}
	json.Unmarshal(e.Do("GET", "/.well-known/oauth-authorization-server", nil).Body, &md)
	var jwks jose.JSONWebKeySet
	if err := json.Unmarshal(e.Do("GET", "/.well-known/jwks.json", nil).Body, &jwks); err != nil {
		t.Fatal(err)
	}
	raw := e.AccessToken(id, secret)
	tok, err := josejwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatalf("go-jose parse: %v", err)
	}
	h := tok.Headers[0]
	if typ := h.ExtraHeaders[jose.HeaderType]; typ != "at+jwt" && typ != "application/at+jwt" {
		t.Errorf("typ %v, want at+jwt", typ)
	}
	keys := jwks.Key(h.KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q names %d keys in the JWKS", h.KeyID, len(keys))
	}
	var std josejwt.Claims
	var extra struct {
		ClientID string `json:"client_id"`
		Scope    string `json:"scope"`
	}
	if err := tok.Claims(keys[0].Key, &std, &extra); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if err := std.ValidateWithLeeway(josejwt.Expected{Issuer: md.Issuer, AnyAudience: josejwt.Audience{md.Issuer}, Time: e.Clock.Now()}, 0); err != nil {
		t.Errorf("RFC 9068 claims: %v", err)
	}
	if std.Subject == "" || std.ID == "" || std.IssuedAt == nil || std.Expiry == nil || extra.ClientID != id {
		t.Errorf("claims %+v %+v: sub, jti, iat, exp and client_id are required", std, extra)
	}
	if err := std.ValidateWithLeeway(josejwt.Expected{Issuer: md.Issuer, AnyAudience: josejwt.Audience{"https://another.example"}, Time: e.Clock.Now()}, 0); !errors.Is(err, josejwt.ErrInvalidAudience) {
		t.Errorf("validation for another audience: %v, want ErrInvalidAudience", err)
	}
}

// TestInteropDPoPProofsFromGoJOSE: proofs built by go-jose (key embedded
// as jwk, typ dpop+jwt) get DPoP tokens and pass protected routes.
func TestInteropDPoPProofsFromGoJOSE(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	id, secret := e.OAuthClient(tn, "", identity.ScopeEventConsumer)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for _, k := range []struct {
		alg jose.SignatureAlgorithm
		key crypto.Signer
	}{{jose.ES256, ec}, {jose.EdDSA, ed}} {
		t.Run(string(k.alg), func(t *testing.T) {
			signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.key}, (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
			if err != nil {
				t.Fatal(err)
			}
			proof := func(method, url, token string) string {
				c := map[string]any{"jti": rand.Text(), "htm": method, "htu": url, "iat": e.Clock.Now().Unix()}
				if token != "" {
					c["ath"] = identity.AccessTokenHash(token)
				}
				b, _ := json.Marshal(c)
				obj, err := signer.Sign(b)
				if err != nil {
					t.Fatal(err)
				}
				s, _ := obj.CompactSerialize()
				return s
			}
			form := "grant_type=client_credentials&client_id=" + id + "&client_secret=" + secret
			r := e.Do("POST", "/oauth/v1/token", form, formCT, "DPoP: "+proof("POST", e.Server.URL+"/oauth/v1/token", ""))
			if r.Status != 200 || r.JSON()["token_type"] != "DPoP" {
				t.Fatalf("token: %d %s", r.Status, r.Body)
			}
			tok := r.JSON()["access_token"].(string)
			jwk := jose.JSONWebKey{Key: k.key.Public()}
			want, _ := jwk.Thumbprint(crypto.SHA256)
			cnf, _ := latchkeytest.UnverifiedClaims(t, tok)["cnf"].(map[string]any)
			if got, _ := identity.JWKThumbprint(mustJSON(t, jwk)); cnf["jkt"] != got || got != b64(want) {
				t.Errorf("cnf %v, go-jose thumbprint %s", cnf, b64(want))
			}
			r = e.Do("GET", "/events/v1/events", nil, "Authorization: DPoP "+tok, "DPoP: "+proof("GET", e.Server.URL+"/events/v1/events", tok))
			if r.Status != 200 {
				t.Errorf("protected call: %d %s", r.Status, r.Body)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
