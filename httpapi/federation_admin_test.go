package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/internal/oidctest"
	"github.com/latchkey/latchkey/latchkeytest"
)

// TestFederationProviderAdmin covers the providers' admin routes: the
// secret never shown, each refusal naming its field, another tenant's
// provider 404, a user's JWT 403.
func TestFederationProviderAdmin(t *testing.T) {
	e := latchkeytest.New(t, func(c *latchkey.Config) { c.AllowPrivateEndpoints = true })
	a, b := e.NewTenant("Acme"), e.NewTenant("Bolt")
	idp := oidctest.New("client-a", "secret-of-client-a", e.Clock.Now)
	t.Cleanup(idp.Close)
	admin := "Authorization: Bearer " + a.AdminToken
	base := "/api/v1/admin/tenants/" + a.ID + "/identity-providers"
	good := func(over map[string]any) map[string]any {
		m := map[string]any{"id": "corp", "displayName": "Corp", "type": "oidc", "issuer": idp.Issuer(), "clientId": idp.ClientID, "clientSecret": idp.ClientSecret}
		for k, v := range over {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	r := e.Do("POST", base, good(nil), admin)
	if r.Status != http.StatusCreated || strings.Contains(string(r.Body), idp.ClientSecret) {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	p := r.JSON()
	if p["linking"] != "none" || p["provisioning"] != "none" || p["enabled"] != true || !strings.HasSuffix(p["redirectUri"].(string), "/oauth/v1/federation/"+a.Code+"/corp/callback") ||
		strings.Join(anyStrings(p["scopes"]), " ") != "openid email profile" || strings.Join(anyStrings(p["defaultRoles"]), " ") != "user" {
		t.Errorf("defaults: %v", p)
	}
	for _, c := range []struct {
		name   string
		method string
		path   string
		body   map[string]any
		status int
		field  string
	}{
		{"id taken", "POST", base, good(nil), 409, "id"},
		{"bad id", "POST", base, good(map[string]any{"id": "Corp!"}), 400, "id"},
		{"bad type", "POST", base, good(map[string]any{"id": "x", "type": "saml"}), 400, "type"},
		{"http issuer off loopback", "POST", base, good(map[string]any{"id": "x", "issuer": "http://idp.example"}), 400, "issuer"},
		{"entra common", "POST", base, good(map[string]any{"id": "x", "issuer": "https://login.microsoftonline.com/common/v2.0"}), 400, "issuer"},
		{"discovery unreachable", "POST", base, good(map[string]any{"id": "x", "issuer": idp.Issuer() + "/nothing"}), 400, "issuer"},
		{"no openid scope", "POST", base, good(map[string]any{"id": "x", "scopes": []string{"email"}}), 400, "scopes"},
		{"verifiedEmail without domains", "POST", base, good(map[string]any{"id": "x", "linking": "verifiedEmail"}), 400, "allowedDomains"},
		{"tenant-admin by default", "POST", base, good(map[string]any{"id": "x", "defaultRoles": []string{"tenant-admin"}}), 400, "defaultRoles"},
		{"no secret", "POST", base, good(map[string]any{"id": "x", "clientSecret": nil}), 400, "clientSecret"},
		{"unknown claim field", "POST", base, good(map[string]any{"id": "x", "claims": map[string]string{"roles": "groups"}}), 400, "claims"},
		{"type changed", "PATCH", base + "/corp", map[string]any{"type": "github"}, 400, "type"},
		{"unknown", "PATCH", base + "/nope", map[string]any{"displayName": "N"}, 404, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.Do(c.method, c.path, c.body, admin)
			if r.Status != c.status || c.field != "" && !strings.Contains(string(r.Body), c.field) {
				t.Errorf("%d %s, want %d naming %s", r.Status, r.Body, c.status, c.field)
			}
		})
	}
	r = e.Do("PATCH", base+"/corp", map[string]any{"displayName": "Corp SSO", "allowedDomains": []string{"Acme.Example"}, "linking": "verifiedEmail", "clientSecret": "new-secret"}, admin)
	if r.Status != 200 || r.JSON()["displayName"] != "Corp SSO" || strings.Join(anyStrings(r.JSON()["allowedDomains"]), ",") != "acme.example" || strings.Contains(string(r.Body), "new-secret") {
		t.Errorf("patch: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", base, nil, admin); r.Status != 200 || !strings.Contains(string(r.Body), `"resources":[{`) || strings.Contains(string(r.Body), "secret") {
		t.Errorf("list: %d %s", r.Status, r.Body)
	}
	other := "Authorization: Bearer " + b.AdminToken
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		if r := e.Do(m, base+"/corp", map[string]any{"displayName": "X"}, other); r.Status != 404 {
			t.Errorf("%s by another tenant's admin: %d", m, r.Status)
		}
	}
	uid := e.Do("POST", "/api/v1/admin/tenants/"+a.ID+"/users", map[string]any{"name": "u1", "password": "user-password-1"}, admin)
	if uid.Status != 201 {
		t.Fatal(uid.Status)
	}
	user := "Authorization: Bearer " + e.Login("u1", "user-password-1", a.Code)
	if r := e.Do("GET", base, nil, user); r.Status != 403 {
		t.Errorf("a user lists providers: %d", r.Status)
	}
	if r := e.Do("DELETE", base+"/corp", nil, admin); r.Status != 204 {
		t.Errorf("delete: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", base+"/corp", nil, admin); r.Status != 404 {
		t.Errorf("deleted: %d", r.Status)
	}
}
