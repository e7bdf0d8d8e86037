package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/latchkeytest"
)

// FuzzPasskeyBodies drives the JSON bodies of passkey registration
// (POST /api/v1/me/passkeys), sign-in options and the passkey grant of
// POST /api/v1/auth/tokens/ with arbitrary text: no body may crash a
// handler or answer 5xx, and every refusal is area A's error body whose
// code is the status. Seeds are real bodies of a software authenticator
// (go-webauthn parses them), so mutations reach the credential parsing and
// verification, not only the JSON decoder.
func FuzzPasskeyBodies(f *testing.F) {
	e := latchkeytest.New(f)
	admin := e.AdminToken()
	d := authenticatortest.New("localhost", "http://localhost:8080")
	opts := e.Do("POST", "/api/v1/me/passkeys/options", map[string]any{}, bearer(admin))
	if opts.Status != 200 {
		f.Fatalf("options: %d %s", opts.Status, opts.Body)
	}
	pk := opts.JSON()["publicKey"].(map[string]any)
	reg, _ := json.Marshal(map[string]any{"flowId": opts.JSON()["flowId"], "credential": json.RawMessage(d.PasskeyRegistrationJSON(pk["challenge"].(string)))})
	f.Add(uint8(0), string(reg))
	signIn := e.Do("POST", "/api/v1/auth/passkeys/options", map[string]any{"auth_domain": "root"})
	login, _ := json.Marshal(map[string]any{"grant_type": "passkey", "flowId": signIn.JSON()["flowId"],
		"credential": json.RawMessage(d.PasskeyAssertionJSON(signIn.JSON()["publicKey"].(map[string]any)["challenge"].(string)))})
	f.Add(uint8(1), string(login))
	f.Add(uint8(2), `{"auth_domain":"root","name":"admin"}`)
	for _, s := range []string{`{}`, `null`, `[]`, `{"flowId":"ROOT000000.x","credential":{"id":"AA","rawId":"AA","type":"public-key","response":{}}}`, `{"credential":"str"}`} {
		for i := range 3 {
			f.Add(uint8(i), s)
		}
	}
	paths := []string{"/api/v1/me/passkeys", "/api/v1/auth/tokens/", "/api/v1/auth/passkeys/options"}
	f.Fuzz(func(t *testing.T, pick uint8, body string) {
		i := int(pick) % len(paths)
		if i == 1 && !bytes.Contains([]byte(body), []byte(`"passkey"`)) {
			body = `{"grant_type":"passkey",` + body[min(1, len(body)):] // keep the fuzzer on the passkey grant
		}
		req := httptest.NewRequestWithContext(t.Context(), "POST", paths[i], bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		if i == 0 {
			req.Header.Set("Authorization", "Bearer "+admin)
		}
		w := httptest.NewRecorder()
		e.Handler.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %q: %d %s", paths[i], body, w.Code, w.Body)
		}
		if w.Code < 300 {
			return
		}
		var eb struct {
			Code     int    `json:"code"`
			CodeDesc string `json:"codeDesc"`
			Message  string `json:"message"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil || eb.Code != w.Code || eb.CodeDesc == "" || eb.Message == "" {
			t.Fatalf("%s: refusal %d without area A's body: %s", paths[i], w.Code, w.Body)
		}
	})
}
