package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/serve"
)

type server struct {
	http, https string
	out         *bytes.Buffer
	stop        func()
}

func start(t *testing.T, dir, password string) server {
	t.Helper()
	return startLogging(t, dir, password, slog.New(slog.DiscardHandler))
}

// startLogging is start with the server's log going to log.
func startLogging(t *testing.T, dir, password string, log *slog.Logger) server {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan [2]string, 1)
	out := &bytes.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Config{
			Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", DataDir: dir, AdminPassword: password,
			Logger: log, Stdout: out,
			Ready: func(h, s string) { ready <- [2]string{h, s} },
		})
	}()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("server exited: %v", err)
	}
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server shutdown: %v", err)
		}
	}
	return server{http: "http://" + addrs[0], https: "https://" + addrs[1], out: out, stop: stop}
}

func postJSON(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestFirstStartGeneratesPasswordAndServes(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir, "")
	out := s.out.String()
	i := strings.Index(out, "generated password ")
	if i < 0 {
		t.Fatalf("no generated password printed:\n%s", out)
	}
	password := strings.Fields(out[i+len("generated password "):])[0]
	if !strings.Contains(out, "curl -s "+s.http+"/api/v1/auth/tokens/") {
		t.Errorf("login instructions missing:\n%s", out)
	}
	status, body := postJSON(t, s.http+"/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": password, "auth_domain": "root"})
	if status != 200 {
		t.Fatalf("login: %d %v", status, body)
	}
	verifyWithOpenSSL(t, s.http, body["jwt"].(string))

	resp, err := http.Get(s.http + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	// HTTPS listener with the self-signed certificate from the data directory.
	pemBytes, err := os.ReadFile(filepath.Join(dir, "server.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err = c.Get(s.https + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("https healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	fi, err := os.Stat(filepath.Join(dir, "master.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("master.key: %v, mode %v", err, fi.Mode())
	}
	s.stop()

	// A restart keeps the data: no new admin, the same password works, and
	// the old token still verifies (the signing key survived, sealed).
	s2 := start(t, dir, "")
	defer s2.stop()
	if strings.Contains(s2.out.String(), "generated password") {
		t.Errorf("restart generated a new password:\n%s", s2.out.String())
	}
	if status, body := postJSON(t, s2.http+"/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": password}); status != 200 {
		t.Fatalf("login after restart: %d %v", status, body)
	}
	if status, _ := postJSON(t, s2.http+"/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": "wrong-password"}); status != 401 {
		t.Errorf("wrong password: %d, want 401", status)
	}
	db, _ := os.ReadFile(filepath.Join(dir, "latchkey.db"))
	if bytes.Contains(db, []byte(password)) {
		t.Error("the admin password is readable in the database file")
	}
}

func TestAdminPasswordFromEnvironment(t *testing.T) {
	s := start(t, t.TempDir(), "from-the-env-1")
	defer s.stop()
	if strings.Contains(s.out.String(), "from-the-env-1") {
		t.Error("the password from the environment was printed")
	}
	if status, body := postJSON(t, s.http+"/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": "from-the-env-1", "auth_domain": "root"}); status != 200 {
		t.Fatalf("login: %d %v", status, body)
	}
}

// verifyWithOpenSSL checks the JWT's ES256 signature with the openssl CLI
// against the key published in the JWKS: an implementation independent of
// the one that signed it.
func verifyWithOpenSSL(t *testing.T, base, jwt string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	resp, err := http.Get(base + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	var jwks struct {
		Keys []struct{ Kid, Crv, X, Y string }
	}
	json.NewDecoder(resp.Body).Decode(&jwks)
	resp.Body.Close()
	parts := strings.Split(jwt, ".")
	hdr, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var h struct{ Alg, Kid string }
	json.Unmarshal(hdr, &h)
	if h.Alg != "ES256" {
		t.Fatalf("alg = %q", h.Alg)
	}
	var pub *ecdsa.PublicKey
	for _, k := range jwks.Keys {
		if k.Kid == h.Kid && k.Crv == "P-256" {
			x, _ := base64.RawURLEncoding.DecodeString(k.X)
			y, _ := base64.RawURLEncoding.DecodeString(k.Y)
			pub = &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		}
	}
	if pub == nil {
		t.Fatalf("kid %q not in JWKS", h.Kid)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if len(sig) != 64 {
		t.Fatalf("ES256 signature is %d bytes, want 64 (r||s)", len(sig))
	}
	asn, _ := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])})
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o600)
		return p
	}
	pubPath := write("pub.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	sigPath := write("sig.der", asn)
	msgPath := write("msg", []byte(parts[0]+"."+parts[1]))
	cmd := exec.Command("openssl", "dgst", "-sha256", "-verify", pubPath, "-signature", sigPath, msgPath)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Verified OK") {
		t.Fatalf("openssl did not verify the JWT: %v\n%s", err, out)
	}
	// And a tampered message must fail, or the check proves nothing.
	write("msg", []byte(parts[0]+"."+parts[1]+"x"))
	if out, err := exec.Command("openssl", "dgst", "-sha256", "-verify", pubPath, "-signature", sigPath, msgPath).CombinedOutput(); err == nil {
		t.Fatalf("openssl verified a tampered message: %s", out)
	}
}
