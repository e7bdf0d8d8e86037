package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/latchkeytest"
)

// FuzzMFABodies drives the bodies of the multi-factor routes with
// arbitrary text: the second step of a login (mfa_otp,
// mfa_recovery_code, mfa_passkey, with a live mfa_token so that
// mutations reach the factor checks), TOTP creation and confirmation,
// and the settings' mfa policy. No body may crash a handler or answer
// 5xx, and every refusal is area A's error body whose code is the status.
func FuzzMFABodies(f *testing.F) {
	e := latchkeytest.New(f)
	admin := e.AdminToken()
	dev := e.Do("POST", "/api/v1/me/mfa/totp", map[string]any{"friendlyName": "fuzz"}, bearer(admin))
	if dev.Status != 201 {
		f.Fatalf("create TOTP: %d %s", dev.Status, dev.Body)
	}
	secret, _ := latchkeytest.TOTPSecret(dev.JSON()["secret"].(string))
	id := dev.JSON()["id"].(string)
	if r := e.Do("POST", "/api/v1/me/mfa/totp/"+id+"/confirm", map[string]any{"otp": latchkeytest.TOTP(secret, e.Clock.Now(), 6)}, bearer(admin)); r.Status != 200 {
		f.Fatalf("confirm: %d %s", r.Status, r.Body)
	}
	step := e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": latchkeytest.AdminPassword})
	tok, _ := step.JSON()["mfa_token"].(string)
	if tok == "" {
		f.Fatalf("login: %d %s", step.Status, step.Body)
	}
	for _, s := range []string{
		`{"grant_type":"mfa_otp","mfa_token":"` + tok + `","otp":"123456"}`,
		`{"grant_type":"mfa_recovery_code","mfa_token":"` + tok + `","recovery_code":"ABCDE-FGHJK"}`,
		`{"grant_type":"mfa_passkey","mfa_token":"` + tok + `","flowId":"ROOT000000.x","credential":{"id":"AA","rawId":"AA","type":"public-key","response":{}}}`,
		`{"friendlyName":"phone"}`, `{"otp":"000000"}`, `{"mfa":{"mode":"required","requiredRoles":["user"],"level":"phr","enrollmentGraceDays":91}}`,
		`{}`, `null`, `[]`, `{"otp":123456}`, `{"mfa_token":null}`,
	} {
		for i := range 4 {
			f.Add(uint8(i), s)
		}
	}
	paths := []string{"/api/v1/auth/tokens/", "/api/v1/me/mfa/totp", "/api/v1/me/mfa/totp/" + id + "/confirm", "/api/v1/admin/tenants/" + e.Root.ID + "/settings"}
	f.Fuzz(func(t *testing.T, pick uint8, body string) {
		i := int(pick) % len(paths)
		if i == 0 && !strings.Contains(body, `"mfa_`) {
			body = `{"grant_type":"mfa_otp",` + body[min(1, len(body)):] // keep the fuzzer on the second step
		}
		method := "POST"
		if i == 3 {
			method = "PATCH"
		}
		req := httptest.NewRequestWithContext(t.Context(), method, paths[i], bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		if i > 0 {
			req.Header.Set("Authorization", "Bearer "+admin)
		}
		rec := httptest.NewRecorder()
		e.Handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: %d %s", method, paths[i], body, rec.Code, rec.Body)
		}
		var m struct {
			Code int `json:"code"`
		}
		if rec.Code >= 400 && (json.Unmarshal(rec.Body.Bytes(), &m) != nil || m.Code != rec.Code) {
			t.Fatalf("%s %s with %q: %d with body %s", method, paths[i], body, rec.Code, rec.Body)
		}
	})
}
