package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pyjwtCheck verifies tokens given as arguments with PyJWT against a JWKS
// file, only ES256 allowed, as a client that knows only API.md would: a
// platform JWT (no aud) without an audience, an access token (prefixed
// "at:") as RFC 9068 asks, for the audience given (the metadata's
// issuer) with aud required. It prints one line per token.
const pyjwtCheck = `
import sys, json, jwt
keys = {k["kid"]: jwt.PyJWK(k).key for k in json.load(open(sys.argv[1]))["keys"]}
aud = sys.argv[2]
for tok in sys.argv[3:]:
    try:
        at = tok.startswith("at:")
        tok = tok[3:] if at else tok
        kid = jwt.get_unverified_header(tok)["kid"]
        if at:
            jwt.decode(tok, keys[kid], algorithms=["ES256"], audience=aud, options={"require": ["exp", "iat", "iss", "sub", "aud", "jti"]})
        else:
            jwt.decode(tok, keys[kid], algorithms=["ES256"], options={"require": ["exp", "iat", "iss", "sub"]})
        print("ok")
    except Exception as e:
        print("refused", type(e).__name__)
`

// TestTokensVerifyWithPyJWT checks platform JWTs and access tokens with an
// independent JWT implementation (PyJWT): access tokens for the audience
// the metadata's issuer names, as RFC 9068 §4 validates them.
func TestTokensVerifyWithPyJWT(t *testing.T) {
	py := ""
	for _, cand := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(cand); err == nil && exec.Command(p, "-c", "import jwt, cryptography").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("no python3 with PyJWT and cryptography")
	}
	s := start(t, t.TempDir(), "py-admin-password-1")
	defer s.stop()
	post := func(path, token string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", s.http+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	jwt := post("/api/v1/auth/tokens/", "", map[string]string{"name": "admin", "password": "py-admin-password-1"})["jwt"].(string)
	tenant := post("/api/v1/admin/tenants", jwt, map[string]string{"name": "Acme"})["id"].(string)
	c := post("/api/v1/admin/tenants/"+tenant+"/oauth-clients", jwt, map[string]any{"name": "c", "scopes": []string{"audit:export"}})
	resp, err := http.PostForm(s.http+"/oauth/v1/token", url.Values{"grant_type": {"client_credentials"},
		"client_id": {c["client_id"].(string)}, "client_secret": {c["client_secret"].(string)}})
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	access := tok["access_token"].(string)

	resp, err = http.Get(s.http + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	path := filepath.Join(t.TempDir(), "jwks.json")
	os.WriteFile(path, jwks, 0o600)

	tampered := access[:len(access)-4] + "AAAA"
	var md struct{ Issuer string }
	resp, err = http.Get(s.http + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	out, err := exec.Command(py, "-c", pyjwtCheck, path, md.Issuer, jwt, "at:"+access, "at:"+tampered).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	got := strings.Fields(strings.ReplaceAll(string(out), "\n", " "))
	if len(got) < 3 || got[0] != "ok" || got[1] != "ok" || got[2] != "refused" {
		t.Fatalf("PyJWT results for platform JWT, access token, tampered token = %q, want ok, ok, refused", out)
	}
}
