package httpapi_test

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
)

// TestTenantIsolationOnEveryRoute walks every route the router registers
// and calls it with a valid credential of another tenant (B) on tenant A's
// resources. Routes that name a resource of A must answer 401, 403 or 404;
// no route may answer with A's data. The route list comes from the router,
// so a new route is covered (or, with a new path parameter, fails here until
// the test is told which of A's values to put there).
func TestTenantIsolationOnEveryRoute(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("Acme")
	b := e.NewTenant("Bolt")

	// Tenant A's resources, one of each kind a path can name.
	adminA := bearer(a.AdminToken)
	user := e.Do("POST", "/api/v1/admin/tenants/"+a.ID+"/users", map[string]any{"name": "alice-of-acme-q7", "password": "alice-password"}, adminA)
	if user.Status != http.StatusCreated {
		t.Fatalf("create user: %d %s", user.Status, user.Body)
	}
	e.ClientProfile(a, map[string]any{"name": "robots"})
	client := e.RegisterClient("robot-of-acme-q7", e.RegistrationToken(a, "robots", 1, 3600))
	key := e.Do("POST", "/api/v1/vault/keys2", map[string]any{"name": "vault-of-acme-q7", "algorithm": "AES", "size": 256}, adminA)
	if key.Status != http.StatusCreated {
		t.Fatalf("create vault key: %d %s", key.Status, key.Body)
	}
	auditA := e.AuditClient(a, identity.RoleTenantAdmin, identity.ScopeAuditExport)
	job := e.Do("POST", "/audit/v1/audit-log-exports", map[string]any{"from": "2026-01-01T00:00:00Z", "to": "2026-06-01T00:00:00Z"}, bearer(auditA))
	if job.Status != http.StatusAccepted {
		t.Fatalf("start export: %d %s", job.Status, job.Body)
	}
	notifyA := e.AuditClient(a, identity.RoleTenantAdmin, identity.ScopeNotificationAdmin)
	sub := e.Do("POST", "/notification/v1/subscriptions", map[string]any{"event_type_ids": []string{"10001"}, "client_id": "reader-of-acme-q7"}, bearer(notifyA))
	if sub.Status != http.StatusCreated {
		t.Fatalf("create subscription: %d %s", sub.Status, sub.Body)
	}
	provA := e.APIKey(a, "", identity.AreaProvisioning)
	vtok := e.Do("POST", "/VirtualToken/Provisioning/V1.0/Tenants/"+a.ID+"/Users/"+user.JSON()["id"].(string)+"/Tokens", nil, "Authorization: "+provA)
	if vtok.Status != http.StatusOK {
		t.Fatalf("create virtual token: %d %s", vtok.Status, vtok.Body)
	}
	vtokID := strings.Trim(strings.TrimSpace(string(vtok.Body)), `"`)
	streamA := e.AuditClient(a, "", identity.ScopeEventStreamAdmin)
	stream := e.Do("POST", "/eventstream/v1/tenants/"+a.Code+"/subscriptions", map[string]any{"endpoint": "https://203.0.113.10/acme-q7", "eventTypes": []string{"401"}}, bearer(streamA))
	if stream.Status != http.StatusCreated {
		t.Fatalf("create event-stream subscription: %d %s", stream.Status, stream.Body)
	}
	values := map[string]string{
		"tokenId":        vtokID,
		"tokenLabel":     "label-of-acme-q7",
		"roleAction":     "User:ResetPin",
		"tenantId":       a.ID,
		"tenantCode":     a.Code,
		"userId":         user.JSON()["id"].(string),
		"jobId":          job.JSON()["jobId"].(string),
		"tenant":         a.Code,
		"subscriptionId": stream.JSON()["resources"].([]any)[0].(string),
	}
	values["clientId"], _ = e.OAuthClient(a, "", identity.ScopeAuditExport)
	values["name"] = "firebase-of-acme-q7"
	if r := e.Do("PUT", "/api/v1/admin/tenants/"+a.ID+"/password-hash-keys/"+values["name"], map[string]any{"algorithm": "firebase-scrypt",
		"signerKey": "Bw==", "rounds": 8, "memCost": 14}, adminA); r.Status != http.StatusNoContent {
		t.Fatalf("put hash key: %d %s", r.Status, r.Body)
	}
	// An authenticator of A's user (area C).
	dev := authenticatortest.New("localhost", "http://localhost:8080")
	cdj, att := dev.Register("aXNvbGF0aW9u", authenticatortest.FormatPackedSelf)
	authnA := "/api/v1/tenants/" + a.Code + "/users/" + values["userId"] + "/authenticators"
	keyA := "apikey: " + e.APIKey(a, "", identity.AreaAuthenticator)
	if r := e.Do("POST", authnA, map[string]any{"type": "FIDO", "metadata": map[string]any{"attestation": map[string]any{
		"clientDataJson": authenticatortest.B64(cdj), "attestationObject": authenticatortest.B64(att)}}}, keyA); r.Status != http.StatusOK {
		t.Fatalf("import authenticator: %d %s", r.Status, r.Body)
	}
	values["authenticatorId"] = dev.ID()
	values["key"] = key.JSON()["id"].(string)
	values["version"] = "0"
	scimA := "Authorization: Bearer " + e.APIKey(a, "", identity.AreaSCIM)
	grp := e.Do("POST", "/scim/v2/Groups", map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:Group"}, "displayName": "group-of-acme-q7",
		"members": []any{map[string]any{"value": values["userId"]}}}, scimA)
	if grp.Status != http.StatusCreated {
		t.Fatalf("create SCIM group: %d %s", grp.Status, grp.Body)
	}
	values["groupId"] = grp.JSON()["id"].(string)
	// An upstream identity provider of A (github: no discovery to reach).
	if r := e.Do("POST", "/api/v1/admin/tenants/"+a.ID+"/identity-providers", map[string]any{"id": "gh-of-acme-q7", "displayName": "GitHub of Acme",
		"type": "github", "clientId": "gh-client-of-acme-q7", "clientSecret": "gh-secret"}, adminA); r.Status != http.StatusCreated {
		t.Fatalf("create identity provider: %d %s", r.Status, r.Body)
	}
	values["providerId"] = "gh-of-acme-q7"
	// Discovery names no tenant's resource: the same for every tenant.
	values["resourceType"], values["schemaUrn"] = "Group", "urn:ietf:params:scim:schemas:core:2.0:Group"
	shared := map[string]bool{"resourceType": true, "schemaUrn": true}
	// A TOTP device of A's administrator (the /me/mfa routes act on the
	// caller's own: B's names A's device and must not find it).
	totp := e.Do("POST", "/api/v1/me/mfa/totp", map[string]any{"friendlyName": "totp-of-acme-q7"}, adminA)
	if totp.Status != http.StatusCreated {
		t.Fatalf("create TOTP device: %d %s", totp.Status, totp.Body)
	}
	idFor := map[string]string{ // {id} by the area of the route
		"/client-management/": client.ID,
		"/vault/":             key.JSON()["id"].(string),
		"/notification/":      sub.JSON()["id"].(string),
		"/me/mfa/":            totp.JSON()["id"].(string),
	}
	// Markers of A's data: none may appear in an answer to B.
	markers := []string{values["groupId"], "group-of-acme-q7", vtokID, a.ID, client.ID, values["userId"], values["jobId"], idFor["/vault/"], idFor["/notification/"], "reader-of-acme-q7", "robot-of-acme-q7", "vault-of-acme-q7", "alice-of-acme-q7", dev.ID(), values["subscriptionId"], values["clientId"], "acme-q7", idFor["/me/mfa/"], "gh-client-of-acme-q7"}

	// Tenant B's credentials, each as strong as its kind allows.
	oauthB := e.AuditClient(b, identity.RoleTenantAdmin, identity.AllScopes...)
	apiKeyB := e.APIKey(b, "", identity.AreaAuthenticator, identity.AreaProvisioning)
	scimB := e.APIKey(b, "", identity.AreaSCIM)
	guideB := e.Do("POST", "/guide/session", map[string]string{"name": "tadmin", "password": "tenant-password-1", "tenant": b.Code})
	if guideB.Status != http.StatusOK {
		t.Fatalf("guide login: %d %s", guideB.Status, guideB.Body)
	}
	guideCookieB := strings.Split(guideB.Header.Get("Set-Cookie"), ";")[0]
	oidcB := oidcUserToken(t, e, b)
	credential := func(auth string) (string, bool) {
		switch {
		case strings.HasPrefix(auth, "vault:"):
			return bearer(b.AdminToken), true
		case auth == "guide-session":
			return "Cookie: " + guideCookieB, true
		case auth == "oidc-userinfo":
			return bearer(oidcB), true
		case auth == "platform-jwt", auth == "platform-jwt-or-mfa-enrollment":
			return bearer(b.AdminToken), true
		case strings.HasPrefix(auth, "oauth:"):
			return bearer(oauthB), true
		case strings.HasPrefix(auth, "apikey:"):
			return "Authorization: Bearer " + apiKeyB, true
		case auth == "scim":
			return "Authorization: Bearer " + scimB, true
		}
		return "", false // public routes: their own credential is tested with them
	}
	// Plausible bodies, so that a refusal is about the tenant, not the body.
	bodies := map[string]any{
		"settings":            map[string]any{"fidoImportEnabled": false},
		"users":               map[string]any{"name": "mallory", "password": "mallory-password"},
		"oauth-clients":       map[string]any{"name": "m", "scopes": []string{"audit:export"}},
		"firebase-of-acme-q7": map[string]any{"algorithm": "firebase-scrypt", "signerKey": "Bw==", "rounds": 8, "memCost": 14},
		"api-keys":            map[string]any{"name": "m", "areas": []string{"authenticator"}},
		"ack":                 map[string]any{"page": 1},
		"confirm":             map[string]any{"otp": "123456"},
		"identity-providers":  map[string]any{"id": "m", "displayName": "M", "type": "github", "clientId": "m", "clientSecret": "m"},
	}
	param := regexp.MustCompile(`\{([A-Za-z]+)\}`)
	checked := 0
	for _, r := range e.Handler.Routes() {
		cred, ok := credential(r.Auth)
		if !ok {
			continue
		}
		namesA := false
		path := param.ReplaceAllStringFunc(r.Pattern, func(m string) string {
			name := m[1 : len(m)-1]
			namesA = namesA || !shared[name]
			if name == "id" {
				for area, v := range idFor {
					if strings.Contains(r.Pattern, area) {
						return v
					}
				}
			}
			v, ok := values[name]
			if !ok {
				t.Fatalf("route %s %s has path parameter {%s}: give the test tenant A's value for it", r.Method, r.Pattern, name)
			}
			return v
		})
		var body any
		if r.Method == "POST" || r.Method == "PATCH" || r.Method == "PUT" {
			body = map[string]any{}
			for suffix, b := range bodies {
				if strings.HasSuffix(r.Pattern, "/"+suffix) {
					body = b
				}
			}
		}
		t.Run(r.Method+" "+r.Pattern, func(t *testing.T) {
			checked++
			headers := []string{cred}
			if strings.HasPrefix(r.Pattern, "/eventstream/") && !strings.Contains(r.Pattern, "{tenant}") {
				headers = append(headers, "acting-tenant-id: "+a.Code) // B names A's tenant in the header
			}
			resp := e.Do(r.Method, path, body, headers...)
			if namesA && !slices.Contains([]int{401, 403, 404}, resp.Status) {
				t.Errorf("status %d for another tenant's resource, want 401, 403 or 404; body %s", resp.Status, resp.Body)
			}
			for _, m := range markers {
				if strings.Contains(string(resp.Body), m) {
					t.Errorf("answer to tenant B contains tenant A's %q: %s", m, resp.Body)
				}
			}
		})
	}
	if checked < 15 {
		t.Fatalf("only %d authenticated routes checked; the route list looks wrong", checked)
	}
	// The vault routes again with B's OAuth access token holding every
	// vault scope, naming A's key by id and by name.
	vaultChecked := 0
	for _, r := range e.Handler.Routes() {
		if !strings.HasPrefix(r.Auth, "vault:") || !strings.Contains(r.Pattern, "{key}") {
			continue
		}
		for _, ref := range []string{values["key"], "vault-of-acme-q7?type=name"} {
			path := strings.NewReplacer("{key}", strings.Split(ref, "?")[0], "{version}", "0").Replace(r.Pattern)
			if strings.Contains(ref, "?") {
				path += "?" + strings.Split(ref, "?")[1]
			}
			var body any
			if r.Method != "GET" && r.Method != "DELETE" {
				body = map[string]any{}
			}
			resp := e.Do(r.Method, path, body, bearer(oauthB))
			vaultChecked++
			if !slices.Contains([]int{401, 403, 404}, resp.Status) {
				t.Errorf("%s %s with B's access token (%s): %d, want 401, 403 or 404: %s", r.Method, r.Pattern, ref, resp.Status, resp.Body)
			}
			if strings.Contains(string(resp.Body), values["key"]) || strings.Contains(string(resp.Body), a.ID) {
				t.Errorf("%s %s: B's answer holds A's key or tenant: %s", r.Method, path, resp.Body)
			}
		}
	}
	if vaultChecked < 40 {
		t.Errorf("only %d vault calls checked", vaultChecked)
	}
	// A's resources are intact after B's attempts.
	if r := e.Do("GET", "/api/v1/client-management/clients/"+client.ID, nil, adminA); r.Status != 200 {
		t.Errorf("A's client after B's attempts: %d", r.Status)
	}
	if r := e.Do("GET", "/VirtualToken/Provisioning/V1.0/Tenants/"+a.ID+"/Users/"+values["userId"]+"/Tokens/"+vtokID+"/Certificates", nil, "Authorization: "+provA); r.Status != 200 {
		t.Errorf("A's virtual token after B's attempts: %d", r.Status)
	}
	if r := e.Do("GET", "/api/v1/vault/keys2/"+idFor["/vault/"], nil, adminA); r.Status != 200 {
		t.Errorf("A's vault key after B's attempts: %d", r.Status)
	}
	if sub, err := e.Store.GetNotifySubscription(t.Context(), a.ID, idFor["/notification/"]); err != nil || sub.Pages != 0 {
		t.Errorf("A's subscription after B's attempts: %+v, %v", sub, err)
	}
	if r := e.Do("GET", "/scim/v2/Groups/"+values["groupId"], nil, scimA); r.Status != 200 || r.JSON()["displayName"] != "group-of-acme-q7" || len(r.JSON()["members"].([]any)) != 1 {
		t.Errorf("A's group after B's attempts: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", authnA+"/"+dev.ID(), nil, keyA); r.Status != 200 || r.JSON()["state"] != "pending" {
		t.Errorf("A's authenticator after B's attempts: %d %s", r.Status, r.Body)
	}
}

// oidcUserToken runs the OpenID Provider's code flow for tenant t's
// administrator through package oidc (a client of t, a password sign-in,
// the code's redemption) and returns the access token.
func oidcUserToken(tb testing.TB, e *latchkeytest.Env, t latchkeytest.Tenant) string {
	tb.Helper()
	ctx := tb.Context()
	admin := identity.Principal{Kind: identity.KindUser, TenantID: e.Root.ID, TenantCode: e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
	c, secret, err := e.Platform.Identity.RegisterOAuthClient(ctx, admin, t.ID, identity.NewOAuthClient{Name: "web", Scopes: []string{"openid", "profile"},
		GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{"https://app.example/cb"}})
	if err != nil {
		tb.Fatal(err)
	}
	verifier, challenge := pkce("isolation")
	out, err := e.Platform.OIDC.Authorize(ctx, url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {"https://app.example/cb"},
		"scope": {"openid profile"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}, "")
	if err != nil {
		tb.Fatal(err)
	}
	res, err := e.Platform.OIDC.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, BrowserID: "b", CSRFToken: e.Platform.OIDC.CSRFToken("b"),
		Username: "tadmin", Password: "tenant-password-1"})
	if err != nil {
		tb.Fatal(err)
	}
	u, _ := url.Parse(res.Outcome.Redirect)
	tok, err := e.Platform.OIDC.Exchange(ctx, oidc.TokenRequest{GrantType: identity.GrantAuthorizationCode, ClientID: c.ID, ClientSecret: secret,
		Code: u.Query().Get("code"), RedirectURI: "https://app.example/cb", CodeVerifier: verifier})
	if err != nil {
		tb.Fatal(err)
	}
	return tok.AccessToken
}
