package bench_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// P12: the OpenID Provider's code flow, in-process on SQLite (every write
// on disk, audit records included):
//
//   - full-flow-passkey: one complete flow: the authorization request,
//     the passkey ceremony's options, the software authenticator's
//     assertion, the sign-in (verification, browser session, code) and
//     the token exchange (code, access token, RS256 ID token);
//   - token-exchange: the authorization_code grant alone (a confidential
//     client's secret, the code taken, PKCE, access token, RS256 ID token,
//     audit record), and with offline_access (plus a refresh token);
//   - baseline=client-credentials+rs256: the target's baseline, one
//     client_credentials issuance (Identity.Grant: the same client
//     authentication, an access token, an audit record) plus one RS256
//     signature of a 32-byte digest.
//
// The target: token-exchange at most 2x the baseline.
func BenchmarkP12CodeFlow(b *testing.B) { benchCodeFlow(b, newEnv) }

// BenchmarkP12CodeFlowPostgres is P12 on PostgreSQL.
func BenchmarkP12CodeFlowPostgres(b *testing.B) { benchCodeFlow(b, newEnvPostgres) }

// codeFlowEnv is a platform with a confidential relying party and a user
// (the root admin) with a passkey.
type codeFlowEnv struct {
	e        *env
	client   identity.OAuthClient
	secret   string
	dev      *authenticatortest.Device
	verifier string
	params   func(scope string) url.Values
}

const benchRedirect = "https://app.example/cb"

func newCodeFlowEnv(b *testing.B, newE envMaker) *codeFlowEnv {
	b.Helper()
	e := newE(b, identity.OWASPMinimum())
	ctx := context.Background()
	c, secret, err := e.p.Identity.RegisterOAuthClient(ctx, e.admin, e.root.ID, identity.NewOAuthClient{Name: "web",
		Scopes: []string{"openid", "profile", "offline_access"}, GrantTypes: []string{"authorization_code", "refresh_token"}, RedirectURIs: []string{benchRedirect}})
	if err != nil {
		b.Fatal(err)
	}
	admin, err := e.p.Identity.Store().GetUserByName(ctx, e.root.ID, identity.AdminName)
	if err != nil {
		b.Fatal(err)
	}
	me := identity.Principal{Kind: identity.KindUser, TenantID: e.root.ID, TenantCode: e.root.Code, UserID: admin.ID.String(), Roles: admin.Roles}
	opts, err := e.p.Authenticators.BeginPasskeyRegistration(ctx, me)
	if err != nil {
		b.Fatal(err)
	}
	rp := e.root.Settings.WebAuthn
	d := authenticatortest.New(rp.RPID, rp.Origins[0])
	d.UserHandle = []byte(opts.PublicKey.User.ID.(protocol.URLEncodedBase64))
	if _, err := e.p.Authenticators.FinishPasskeyRegistration(ctx, me, opts.FlowID, d.PasskeyRegistrationJSON(opts.PublicKey.Challenge.String()), ""); err != nil {
		b.Fatal(err)
	}
	verifier := oauth2Verifier()
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	// The RS256 key is made on first use: not in the measurement.
	if err := e.p.Identity.Keys().EnsureRSA(ctx); err != nil {
		b.Fatal(err)
	}
	return &codeFlowEnv{e: e, client: c, secret: secret, dev: d, verifier: verifier, params: func(scope string) url.Values {
		return url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {benchRedirect}, "scope": {scope},
			"state": {"s"}, "nonce": {"n"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	}}
}

func oauth2Verifier() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// codeOf reads the code of a success redirect.
func codeOf(b *testing.B, redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil || u.Query().Get("code") == "" {
		b.Fatalf("redirect %q", redirect)
	}
	return u.Query().Get("code")
}

func (f *codeFlowEnv) exchange(b *testing.B, code string) {
	if _, err := f.e.p.OIDC.Exchange(context.Background(), oidc.TokenRequest{GrantType: identity.GrantAuthorizationCode, ClientID: f.client.ID,
		ClientSecret: f.secret, Code: code, RedirectURI: benchRedirect, CodeVerifier: f.verifier}); err != nil {
		b.Fatal(err)
	}
}

func benchCodeFlow(b *testing.B, newE envMaker) {
	ctx := context.Background()
	b.Run("baseline=client-credentials+rs256", func(b *testing.B) {
		e := newE(b, identity.OWASPMinimum())
		c, secret, err := e.p.Identity.CreateOAuthClient(ctx, e.admin, e.root.ID, "bench", []string{identity.ScopeAuditExport}, identity.RoleTenantAdmin)
		if err != nil {
			b.Fatal(err)
		}
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			b.Fatal(err)
		}
		req := identity.TokenRequest{ClientID: c.ID, ClientSecret: secret}
		b.ResetTimer()
		cpu := startCPU()
		for range b.N {
			if _, err := e.p.Identity.Grant(ctx, req); err != nil {
				b.Fatal(err)
			}
			digest := sha256.Sum256([]byte(secret))
			if _, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:]); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
	})
	for _, scope := range []string{"openid profile", "openid profile offline_access"} {
		name := "token-exchange"
		if scope != "openid profile" {
			name += "+refresh"
		}
		b.Run(name, func(b *testing.B) {
			f := newCodeFlowEnv(b, newE)
			// One sign-in; its session then answers each authorization
			// at once with a code (prompt=none), outside the timer.
			out, err := f.e.p.OIDC.Authorize(ctx, f.params(scope), "")
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
				out, err := f.e.p.OIDC.Authorize(ctx, f.params(scope), res.SessionID)
				if err != nil {
					b.Fatal(err)
				}
				codes[i] = codeOf(b, out.Redirect)
			}
			b.ResetTimer()
			cpu := startCPU()
			for _, code := range codes {
				f.exchange(b, code)
			}
			cpu.report(b)
		})
	}
	b.Run("full-flow-passkey", func(b *testing.B) {
		f := newCodeFlowEnv(b, newE)
		b.ResetTimer()
		cpu := startCPU()
		for range b.N {
			out, err := f.e.p.OIDC.Authorize(ctx, f.params("openid profile"), "")
			if err != nil || out.SignIn == "" {
				b.Fatal(out, err)
			}
			opts, err := f.e.p.Authenticators.BeginPasskeyLogin(ctx, f.e.root.Code, "")
			if err != nil {
				b.Fatal(err)
			}
			res, err := f.e.p.OIDC.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, BrowserID: "bench", CSRFToken: f.e.p.OIDC.CSRFToken("bench"),
				FlowID: opts.FlowID, Credential: f.dev.PasskeyAssertionJSON(opts.PublicKey.Challenge.String())})
			if err != nil {
				b.Fatal(err)
			}
			f.exchange(b, codeOf(b, res.Outcome.Redirect))
		}
		cpu.report(b)
	})
}
