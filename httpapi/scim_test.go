package httpapi_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

const scimJSON = "Content-Type: application/scim+json"

func scimKey(e *latchkeytest.Env, t latchkeytest.Tenant) string {
	return "Authorization: Bearer " + e.APIKey(t, "", identity.AreaSCIM)
}

func wantSCIMError(t *testing.T, r latchkeytest.Response, status int, scimType string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/scim+json" {
		t.Errorf("Content-Type %q", ct)
	}
	b := r.JSON()
	if s, _ := b["schemas"].([]any); len(s) != 1 || s[0] != "urn:ietf:params:scim:api:messages:2.0:Error" || b["status"] != strconv.Itoa(status) {
		t.Errorf("error body %s", r.Body)
	}
	if got, _ := b["scimType"].(string); got != scimType {
		t.Errorf("scimType %q, want %q: %s", got, scimType, r.Body)
	}
}

func TestSCIMCredentials(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("Acme")
	key := scimKey(e, a)
	// Discovery needs the credential too.
	for _, h := range [][]string{nil, {"Authorization: Bearer lk_nope"}, {"Authorization: Bearer not-a-jwt"}} {
		r := e.Do("GET", "/scim/v2/ServiceProviderConfig", nil, h...)
		wantSCIMError(t, r, 401, "")
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%q: WWW-Authenticate %q", h, r.Header.Get("WWW-Authenticate"))
		}
	}
	// A key of another area, a token without the scope: 403.
	wantSCIMError(t, e.Do("GET", "/scim/v2/Groups", nil, "Authorization: Bearer "+e.APIKey(a, "", identity.AreaAuthenticator)), 403, "")
	id, secret := e.OAuthClient(a, "", identity.ScopeEventConsumer)
	wantSCIMError(t, e.Do("GET", "/scim/v2/Groups", nil, bearer(e.AccessToken(id, secret))), 403, "")
	// The key of area scim and a token with scim:provisioning.
	if r := e.Do("GET", "/scim/v2/ServiceProviderConfig", nil, key); r.Status != 200 || r.JSON()["patch"].(map[string]any)["supported"] != true ||
		r.Header.Get("Content-Type") != "application/scim+json" {
		t.Errorf("ServiceProviderConfig: %d %s", r.Status, r.Body)
	}
	id, secret = e.OAuthClient(a, "", identity.ScopeSCIM)
	if r := e.Do("GET", "/scim/v2/Groups?count=2&startIndex=1", nil, bearer(e.AccessToken(id, secret))); r.Status != 200 || r.JSON()["totalResults"] != 0.0 {
		t.Errorf("Groups with an access token: %d %s", r.Status, r.Body)
	}
	// Bulk and Me are not implemented.
	wantSCIMError(t, e.Do("POST", "/scim/v2/Bulk", map[string]any{}, key), 501, "")
	wantSCIMError(t, e.Do("GET", "/scim/v2/Me", nil, key), 501, "")
}

func TestSCIMGroupsOverHTTP(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("Acme")
	key := scimKey(e, a)
	admin := bearer(a.AdminToken)
	u := e.Do("POST", "/api/v1/admin/tenants/"+a.ID+"/users", map[string]any{"name": "ann", "password": "ann-password"}, admin)
	if u.Status != 201 {
		t.Fatalf("user: %d %s", u.Status, u.Body)
	}
	uid := u.JSON()["id"].(string)
	c := e.Do("POST", "/scim/v2/Groups", map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:Group"}, "displayName": "Sales",
		"members": []any{map[string]any{"value": uid}}}, key, scimJSON)
	if c.Status != 201 {
		t.Fatalf("create: %d %s", c.Status, c.Body)
	}
	gid := c.JSON()["id"].(string)
	if c.Header.Get("Location") != "http://127.0.0.1:8080/scim/v2/Groups/"+gid && !strings.HasSuffix(c.Header.Get("Location"), "/scim/v2/Groups/"+gid) {
		t.Errorf("Location %q", c.Header.Get("Location"))
	}
	if c.Header.Get("ETag") != `W/"1"` || c.JSON()["meta"].(map[string]any)["version"] != `W/"1"` {
		t.Errorf("ETag %q, meta %v", c.Header.Get("ETag"), c.JSON()["meta"])
	}
	wantSCIMError(t, e.Do("POST", "/scim/v2/Groups", map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:Group"}, "displayName": "sales"}, key), 409, "uniqueness")
	wantSCIMError(t, e.Do("POST", "/scim/v2/Groups", map[string]any{"displayName": "x"}, key), 400, "invalidSyntax")
	wantSCIMError(t, e.Do("POST", "/scim/v2/Groups", "[", key), 400, "invalidSyntax")
	wantSCIMError(t, e.Do("GET", "/scim/v2/Groups?filter=displayName+eq", nil, key), 400, "invalidFilter")
	wantSCIMError(t, e.Do("GET", "/scim/v2/Groups?sortBy=members", nil, key), 400, "invalidValue")
	wantSCIMError(t, e.Do("GET", "/scim/v2/Groups/nope", nil, key), 404, "")
	// If-None-Match with the current version: 304; If-Match stale: 412.
	if r := e.Do("GET", "/scim/v2/Groups/"+gid, nil, key, `If-None-Match: W/"1"`); r.Status != 304 {
		t.Errorf("If-None-Match: %d", r.Status)
	}
	patch := map[string]any{"schemas": []string{"urn:ietf:params:scim:api:messages:2.0:PatchOp"},
		"Operations": []any{map[string]any{"op": "Replace", "path": "displayName", "value": "Sales EMEA"}}}
	wantSCIMError(t, e.Do("PATCH", "/scim/v2/Groups/"+gid, patch, key, `If-Match: W/"7"`), 412, "")
	if r := e.Do("PATCH", "/scim/v2/Groups/"+gid, patch, key, `If-Match: W/"1"`); r.Status != 200 || r.Header.Get("ETag") != `W/"2"` {
		t.Errorf("PATCH: %d %s %q", r.Status, r.Body, r.Header.Get("ETag"))
	}
	// Entra's Test Connection and group lookup.
	r := e.Do("GET", "/scim/v2/Groups?excludedAttributes=members&filter=displayName+eq+%22sales+emea%22", nil, key)
	if r.Status != 200 || r.JSON()["totalResults"] != 1.0 || r.JSON()["Resources"].([]any)[0].(map[string]any)["members"] != nil {
		t.Errorf("lookup: %d %s", r.Status, r.Body)
	}
	r = e.Do("POST", "/scim/v2/Groups/.search", map[string]any{"schemas": []string{"urn:ietf:params:scim:api:messages:2.0:SearchRequest"}, "filter": `displayName sw "Sales"`, "count": 0}, key)
	if r.Status != 200 || r.JSON()["totalResults"] != 1.0 || len(r.JSON()["Resources"].([]any)) != 0 {
		t.Errorf(".search: %d %s", r.Status, r.Body)
	}
	// Another tenant's key sees none of it.
	b := e.NewTenant("Bolt")
	wantSCIMError(t, e.Do("GET", "/scim/v2/Groups/"+gid, nil, scimKey(e, b)), 404, "")
	if r := e.Do("DELETE", "/scim/v2/Groups/"+gid, nil, key); r.Status != 204 {
		t.Errorf("DELETE: %d %s", r.Status, r.Body)
	}
}

func TestSCIMRateLimit(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("Acme")
	key := scimKey(e, a)
	other := scimKey(e, a)
	limited := 0
	for range 201 {
		if r := e.Do("GET", "/scim/v2/ServiceProviderConfig", nil, key); r.Status == 429 {
			limited++
			if r.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		}
	}
	// The clock does not move: the burst of 200 is all there is.
	if limited != 1 {
		t.Errorf("%d of 201 requests refused, want 1", limited)
	}
	if r := e.Do("GET", "/scim/v2/ServiceProviderConfig", nil, other); r.Status != 200 {
		t.Errorf("another credential is limited too: %d", r.Status)
	}
}

// TestSCIMDeactivation: active false refuses the user's tokens, logins and
// refresh tokens at once (R19 in one process; store/postgres checks three),
// answering a login as a wrong password does; reactivation restores the
// logins but no token issued before.
func TestSCIMDeactivation(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("Acme")
	key := scimKey(e, a)
	u := e.Do("POST", "/scim/v2/Users", map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:User"}, "userName": "leaver", "password": "leaver-password"}, key)
	if u.Status != 201 {
		t.Fatalf("create: %d %s", u.Status, u.Body)
	}
	id := u.JSON()["id"].(string)
	login := func() latchkeytest.Response {
		return e.Do("POST", "/api/v1/auth/tokens/", map[string]any{"name": "leaver", "password": "leaver-password", "auth_domain": a.Code})
	}
	tok := login()
	if tok.Status != 200 {
		t.Fatalf("login: %d %s", tok.Status, tok.Body)
	}
	jwt, refresh := tok.JSON()["jwt"].(string), tok.JSON()["refresh_token"].(string)
	userKey := "Authorization: Bearer " + e.APIKey(a, id, identity.AreaSCIM)
	if r := e.Do("GET", "/api/v1/me/passkeys", nil, bearer(jwt)); r.Status != 200 {
		t.Fatalf("the token before: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/scim/v2/ServiceProviderConfig", nil, userKey); r.Status != 200 {
		t.Fatalf("the user's API key before: %d %s", r.Status, r.Body)
	}
	deactivate := func(v string) {
		t.Helper()
		r := e.Do("PATCH", "/scim/v2/Users/"+id, map[string]any{"schemas": []string{"urn:ietf:params:scim:api:messages:2.0:PatchOp"},
			"Operations": []any{map[string]any{"op": "Replace", "path": "active", "value": v}}}, key)
		if r.Status != 200 || r.JSON()["active"] != (v == "True") {
			t.Fatalf("active %s: %d %s", v, r.Status, r.Body)
		}
	}
	deactivate("False")
	if r := e.Do("GET", "/api/v1/me/passkeys", nil, bearer(jwt)); r.Status != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("the token after: %d %q", r.Status, r.Header.Get("WWW-Authenticate"))
	}
	wrong := e.Do("POST", "/api/v1/auth/tokens/", map[string]any{"name": "leaver", "password": "not-the-password", "auth_domain": a.Code})
	if r := login(); r.Status != 401 || wrong.Status != 401 || r.JSON()["message"] != wrong.JSON()["message"] || r.JSON()["code"] != wrong.JSON()["code"] {
		t.Errorf("login after: %d %s (a wrong password: %s)", r.Status, r.Body, wrong.Body)
	}
	if r := e.Do("POST", "/api/v1/auth/tokens/", map[string]any{"grant_type": "refresh_token", "refresh_token": refresh}); r.Status != 401 {
		t.Errorf("refresh after: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/scim/v2/ServiceProviderConfig", nil, userKey); r.Status != 401 {
		t.Errorf("the user's API key after: %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(2 * time.Second) // a new token's iat is after the revocation
	deactivate("True")
	if r := login(); r.Status != 200 {
		t.Errorf("login after reactivation: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/api/v1/me/passkeys", nil, bearer(jwt)); r.Status != 401 {
		t.Errorf("the old token after reactivation: %d", r.Status)
	}
}
