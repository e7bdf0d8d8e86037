package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/latchkeytest"
)

// syncBuffer is a bytes.Buffer safe for the server's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// R8: secrets handed out once (passwords, client secrets, API keys) and the
// master key are never in the database file, the WAL or the logs, even at
// debug level, and are not returned again.
func TestSecretsNeverStoredOrLogged(t *testing.T) {
	dir := t.TempDir()
	logs := &syncBuffer{}
	s := startLogging(t, dir, "the-admin-password-7", slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	call := func(method, path, token string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, s.http+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(raw, &m)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		return m
	}
	jwt := call("POST", "/api/v1/auth/tokens/", "", map[string]string{"name": "admin", "password": "the-admin-password-7"})["jwt"].(string)
	tenant := call("POST", "/api/v1/admin/tenants", jwt, map[string]string{"name": "Acme"})["id"].(string)
	user := call("POST", "/api/v1/admin/tenants/"+tenant+"/users", jwt, map[string]any{"name": "bob", "password": "bobs-secret-password-9"})
	client := call("POST", "/api/v1/admin/tenants/"+tenant+"/oauth-clients", jwt, map[string]any{"name": "c", "scopes": []string{"audit:export"}})
	key := call("POST", "/api/v1/admin/tenants/"+tenant+"/api-keys", jwt, map[string]any{"name": "k", "areas": []string{"authenticator"}, "userId": user["id"]})
	// A wrong password in a login attempt is not logged either.
	req, _ := http.NewRequest("POST", s.http+"/api/v1/auth/tokens/", strings.NewReader(`{"name":"admin","password":"a-wrong-guess-5"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	// R16 (API-mfa.md): a TOTP secret and recovery codes are in their
	// creation answers only, an mfa_token in none but the 403's.
	dev := call("POST", "/api/v1/me/mfa/totp", jwt, map[string]any{})
	totpSecret := dev["secret"].(string)
	raw, _ := latchkeytest.TOTPSecret(totpSecret)
	confirmed := call("POST", "/api/v1/me/mfa/totp/"+dev["id"].(string)+"/confirm", jwt, map[string]any{"otp": latchkeytest.TOTP(raw, time.Now(), 6)})
	var codes []string
	for _, c := range confirmed["recoveryCodes"].([]any) {
		codes = append(codes, c.(string))
	}
	req, _ = http.NewRequest("POST", s.http+"/api/v1/auth/tokens/", strings.NewReader(`{"name":"admin","password":"the-admin-password-7"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var step map[string]any
	json.NewDecoder(resp.Body).Decode(&step)
	resp.Body.Close()
	mfaToken, _ := step["mfa_token"].(string)
	if mfaToken == "" {
		t.Fatalf("the admin's password step: %v", step)
	}
	call("POST", "/api/v1/auth/tokens/", "", map[string]any{"grant_type": "mfa_recovery_code", "mfa_token": mfaToken, "recovery_code": codes[0]})
	if again, _ := json.Marshal(call("GET", "/api/v1/me/mfa", jwt, nil)); bytes.Contains(again, []byte(totpSecret)) || bytes.Contains(again, []byte(codes[1])) {
		t.Errorf("GET /me/mfa shows a secret: %s", again)
	}
	s.stop()

	secrets := map[string]string{
		"admin password":      "the-admin-password-7",
		"user password":       "bobs-secret-password-9",
		"wrong password":      "a-wrong-guess-5",
		"client secret":       client["client_secret"].(string),
		"API key":             key["key"].(string),
		"JWT":                 jwt,
		"TOTP secret":         totpSecret,
		"TOTP secret's bytes": string(raw),
		"mfa_token":           mfaToken,
	}
	for i, c := range codes {
		secrets[fmt.Sprint("recovery code ", i)] = c
		secrets[fmt.Sprint("recovery code ", i, ", as typed")] = strings.ReplaceAll(c, "-", "")
	}
	master, err := os.ReadFile(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	secrets["master key"] = strings.TrimSpace(string(master))
	files, _ := filepath.Glob(filepath.Join(dir, "latchkey.db*"))
	if len(files) == 0 {
		t.Fatal("no database files found")
	}
	places := map[string][]byte{"log": logs.Bytes()}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		places[filepath.Base(f)] = b
	}
	for what, secret := range secrets {
		for where, content := range places {
			if bytes.Contains(content, []byte(secret)) {
				t.Errorf("the %s is readable in %s", what, where)
			}
		}
	}
	if len(logs.Bytes()) == 0 {
		t.Error("the server logged nothing at debug level: the check proves nothing")
	}
	if !bytes.Contains(logs.Bytes(), []byte("msg=request method=POST path=/api/v1/auth/tokens/ status=401")) {
		t.Errorf("the debug access log lacks the failed login:\n%s", logs.Bytes())
	}
}
