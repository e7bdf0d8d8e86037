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
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
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
	script, err := os.ReadFile("testdata/node/fapi2-oauth4webapi.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fapi2-oauth4webapi.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	// A server whose issuer is its own URL (discovery checks it), on the
	// real clock (the library stamps its assertions and proofs with it).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	p, err := latchkey.New(t.Context(), latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey(), Issuer: issuer,
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

	ctx := t.Context()
	root := identity.Principal{Kind: identity.KindUser, TenantID: boot.Tenant.ID, TenantCode: boot.Tenant.Code, Roles: []string{identity.RoleTenantAdmin}}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b64 := base64.RawURLEncoding.EncodeToString
	pt, _ := key.PublicKey.Bytes()
	d, _ := key.Bytes()
	pub := map[string]any{"kty": "EC", "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:]), "kid": "k1"}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{pub}})
	c, _, err := p.Identity.RegisterOAuthClient(ctx, root, boot.Tenant.ID, identity.NewOAuthClient{Name: "bank", Scopes: []string{"openid"},
		GrantTypes: []string{identity.GrantAuthorizationCode}, RedirectURIs: []string{"https://bank.example/cb"},
		ClientMetadata: identity.ClientMetadata{AuthMethod: identity.AuthPrivateKeyJWT, JWKS: jwks, DPoPBoundTokens: true, Profile: identity.ProfileFAPI2}})
	if err != nil {
		t.Fatal(err)
	}
	priv := map[string]any{"d": b64(d)}
	for k, v := range pub {
		priv[k] = v
	}
	privJSON, _ := json.Marshal(priv)

	cmd := exec.CommandContext(ctx, "node", "fapi2-oauth4webapi.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ISSUER="+issuer, "CLIENT_ID="+c.ID, "CLIENT_JWK="+string(privJSON))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr safeBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(stdout)
	next := func(v any) {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("node ended early: %s", stderr.String())
		}
		if err := json.Unmarshal(lines.Bytes(), v); err != nil {
			t.Fatalf("node said %q: %v", lines.Text(), err)
		}
	}
	var pushed struct {
		RequestURI string `json:"request_uri"`
	}
	next(&pushed)
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
	stdin.Write([]byte(res.Outcome.Redirect + "\n"))
	var got struct {
		TokenType string `json:"token_type"`
		UserInfo  int    `json:"userinfo"`
		Sub       string `json:"sub"`
	}
	next(&got)
	if got.TokenType != "dpop" && got.TokenType != "DPoP" || got.UserInfo != 200 || got.Sub == "" {
		t.Errorf("oauth4webapi: %+v (stderr %s)", got, stderr.String())
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
