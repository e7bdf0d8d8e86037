package main

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/serve"
	"github.com/latchkey/latchkey/latchkeytest"
)

// TestLoginWithSecondFactor: a user with a TOTP device logs in with the
// password and then a one-time code (stdin's second line with
// --password-stdin), or a recovery code; a wrong or replayed code, or no
// code at all, leaves no profile and exits 3 (2 for the missing line).
func TestLoginWithSecondFactor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := startServer(serve.Config{Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"), AdminPassword: adminPassword,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	run := func(config, stdin string, args ...string) (int, string, string) {
		env := map[string]string{"LATCHKEY_URL": srv.http, "XDG_CONFIG_HOME": filepath.Join(dir, config), "CI": "1"}
		var out, errb bytes.Buffer
		a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
		return a.run(context.Background(), args), out.String(), errb.String()
	}
	must := func(config, stdin string, args ...string) string {
		t.Helper()
		code, out, e := run(config, stdin, args...)
		if code != 0 {
			t.Fatalf("latchkey %s: exit %d\n%s%s", strings.Join(args, " "), code, out, e)
		}
		return out
	}
	must("admin", adminPassword+"\n", "login", "--name", "admin", "--password-stdin")
	must("admin", "", "tenant", "create", "Acme", "--code", "ACMEMFA001")
	const password = "alice-password-1"
	must("admin", password+"\n", "user", "create", "alice", "--tenant", "ACMEMFA001", "--password-stdin")

	// alice enrols a TOTP device through the API.
	call := func(method, path, bearer string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, srv.http+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, m)
		}
		return m
	}
	jwt, _ := call("POST", "/api/v1/auth/tokens/", "", map[string]string{"name": "alice", "password": password, "auth_domain": "ACMEMFA001"})["jwt"].(string)
	dev := call("POST", "/api/v1/me/mfa/totp", jwt, map[string]string{"friendlyName": "phone"})
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(dev["secret"].(string))
	if err != nil {
		t.Fatal(err)
	}
	confirmed := call("POST", "/api/v1/me/mfa/totp/"+dev["id"].(string)+"/confirm", jwt, map[string]string{"otp": latchkeytest.TOTP(secret, time.Now(), 6)})
	codes, _ := confirmed["recoveryCodes"].([]any)
	if len(codes) == 0 {
		t.Fatalf("no recovery codes: %v", confirmed)
	}

	login := []string{"login", "--name", "alice", "--auth-domain", "ACMEMFA001", "--password-stdin"}
	loggedIn := func(config string) bool {
		code, _, _ := run(config, "", "api", "GET", "/api/v1/me/mfa")
		return code == 0
	}

	// No code on stdin: a usage error, no profile.
	if code, _, e := run("none", password+"\n", login...); code != exitUsage || !strings.Contains(e, "--password-stdin") {
		t.Errorf("no code: exit %d %s", code, e)
	}
	// A wrong code: 401 MFA_FAILED, exit 3.
	if code, _, e := run("wrong", password+"\n000000\n", login...); code != exitAuth || loggedIn("wrong") {
		t.Errorf("wrong code: exit %d %s", code, e)
	}
	// The next step's code (the confirmation spent this one's).
	otp := latchkeytest.TOTP(secret, time.Now().Add(30*time.Second), 6)
	must("otp", password+"\n"+otp+"\n", login...)
	if !loggedIn("otp") {
		t.Fatal("logged in with a one-time code, but the profile does not work")
	}
	// The same code again is a replay.
	if code, _, e := run("replay", password+"\n"+otp+"\n", login...); code != exitAuth || loggedIn("replay") {
		t.Errorf("replayed code: exit %d %s", code, e)
	}
	// A recovery code, as shown (with its hyphen).
	code, _, e := run("recovery", password+"\n"+codes[0].(string)+"\n", login...)
	if code != 0 || !strings.Contains(e, "9 recovery codes left") || !loggedIn("recovery") {
		t.Errorf("recovery code: exit %d %s", code, e)
	}
}
