package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
	s.stop()

	secrets := map[string]string{
		"admin password": "the-admin-password-7",
		"user password":  "bobs-secret-password-9",
		"wrong password": "a-wrong-guess-5",
		"client secret":  client["client_secret"].(string),
		"API key":        key["key"].(string),
		"JWT":            jwt,
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
