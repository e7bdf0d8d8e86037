package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

func TestAuthenticatorHTTP(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Authn")
	admin := "Authorization: Bearer " + tn.AdminToken
	settings := "/api/v1/admin/tenants/" + tn.ID + "/settings"
	u := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/users", map[string]any{"name": "dave", "password": "dave-password-1"}, admin)
	if u.Status != http.StatusCreated {
		t.Fatalf("create user: %d %s", u.Status, u.Body)
	}
	userID := u.JSON()["id"].(string)
	uid, _ := identity.ParseObjectID(userID, "")
	key := "apikey: " + e.APIKey(tn, "", identity.AreaAuthenticator)
	d := authenticatortest.New("localhost", "http://localhost:8080")
	cdj, att := d.Register("aHR0cA", authenticatortest.FormatPackedSelf)
	body := map[string]any{"type": "FIDO", "metadata": map[string]any{"friendlyName": "K", "attestation": map[string]any{
		"clientDataJson": authenticatortest.B64(cdj), "attestationObject": authenticatortest.B64(att)}}}

	t.Run("hex user id in the header or the query", func(t *testing.T) {
		hexPath := "/api/v1/tenants/" + tn.Code + "/users/" + uid.Hex() + "/authenticators"
		if r := e.Do("POST", hexPath, body, key, "Object-Id-Format: hex"); r.Status != 200 || r.JSON()["state"] != "pending" {
			t.Fatalf("import: %d %s", r.Status, r.Body)
		}
		if r := e.Do("GET", hexPath+"?Object-Id-Format=hex", nil, key); r.Status != 200 {
			t.Errorf("list by query format: %d %s", r.Status, r.Body)
		}
		// The links of a list read with the format in the header carry it,
		// so following one without the header still reads the id as hex.
		l := e.Do("GET", hexPath, nil, key, "Object-Id-Format: hex")
		links, _ := l.JSON()["links"].(map[string]any)
		self, _ := links["self"].(string)
		lu, err := url.Parse(self)
		if l.Status != 200 || err != nil || lu.Query().Get("Object-Id-Format") != "hex" {
			t.Fatalf("list with the header: %d links %v", l.Status, links)
		}
		if r := e.Do("GET", lu.RequestURI(), nil, key); r.Status != 200 {
			t.Errorf("following links.self without the header: %d %s", r.Status, r.Body)
		}
		r := e.Do("GET", hexPath, nil, key) // hex read as base64
		if r.Status != 400 || r.JSON()["detail"] != authenticator.MsgUserIDFormat {
			t.Errorf("hex id without the format: %d %s", r.Status, r.Body)
		}
		r = e.Do("GET", hexPath, nil, key, "Object-Id-Format: octal")
		if r.Status != 400 || r.JSON()["detail"] != authenticator.MsgObjectIDFormat {
			t.Errorf("bad format: %d %s", r.Status, r.Body)
		}
	})
	t.Run("links of a page past the last", func(t *testing.T) {
		p := "/api/v1/tenants/" + tn.Code + "/users/" + userID + "/authenticators?pageSize=20&pageIndex="
		for _, idx := range []string{"5", "9223372036854775807"} {
			r := e.Do("GET", p+idx, nil, key)
			links, _ := r.JSON()["links"].(map[string]any)
			if r.Status != 200 || links["next"] != nil || links["skip"] != nil || links["prev"] == nil {
				t.Errorf("pageIndex %s: %d links %v, want prev and no next or skip", idx, r.Status, links)
			}
		}
	})
	t.Run("empty path parameters", func(t *testing.T) {
		p := "/api/v1/tenants/" + tn.Code + "/users/" + userID + "/authenticators"
		for _, tt := range []struct{ method, path, msg string }{
			{"GET", "/api/v1/tenants//users/" + userID + "/authenticators", authenticator.MsgTenantCodeEmpty},
			{"POST", "/api/v1/tenants//users/" + userID + "/authenticators", authenticator.MsgTenantCodeEmpty},
			{"GET", "/api/v1/tenants/" + tn.Code + "/users//authenticators", authenticator.MsgUserIDEmpty},
			{"DELETE", "/api/v1/tenants/" + tn.Code + "/users//authenticators/abc", authenticator.MsgUserIDEmpty},
			{"GET", p + "/", authenticator.MsgAuthenticatorIDEmpty},
			{"PATCH", p + "/", authenticator.MsgAuthenticatorIDEmpty},
			{"DELETE", p + "/", authenticator.MsgAuthenticatorIDEmpty},
		} {
			r := e.Do(tt.method, tt.path, map[string]any{"state": "active"}, key)
			if r.Status != 400 || r.JSON()["detail"] != tt.msg {
				t.Errorf("%s %s: %d %s, want 400 %q", tt.method, tt.path, r.Status, r.Body, tt.msg)
			}
		}
		// The API key is still checked first.
		if r := e.Do("GET", "/api/v1/tenants//users/"+userID+"/authenticators", nil); r.Status != 401 {
			t.Errorf("empty tenant code without a key: %d %s", r.Status, r.Body)
		}
	})
	t.Run("attestation options userVerification at the top level", func(t *testing.T) {
		wa := "/api/v1/tenants/" + tn.Code + "/webauthn/attestation/options"
		r := e.Do("POST", wa, map[string]any{"username": "dave", "userVerification": "required"}, key)
		sel, _ := r.JSON()["authenticatorSelection"].(map[string]any)
		if r.Status != 200 || sel["userVerification"] != "required" {
			t.Errorf("required at the top level: %d %s", r.Status, r.Body)
		}
		for _, b := range []map[string]any{
			{"username": "dave", "userVerification": "bogus"},
			{"username": "dave", "userVerification": "required", "authenticatorSelection": map[string]any{"userVerification": "discouraged"}},
		} {
			if r := e.Do("POST", wa, b, key); r.Status != 400 || r.JSON()["status"] != "failed" {
				t.Errorf("%v: %d %s", b, r.Status, r.Body)
			}
		}
	})
	t.Run("validation body", func(t *testing.T) {
		r := e.Do("GET", "/api/v1/tenants/"+tn.Code+"/users/"+userID+"/authenticators?pageIndex=x", nil, key)
		want := map[string]any{"pageIndex": []any{"The value 'x' is not valid."}}
		if r.Status != 400 || !cmp.Equal(want, r.JSON()["errors"]) || r.JSON()["title"] != "One or more validation errors occurred." {
			t.Errorf("got %d %s", r.Status, r.Body)
		}
	})
	t.Run("401 messages", func(t *testing.T) {
		p := "/api/v1/tenants/" + tn.Code + "/users/" + userID + "/authenticators"
		for _, tt := range []struct{ header, msg string }{
			{"", "No API key found in request."},
			{"apikey: nope", "Invalid authentication credentials."},
			{"Authorization: Bearer " + e.APIKey(tn, "", identity.AreaProvisioning), "You do not have permission to access this tenant."},
		} {
			var r latchkeytest.Response
			if tt.header == "" {
				r = e.Do("GET", p, nil)
			} else {
				r = e.Do("GET", p, nil, tt.header)
			}
			if r.Status != 401 || r.JSON()["detail"] != tt.msg {
				t.Errorf("%q: %d %s", tt.header, r.Status, r.Body)
			}
		}
	})
	t.Run("attestation policy setting", func(t *testing.T) {
		r := e.Do("PATCH", settings, map[string]any{"attestationPolicy": "trusted"}, admin)
		if r.Status != 200 || r.JSON()["settings"].(map[string]any)["attestationPolicy"] != "trusted" {
			t.Fatalf("set trusted: %d %s", r.Status, r.Body)
		}
		// No metadata is loaded in this platform: trusted imports are refused.
		d2 := authenticatortest.New("localhost", "http://localhost:8080")
		c2, a2 := d2.Register("aHR0cA", authenticatortest.FormatPackedSelf)
		b2 := map[string]any{"type": "FIDO", "metadata": map[string]any{"attestation": map[string]any{
			"clientDataJson": authenticatortest.B64(c2), "attestationObject": authenticatortest.B64(a2)}}}
		if r := e.Do("POST", "/api/v1/tenants/"+tn.Code+"/users/"+userID+"/authenticators", b2, key); r.Status != 503 {
			t.Errorf("trusted without metadata: %d %s", r.Status, r.Body)
		}
		if r := e.Do("PATCH", settings, map[string]any{"attestationPolicy": "sometimes"}, admin); r.Status != 400 {
			t.Errorf("bad policy: %d %s", r.Status, r.Body)
		}
		r = e.Do("PATCH", settings, map[string]any{"attestationPolicy": "none"}, admin)
		if _, set := r.JSON()["settings"].(map[string]any)["attestationPolicy"]; r.Status != 200 || set {
			t.Errorf("back to none: %d %s", r.Status, r.Body)
		}
	})
}
