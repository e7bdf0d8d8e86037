// Package oidctest is a small but real OpenID Connect provider for tests:
// discovery, a JWKS, an authorization endpoint that signs in a configured
// user at once, and a token endpoint that checks the client's secret, the
// redirect URI and the PKCE (S256) verifier before it issues an RS256 ID
// token. Tests can make it misbehave (a wrong nonce) to see the relying
// party refuse.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Provider is a running provider; Close stops it.
type Provider struct {
	*httptest.Server
	ClientID, ClientSecret string
	Now                    func() time.Time

	mu            sync.Mutex
	key           *rsa.PrivateKey
	email         string
	emailVerified bool
	nonceOverride string
	sub           string         // SignInClaims's subject ("": "sub-" + email)
	extra         map[string]any // SignInClaims's other claims
	failNext      string         // FailNext's error code
	codes         map[string]grant
	// Exchanges counts successful code exchanges.
	Exchanges int
}

type grant struct {
	clientID, redirectURI, challenge, nonce, email, sub string
	verified                                            bool
	extra                                               map[string]any
}

// New starts a provider for one client; now is its clock (the relying
// party's, so ID tokens are fresh to it).
func New(clientID, clientSecret string, now func() time.Time) *Provider {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p := &Provider{ClientID: clientID, ClientSecret: clientSecret, Now: now, key: key, codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.Server = httptest.NewServer(mux)
	return p
}

// Issuer is the provider's issuer URL.
func (p *Provider) Issuer() string { return p.URL }

// SignIn sets the user the authorization endpoint signs in next.
func (p *Provider) SignIn(email string, verified bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.email, p.emailVerified, p.sub, p.extra = email, verified, "", nil
}

// SignInClaims sets the user the authorization endpoint signs in next by
// its subject and ID token claims (email and email_verified among them).
func (p *Provider) SignInClaims(sub string, claims map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.email, p.emailVerified, p.sub, p.extra = "", false, sub, claims
}

// FailNext makes the next authorization answer the error code instead of
// a code.
func (p *Provider) FailNext(code string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext = code
}

// WrongNonce makes later ID tokens carry nonce instead of the one asked
// for ("" restores the right one).
func (p *Provider) WrongNonce(nonce string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nonceOverride = nonce
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{
		"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token", "jwks_uri": p.URL + "/jwks",
		"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"}, "code_challenge_methods_supported": []string{"S256"},
		"scopes_supported": []string{"openid", "email", "profile"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	pub := p.key.PublicKey
	writeJSON(w, 200, map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != p.ClientID || q.Get("redirect_uri") == "" ||
		!strings.Contains(" "+q.Get("scope")+" ", " openid ") || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	code := rand.Text()
	p.codes[code] = grant{clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		nonce: q.Get("nonce"), email: p.email, verified: p.emailVerified, sub: p.sub, extra: p.extra}
	fail := p.failNext
	p.failNext = ""
	p.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	bq := back.Query()
	if fail != "" {
		bq.Set("error", fail)
	} else {
		bq.Set("code", code)
	}
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || secret != p.ClientSecret {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	g, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	nonce := g.nonce
	if p.nonceOverride != "" {
		nonce = p.nonceOverride
	}
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || r.PostForm.Get("grant_type") != "authorization_code" || g.clientID != id || g.redirectURI != r.PostForm.Get("redirect_uri") ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
		return
	}
	now := p.Now()
	claims := jwt.MapClaims{"iss": p.URL, "sub": "sub-" + g.email, "aud": p.ClientID, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"nonce": nonce, "email": g.email, "email_verified": g.verified}
	if g.sub != "" {
		delete(claims, "email")
		delete(claims, "email_verified")
		claims["sub"] = g.sub
		for k, v := range g.extra {
			claims[k] = v
		}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = "k1"
	idt, err := tok.SignedString(p.key)
	if err != nil {
		writeJSON(w, 500, map[string]string{"error": "server_error"})
		return
	}
	p.mu.Lock()
	p.Exchanges++
	p.mu.Unlock()
	writeJSON(w, 200, map[string]any{"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 300, "id_token": idt})
}
