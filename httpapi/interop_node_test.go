package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// nodeModules installs the npm packages (name@version) the Node interop
// scripts import into a cache directory and returns it; the test is
// skipped when node or npm is not installed (API-fapi.md: run when node
// is installed).
func nodeModules(t *testing.T, pkgs ...string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "latchkey-node-interop")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	deps := map[string]string{}
	for _, p := range pkgs {
		at := len(p) - 1
		for at > 0 && p[at] != '@' {
			at--
		}
		deps[p[:at]] = p[at+1:]
	}
	pkg, _ := json.Marshal(map[string]any{"name": "latchkey-node-interop", "private": true, "type": "module", "dependencies": deps})
	old, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	if string(old) != string(pkg) || !exists(filepath.Join(dir, "node_modules")) {
		if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--silent")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install %v: %v\n%s", pkgs, err, out)
		}
	}
	return dir
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestInteropNodeFAPI2: oauth4webapi 3.8, a client library that shares
// nothing with Latchkey, runs a FAPI 2.0 client against a real server:
// discovery, private_key_jwt (PrivateKeyJwt), a signed request object
// (issueRequestObject) pushed with PAR (pushedAuthorizationRequest /
// processPushedAuthorizationResponse), the authorization response's iss
// (validateAuthResponse), the DPoP-bound code exchange
// (authorizationCodeGrantRequest / processAuthorizationCodeResponse with
// DPoP) and a DPoP protected call (protectedResourceRequest).
func TestInteropNodeFAPI2(t *testing.T) {
	dir := nodeModules(t, "oauth4webapi@3.8.8")
	p, issuer, boot := nodeServer(t, clock.System{})
	ctx := t.Context()
	root := identity.Principal{Kind: identity.KindUser, TenantID: boot.Tenant.ID, TenantCode: boot.Tenant.Code, Roles: []string{identity.RoleTenantAdmin}}
	jwks, privJSON := nodeClientKey(t)
	c, _, err := p.Identity.RegisterOAuthClient(ctx, root, boot.Tenant.ID, identity.NewOAuthClient{Name: "bank", Scopes: []string{"openid"},
		GrantTypes: []string{identity.GrantAuthorizationCode}, RedirectURIs: []string{"https://bank.example/cb"},
		ClientMetadata: identity.ClientMetadata{AuthMethod: identity.AuthPrivateKeyJWT, JWKS: jwks, DPoPBoundTokens: true, Profile: identity.ProfileFAPI2}})
	if err != nil {
		t.Fatal(err)
	}
	node := startNode(t, dir, "fapi2-oauth4webapi.mjs", "ISSUER="+issuer, "CLIENT_ID="+c.ID, "CLIENT_JWK="+privJSON)
	var pushed struct {
		RequestURI string `json:"request_uri"`
	}
	node.next(&pushed)
	// The browser: the authorization request with the request_uri, the
	// sign-in of the root administrator.
	out, err := p.OIDC.Authorize(ctx, url.Values{"client_id": {c.ID}, "request_uri": {pushed.RequestURI}}, "")
	if err != nil || out.SignIn == "" {
		t.Fatalf("authorize: %+v %v", out, err)
	}
	res, err := p.OIDC.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, BrowserID: "b", CSRFToken: p.OIDC.CSRFToken("b"),
		Username: identity.AdminName, Password: latchkeytest.AdminPassword})
	if err != nil {
		t.Fatal(err)
	}
	node.send(res.Outcome.Redirect)
	var got struct {
		TokenType string `json:"token_type"`
		UserInfo  int    `json:"userinfo"`
		Sub       string `json:"sub"`
	}
	node.next(&got)
	if got.TokenType != "dpop" && got.TokenType != "DPoP" || got.UserInfo != 200 || got.Sub == "" {
		t.Errorf("oauth4webapi: %+v (stderr %s)", got, node.stderr.String())
	}
}

// TestInteropNodeDeviceAndExchange: oauth4webapi 3.8 plays a TV and a
// service. The TV, a public client, asks for a device code
// (deviceAuthorizationRequest / processDeviceAuthorizationResponse) and
// polls with DPoP (deviceCodeGrantRequest / processDeviceCodeResponse):
// authorization_pending while the user has not decided; the user enters
// the code on the user-code page, signs in and allows; once the server's
// clock has passed the interval the next poll gets the tokens. The
// service (private_key_jwt, DPoP) exchanges the TV's access token
// (genericTokenEndpointRequest with the token-exchange grant /
// processGenericTokenEndpointResponse) for the billing API and one scope:
// act names the service, audience and scope are narrowed, a scope beyond
// the service's is invalid_scope, and a resource server built on
// validateJwtAccessToken (RFC 9068, requireDPoP) accepts each token at
// its audience and refuses the exchanged one at the issuer's.
func TestInteropNodeDeviceAndExchange(t *testing.T) {
	dir := nodeModules(t, "oauth4webapi@3.8.8")
	// The server's clock starts at the real time (the library stamps its
	// proofs and assertions with it) and is moved past the poll interval
	// by the test, so that nobody waits.
	clk := clocktest.New(time.Now())
	p, issuer, boot := nodeServer(t, clk)
	ctx := t.Context()
	root := identity.Principal{Kind: identity.KindUser, TenantID: boot.Tenant.ID, TenantCode: boot.Tenant.Code, Roles: []string{identity.RoleTenantAdmin}}
	const billing = "https://billing.example"
	tv, _, err := p.Identity.RegisterOAuthClient(ctx, root, boot.Tenant.ID, identity.NewOAuthClient{Name: "Kitchen TV", Type: identity.ClientPublic,
		Scopes: []string{"openid", "profile", identity.ScopeEventConsumer, identity.ScopeEventProducer}, GrantTypes: []string{identity.GrantDeviceCode}, IDTokenAlg: "ES256"})
	if err != nil {
		t.Fatal(err)
	}
	jwks, privJSON := nodeClientKey(t)
	svc, _, err := p.Identity.RegisterOAuthClient(ctx, root, boot.Tenant.ID, identity.NewOAuthClient{Name: "gateway",
		Scopes: []string{identity.ScopeEventConsumer, "audit:export"}, GrantTypes: []string{identity.GrantTokenExchange}, Resources: []string{billing},
		ClientMetadata: identity.ClientMetadata{AuthMethod: identity.AuthPrivateKeyJWT, JWKS: jwks, TokenExchangeSubjectAudiences: []string{issuer}}})
	if err != nil {
		t.Fatal(err)
	}
	node := startNode(t, dir, "grants-oauth4webapi.mjs", "ISSUER="+issuer, "DEVICE_CLIENT_ID="+tv.ID, "SERVICE_CLIENT_ID="+svc.ID,
		"SERVICE_JWK="+privJSON, "RESOURCE="+billing)

	var da struct {
		UserCode                string `json:"user_code"`
		VerificationURI         string `json:"verification_uri"`
		VerificationURIComplete string `json:"verification_uri_complete"`
		ExpiresIn               int    `json:"expires_in"`
		Interval                int    `json:"interval"`
		FirstPoll               string `json:"first_poll"`
	}
	node.next(&da)
	if da.VerificationURI != issuer+"/oauth/v1/device" || da.VerificationURIComplete != da.VerificationURI+"?user_code="+da.UserCode ||
		da.ExpiresIn != 600 || da.Interval != 5 || da.FirstPoll != "authorization_pending" {
		t.Fatalf("device authorization and first poll: %+v (stderr %s)", da, node.stderr.String())
	}
	// The user, in a browser without scripts: the pre-filled page, the
	// code, the tenant's sign-in, the confirmation.
	jar, _ := cookiejar.New(nil)
	b := &pageBrowser{t: t, base: issuer, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if pg := b.do("GET", da.VerificationURIComplete, nil); pg.status != 200 || submatch(userCodeValue, pg.body) != da.UserCode {
		t.Fatalf("verification_uri_complete: %d %s", pg.status, pg.body)
	}
	entered := b.enterCode(da.UserCode)
	if entered.status != http.StatusSeeOther {
		t.Fatalf("the code: %d %s", entered.status, entered.body)
	}
	back := b.signIn(entered.header.Get("Location"), identity.AdminName, latchkeytest.AdminPassword)
	if _, done := b.confirm(back, "allow"); submatch(deviceMessage, done.body) != oidc.MsgDeviceConnected {
		t.Fatalf("allow: %d %s", done.status, done.body)
	}
	clk.Advance(time.Duration(da.Interval) * time.Second)
	node.send("{}")

	type rs struct {
		OK      bool           `json:"ok"`
		Error   string         `json:"error"`
		Message string         `json:"message"`
		Claims  map[string]any `json:"claims"`
	}
	var dev struct {
		TokenType string `json:"token_type"`
		Scope     string `json:"scope"`
		IDSub     string `json:"id_sub"`
		IDAzp     string `json:"id_azp"`
		Access    rs     `json:"access"`
	}
	node.next(&dev)
	if dev.TokenType != "dpop" && dev.TokenType != "DPoP" || dev.Scope != "event:event:consumer event:event:producer openid profile" || dev.IDSub == "" ||
		!dev.Access.OK || dev.Access.Claims["sub"] != dev.IDSub || dev.Access.Claims["client_id"] != tv.ID {
		t.Fatalf("device tokens: %+v (stderr %s)", dev, node.stderr.String())
	}

	var ex struct {
		TokenType       string `json:"token_type"`
		IssuedTokenType string `json:"issued_token_type"`
		Scope           string `json:"scope"`
		ExpiresIn       int    `json:"expires_in"`
		RefreshToken    any    `json:"refresh_token"`
		AtBilling       rs     `json:"at_billing"`
		AtIssuer        rs     `json:"at_issuer"`
		Widened         string `json:"widened"`
	}
	node.next(&ex)
	if ex.TokenType != "dpop" && ex.TokenType != "DPoP" || ex.IssuedTokenType != identity.TokenTypeAccessToken || ex.Scope != identity.ScopeEventConsumer ||
		ex.ExpiresIn <= 0 || ex.ExpiresIn > 3600 || ex.RefreshToken != nil {
		t.Errorf("exchange answer: %+v", ex)
	}
	if !ex.AtBilling.OK {
		t.Fatalf("validateJwtAccessToken at the billing API: %+v (stderr %s)", ex.AtBilling, node.stderr.String())
	}
	c := ex.AtBilling.Claims
	if d := cmp.Diff(map[string]any{"sub": svc.ID}, c["act"]); d != "" {
		t.Errorf("act (-want +got):\n%s", d)
	}
	if c["sub"] != dev.IDSub || c["client_id"] != svc.ID || c["scope"] != identity.ScopeEventConsumer || cmp.Diff([]any{billing}, c["aud"]) != "" && c["aud"] != billing {
		t.Errorf("exchanged token's claims: %v", c)
	}
	if ex.AtIssuer.OK || ex.AtIssuer.Error != "OAUTH_JWT_CLAIM_COMPARISON_FAILED" {
		t.Errorf("the exchanged token at the issuer's audience: %+v, want refused for its aud", ex.AtIssuer)
	}
	if ex.Widened != "invalid_scope" {
		t.Errorf("a scope beyond the service's: %q, want invalid_scope", ex.Widened)
	}
}

// nodeServer starts a platform whose issuer is its own URL (discovery
// checks it) on clk; the libraries stamp their assertions and proofs
// with the real clock, so a fake clk must start at the real time.
func nodeServer(t *testing.T, clk clock.Clock) (*latchkey.Platform, string, identity.BootstrapResult) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	p, err := latchkey.New(t.Context(), latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey(), Issuer: issuer, Clock: clk,
		PasswordParams: latchkeytest.FastPasswords, AllowWeakPasswordHashing: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	boot, err := p.Bootstrap(t.Context(), latchkeytest.AdminPassword)
	if err != nil {
		t.Fatal(err)
	}
	opts := httpapi.Defaults()
	opts.PublicURL = issuer
	srv := &http.Server{Handler: httpapi.New(p, opts)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return p, issuer, boot
}

// nodeClientKey makes a P-256 key with kid k1: the client's JWKS and the
// private JWK the script signs with.
func nodeClientKey(t *testing.T) (jwks []byte, private string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b64 := base64.RawURLEncoding.EncodeToString
	pt, _ := key.PublicKey.Bytes()
	d, _ := key.Bytes()
	pub := map[string]any{"kty": "EC", "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:]), "kid": "k1"}
	jwks, _ = json.Marshal(map[string]any{"keys": []any{pub}})
	priv := map[string]any{"d": b64(d)}
	for k, v := range pub {
		priv[k] = v
	}
	privJSON, _ := json.Marshal(priv)
	return jwks, string(privJSON)
}

// nodeProcess is a running interop script: it prints one JSON line per
// step and reads the test's answers on its standard input.
type nodeProcess struct {
	t      *testing.T
	stdin  io.Writer
	lines  *bufio.Scanner
	stderr *safeBuffer
}

func startNode(t *testing.T, dir, script string, env ...string) *nodeProcess {
	t.Helper()
	src, err := os.ReadFile("testdata/node/" + script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, script), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "node", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	n := &nodeProcess{t: t, stdin: stdin, lines: bufio.NewScanner(stdout), stderr: &safeBuffer{}}
	cmd.Stderr = n.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	return n
}

// next reads the script's next line into v.
func (n *nodeProcess) next(v any) {
	n.t.Helper()
	if !n.lines.Scan() {
		n.t.Fatalf("node ended early: %s", n.stderr.String())
	}
	if err := json.Unmarshal(n.lines.Bytes(), v); err != nil {
		n.t.Fatalf("node said %q: %v (stderr %s)", n.lines.Text(), err, n.stderr.String())
	}
}

// send writes one line to the script.
func (n *nodeProcess) send(line string) {
	n.t.Helper()
	if _, err := io.WriteString(n.stdin, line+"\n"); err != nil {
		n.t.Fatal(err)
	}
}

// safeBuffer collects a child process's stderr while the test reads it.
type safeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
