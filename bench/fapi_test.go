package bench_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
)

// P21 (API-fapi.md): the code exchange of a FAPI 2.0 client, in-process
// on SQLite, against P12's in the same run:
//
//   - p12=token-exchange: P12's authorization_code grant (a secret, the
//     code taken, PKCE, access token, RS256 ID token, audit record);
//   - par+private_key_jwt+dpop: the same grant for a client that pushed
//     its request with a DPoP proof (so the code is bound to the key),
//     authenticates with an ES256 client assertion (signature, claims, jti
//     recorded) and sends a DPoP proof (signature, claims, replay guard):
//     a DPoP-bound access token and an ES256 ID token.
//
// Codes, assertions and proofs are made before the timer: they are the
// client's work. The target: par+private_key_jwt+dpop at most 1.5x
// p12=token-exchange. Run -count=N to interleave the two.
func BenchmarkP21FAPICodeExchange(b *testing.B) {
	ctx := context.Background()
	b.Run("p12=token-exchange", func(b *testing.B) {
		f := newCodeFlowEnv(b, newEnv)
		codes := sessionCodes(b, f, f.params("openid profile"))
		b.ResetTimer()
		cpu := startCPU()
		for _, code := range codes {
			f.exchange(b, code)
		}
		cpu.report(b)
	})
	b.Run("par+private_key_jwt+dpop", func(b *testing.B) {
		f := newCodeFlowEnv(b, newEnv)
		key := latchkeytest.NewDPoPKey(b, "ES256")
		jwk := map[string]any{"kid": "k1"}
		for k, v := range key.JWK {
			jwk[k] = v
		}
		jwks, _ := json.Marshal(map[string]any{"keys": []any{jwk}})
		c, _, err := f.e.p.Identity.RegisterOAuthClient(ctx, f.e.admin, f.e.root.ID, identity.NewOAuthClient{Name: "fapi",
			Scopes: []string{"openid", "profile"}, GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{benchRedirect}, IDTokenAlg: identity.AlgES256,
			ClientMetadata: identity.ClientMetadata{AuthMethod: identity.AuthPrivateKeyJWT, JWKS: jwks, DPoPBoundTokens: true}})
		if err != nil {
			b.Fatal(err)
		}
		dpopKey := latchkeytest.NewDPoPKey(b, "ES256")
		iss := f.e.p.Identity.Keys().Issuer()
		const parURL, tokenURL = "https://bench.example/oauth/v1/par", "https://bench.example/oauth/v1/token"
		assertion := func() *identity.ClientAuth {
			now := time.Now()
			return &identity.ClientAuth{AssertionType: identity.AssertionTypeJWT, Assertion: key.Sign(map[string]any{"alg": "ES256", "kid": "k1"},
				map[string]any{"iss": c.ID, "sub": c.ID, "aud": iss, "jti": rand.Text(), "iat": now.Unix(), "exp": now.Add(4 * time.Minute).Unix()})}
		}
		proof := func(u string) *identity.DPoPRequest {
			return &identity.DPoPRequest{Proof: dpopKey.Proof("POST", u, "", time.Now()), Method: "POST", URLs: []string{u}}
		}
		params := f.params("openid profile")
		params.Set("client_id", c.ID)
		// One sign-in; each pushed request is then answered at once.
		first := pushed(b, f, c.ID, params, assertion(), proof(parURL))
		out, err := f.e.p.OIDC.Authorize(ctx, first, "")
		if err != nil {
			b.Fatal(err)
		}
		res, err := f.e.p.OIDC.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, BrowserID: "bench", CSRFToken: f.e.p.OIDC.CSRFToken("bench"),
			Username: identity.AdminName, Password: "bench-password-1"})
		if err != nil {
			b.Fatal(err)
		}
		type call struct {
			code  string
			auth  *identity.ClientAuth
			proof *identity.DPoPRequest
		}
		calls := make([]call, b.N)
		for i := range calls {
			out, err := f.e.p.OIDC.Authorize(ctx, pushed(b, f, c.ID, params, assertion(), proof(parURL)), res.SessionID)
			if err != nil {
				b.Fatal(err)
			}
			calls[i] = call{codeOf(b, out.Redirect), assertion(), proof(tokenURL)}
		}
		b.ResetTimer()
		cpu := startCPU()
		for _, cl := range calls {
			tok, err := f.e.p.OIDC.Exchange(ctx, oidc.TokenRequest{GrantType: identity.GrantAuthorizationCode, Auth: cl.auth, DPoP: cl.proof,
				Code: cl.code, RedirectURI: benchRedirect, CodeVerifier: f.verifier})
			if err != nil || tok.TokenType != identity.TokenTypeDPoP {
				b.Fatal(tok, err)
			}
		}
		cpu.report(b)
	})
}

// sessionCodes signs in once and returns b.N codes of params, each
// answered by the browser session.
func sessionCodes(b *testing.B, f *codeFlowEnv, params map[string][]string) []string {
	ctx := context.Background()
	out, err := f.e.p.OIDC.Authorize(ctx, params, "")
	if err != nil {
		b.Fatal(err)
	}
	res, err := f.e.p.OIDC.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, BrowserID: "bench", CSRFToken: f.e.p.OIDC.CSRFToken("bench"),
		Username: identity.AdminName, Password: "bench-password-1"})
	if err != nil {
		b.Fatal(err)
	}
	codes := make([]string, b.N)
	for i := range codes {
		out, err := f.e.p.OIDC.Authorize(ctx, params, res.SessionID)
		if err != nil {
			b.Fatal(err)
		}
		codes[i] = codeOf(b, out.Redirect)
	}
	return codes
}

// pushed pushes params and returns the browser's authorization request.
func pushed(b *testing.B, f *codeFlowEnv, clientID string, params map[string][]string, auth *identity.ClientAuth, proof *identity.DPoPRequest) map[string][]string {
	p, err := f.e.p.OIDC.Push(context.Background(), oidc.PushRequest{Params: params, Auth: *auth, DPoP: proof})
	if err != nil {
		b.Fatal(err)
	}
	return map[string][]string{"client_id": {clientID}, "request_uri": {p.RequestURI}}
}

// p21Rounds is how many interleaved rounds BenchmarkP21TokenExchange
// runs: on a machine shared with other builds, rounds of the two sides
// taken one after the other see the same load.
const p21Rounds = 3

// P21's second half (TARGETS.md, API-fapi.md): the token exchange (RFC
// 8693) at most 1.5x P1, both over loopback HTTP from 64 clients, each
// round's two sides one after the other on platforms of their own:
//
//   - p1=client-credentials: P1 itself (a secret, an ES256 access token,
//     an audit record);
//   - token-exchange: a confidential client (a secret) exchanges a user's
//     access token issued to another client for the issuer's audience
//     (it is among its token_exchange_subject_audiences) for its billing
//     API and one scope: the subject's signature, claims and revocation
//     checked, act built, an ES256 access token, the token_exchange_links
//     row that makes revocation cascade, an audit record.
//
// The subject tokens are made before the timer (another client's work),
// one per request, so that no cache of verified tokens answers for them.
func BenchmarkP21TokenExchange(b *testing.B) {
	for round := 1; round <= p21Rounds; round++ {
		b.Run(fmt.Sprintf("round=%d/p1=client-credentials", round), func(b *testing.B) { benchTokenEndpoint(b, newEnv(b, identity.OWASPMinimum())) })
		b.Run(fmt.Sprintf("round=%d/token-exchange", round), benchTokenExchange)
	}
	// floor: the subject token's ES256 signature check alone, with the
	// standard library at the same parallelism: work any token exchange
	// does on top of P1's, so (p1 + floor) / p1 in cpu-ns/op bounds the
	// CPU ratio from below.
	b.Run("floor=es256-verify", func(b *testing.B) {
		key := latchkeytest.NewDPoPKey(b, "ES256")
		verify := proofSignatureVerifier(b, key)
		jwts := make([]string, b.N)
		for i := range jwts {
			jwts[i] = key.Proof("POST", "https://issuer.example/oauth/v1/token", "", time.Now())
		}
		var next atomic.Int64
		b.SetParallelism(32)
		b.ResetTimer()
		defer startCPU().report(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !verify(jwts[next.Add(1)-1]) {
					b.Error("signature refused")
				}
			}
		})
	})
}

func benchTokenExchange(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b, identity.OWASPMinimum())
	const billing = "https://billing.example"
	scopes := []string{identity.ScopeEventConsumer, identity.ScopeEventProducer}
	web, _, err := e.p.Identity.RegisterOAuthClient(ctx, e.admin, e.root.ID, identity.NewOAuthClient{Name: "web", Scopes: append([]string{"openid"}, scopes...),
		GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{benchRedirect}})
	if err != nil {
		b.Fatal(err)
	}
	iss := e.p.Identity.Keys().Issuer()
	svc, secret, err := e.p.Identity.RegisterOAuthClient(ctx, e.admin, e.root.ID, identity.NewOAuthClient{Name: "gateway", Scopes: scopes,
		GrantTypes: []string{identity.GrantTokenExchange}, Resources: []string{billing},
		ClientMetadata: identity.ClientMetadata{AuthMethod: identity.AuthClientSecretPost, TokenExchangeSubjectAudiences: []string{iss}}})
	if err != nil {
		b.Fatal(err)
	}
	user, err := e.p.Identity.Store().GetUserByName(ctx, e.root.ID, identity.AdminName)
	if err != nil {
		b.Fatal(err)
	}
	bodies := make([]string, b.N)
	for i := range bodies {
		tok, _, err := e.p.Identity.IssueUserAccess(ctx, identity.UserAccess{Client: web, Tenant: e.root, User: user, Scope: strings.Join(scopes, " "), JTI: rand.Text()})
		if err != nil {
			b.Fatal(err)
		}
		bodies[i] = url.Values{"grant_type": {identity.GrantTokenExchange}, "client_id": {svc.ID}, "client_secret": {secret},
			"subject_token": {tok}, "subject_token_type": {identity.TokenTypeAccessToken}, "resource": {billing}, "scope": {identity.ScopeEventConsumer}}.Encode()
	}
	tokenURL := e.srv.URL + "/oauth/v1/token"
	var next atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := e.client.Post(tokenURL, "application/x-www-form-urlencoded", strings.NewReader(bodies[next.Add(1)-1]))
			drain(b, resp, err)
		}
	})
	cpu.report(b)
}
