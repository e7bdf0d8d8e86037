package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/latchkeytest"
)

func bearer(tok string) string { return "Authorization: Bearer " + tok }

// lastAudit returns the tenant's newest audit record.
func lastAudit(t *testing.T, e *latchkeytest.Env, tenantID string) audit.Record {
	t.Helper()
	recs, err := e.Store.ListAuditRecords(t.Context(), tenantID, 0, 1_000_000)
	if err != nil || len(recs) == 0 {
		t.Fatalf("no audit records for %s: %v", tenantID, err)
	}
	return recs[len(recs)-1]
}

func TestPasswordLogin(t *testing.T) {
	e := latchkeytest.New(t)
	tests := []struct {
		name       string
		body       any
		path       string
		wantStatus int
		wantAudit  string // status of the audit record written, "" for none
	}{
		{"root by auth_domain root", map[string]string{"name": "admin", "password": latchkeytest.AdminPassword, "auth_domain": "root"}, "/api/v1/auth/tokens/", 200, audit.StatusSuccess},
		{"root by omitted auth_domain", map[string]string{"name": "admin", "password": latchkeytest.AdminPassword}, "/api/v1/auth/tokens", 200, audit.StatusSuccess},
		{"root by code", map[string]string{"name": "admin", "password": latchkeytest.AdminPassword, "auth_domain": "ROOT000000"}, "/api/v1/auth/tokens/", 200, audit.StatusSuccess},
		{"wrong password", map[string]string{"name": "admin", "password": "nope", "auth_domain": "root"}, "/api/v1/auth/tokens/", 401, audit.StatusFailed},
		{"unknown user", map[string]string{"name": "ghost", "password": "nope", "auth_domain": "root"}, "/api/v1/auth/tokens/", 401, audit.StatusFailed},
		{"unknown tenant", map[string]string{"name": "admin", "password": latchkeytest.AdminPassword, "auth_domain": "NOSUCHTENA"}, "/api/v1/auth/tokens/", 401, audit.StatusFailed},
		{"missing password", map[string]string{"name": "admin"}, "/api/v1/auth/tokens/", 400, ""},
		{"unknown grant", map[string]string{"grant_type": "magic"}, "/api/v1/auth/tokens/", 400, ""},
		{"malformed JSON", `{"name":`, "/api/v1/auth/tokens/", 400, ""},
		{"wrong type", `{"name": 5}`, "/api/v1/auth/tokens/", 400, ""},
		{"not an object", `[1,2]`, "/api/v1/auth/tokens/", 400, ""},
		{"trailing data", `{"name":"a"} {}`, "/api/v1/auth/tokens/", 400, ""},
		{"empty body", ``, "/api/v1/auth/tokens/", 400, ""},
		{"too deep", strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40), "/api/v1/auth/tokens/", 400, ""},
		{"too large", `{"name":"` + strings.Repeat("a", 2<<20) + `"}`, "/api/v1/auth/tokens/", 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := e.Store.ListAuditRecords(t.Context(), e.Root.ID, 0, 1_000_000)
			r := e.Do("POST", tt.path, tt.body)
			if r.Status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", r.Status, tt.wantStatus, r.Body)
			}
			body := r.JSON()
			if r.Status == 200 {
				if body["jwt"] == "" || body["duration"] != float64(300) || body["token_type"] != "Bearer" {
					t.Errorf("body = %v", body)
				}
			} else if body["code"] != float64(tt.wantStatus) || body["message"] == "" || body["codeDesc"] == "" {
				t.Errorf("error body = %s, want {code, codeDesc, message}", r.Body)
			}
			after, _ := e.Store.ListAuditRecords(t.Context(), e.Root.ID, 0, 1_000_000)
			if tt.wantAudit == "" {
				if len(after) != len(before) {
					t.Errorf("audit records written for a rejected request: %d -> %d", len(before), len(after))
				}
				return
			}
			if len(after) != len(before)+1 {
				t.Fatalf("audit records %d -> %d, want one more", len(before), len(after))
			}
			rec := after[len(after)-1]
			if rec.Action != "auth.login" || rec.Status != tt.wantAudit || rec.Source != audit.SourcePlatform || rec.ResourceID == "" || rec.TraceID == "" {
				t.Errorf("audit record = %+v", rec)
			}
			if tt.wantAudit == audit.StatusFailed && rec.Meta["errorMessage"] == nil {
				t.Errorf("failed record lacks meta.errorMessage: %v", rec.Meta)
			}
		})
	}
}

func TestLoginThrottledAndAudited(t *testing.T) {
	e := latchkeytest.New(t)
	bad := map[string]string{"name": "admin", "password": "wrong", "auth_domain": "root"}
	for i := range 5 {
		if r := e.Do("POST", "/api/v1/auth/tokens/", bad); r.Status != 401 {
			t.Fatalf("attempt %d: %d", i, r.Status)
		}
	}
	// Even the right password is refused while throttled.
	good := map[string]string{"name": "admin", "password": latchkeytest.AdminPassword, "auth_domain": "root"}
	r := e.Do("POST", "/api/v1/auth/tokens/", good)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("throttled login: %d, Retry-After %q", r.Status, r.Header.Get("Retry-After"))
	}
	if rec := lastAudit(t, e, e.Root.ID); rec.Status != audit.StatusFailed || rec.Action != "auth.login" {
		t.Errorf("throttled login audit = %+v", rec)
	}
	e.Clock.Advance(16 * time.Minute)
	if r := e.Do("POST", "/api/v1/auth/tokens/", good); r.Status != 200 {
		t.Fatalf("after the window: %d %s", r.Status, r.Body)
	}
}

func TestTraceparentReachesAuditRecord(t *testing.T) {
	e := latchkeytest.New(t)
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": latchkeytest.AdminPassword}, "traceparent: 00-"+trace+"-00f067aa0ba902b7-01")
	if r.Status != 200 || r.Header.Get("X-Trace-Id") != trace {
		t.Fatalf("status %d, X-Trace-Id %q", r.Status, r.Header.Get("X-Trace-Id"))
	}
	if rec := lastAudit(t, e, e.Root.ID); rec.TraceID != trace {
		t.Errorf("audit traceID = %q, want %q", rec.TraceID, trace)
	}
	// A malformed traceparent gets a fresh id rather than being trusted.
	r = e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": latchkeytest.AdminPassword}, "traceparent: 00-XYZ-1-01")
	if got := r.Header.Get("X-Trace-Id"); len(got) != 32 || got == "XYZ" {
		t.Errorf("X-Trace-Id for malformed traceparent = %q", got)
	}
}

func TestRefreshTokenRotates(t *testing.T) {
	e := latchkeytest.New(t)
	r := e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": latchkeytest.AdminPassword})
	rt := r.JSON()["refresh_token"].(string)
	r = e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"grant_type": "refresh_token", "refresh_token": rt})
	if r.Status != 200 || r.JSON()["jwt"] == nil || r.JSON()["refresh_token"] == rt {
		t.Fatalf("refresh: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"grant_type": "refresh_token", "refresh_token": rt}); r.Status != 401 {
		t.Errorf("reused refresh token: %d, want 401", r.Status)
	}
}

// jwtParts splits a JWT and decodes its header and claims.
func jwtParts(t *testing.T, tok string) (header, claims map[string]any, sig string) {
	t.Helper()
	p := strings.Split(tok, ".")
	if len(p) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	for i, dst := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(p[i])
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(b, dst)
	}
	return header, claims, p[2]
}

func encodeJWT(header, claims map[string]any, sig string) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "." + sig
}

func TestJWTVerification(t *testing.T) {
	e := latchkeytest.New(t)
	tok := e.AdminToken()
	h, c, sig := jwtParts(t, tok)
	if h["alg"] != "ES256" || h["kid"] == nil || h["typ"] != "JWT" {
		t.Fatalf("header = %v", h)
	}
	if _, ok := c["aud"]; ok {
		t.Errorf("claims carry aud %v: generic verifiers refuse an aud they were not told to expect", c["aud"])
	}
	tn := e.NewTenant("Acme")
	cid, secret := e.OAuthClient(tn, "tenant-admin", "audit:export")
	apiTok := e.AccessToken(cid, secret)

	with := func(f func(h, c map[string]any)) string {
		hh, cc := map[string]any{}, map[string]any{}
		for k, v := range h {
			hh[k] = v
		}
		for k, v := range c {
			cc[k] = v
		}
		f(hh, cc)
		return encodeJWT(hh, cc, sig)
	}
	tests := []struct {
		name  string
		token string
	}{
		{"alg none", with(func(h, c map[string]any) { h["alg"] = "none" })[:len(tok)-len(sig)]},
		{"alg none with signature", with(func(h, c map[string]any) { h["alg"] = "none" })},
		{"alg HS256 (confusion)", with(func(h, c map[string]any) { h["alg"] = "HS256" })},
		{"tampered claims", with(func(h, c map[string]any) { c["roles"] = []string{"tenant-admin", "superuser"} })},
		{"other tenant claim", with(func(h, c map[string]any) { c["tid"] = tn.ID })},
		{"wrong issuer", with(func(h, c map[string]any) { c["iss"] = "https://evil.test" })},
		{"unknown kid", with(func(h, c map[string]any) { h["kid"] = "nope" })},
		{"no exp", with(func(h, c map[string]any) { delete(c, "exp") })},
		{"access token on platform API (audience)", apiTok},
		{"garbage", "not.a.jwt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do("GET", "/api/v1/admin/tenants/"+e.Root.ID, nil, bearer(tt.token))
			if r.Status != 401 {
				t.Fatalf("status = %d, want 401; %s", r.Status, r.Body)
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		if r := e.Do("GET", "/api/v1/admin/tenants/"+e.Root.ID, nil, bearer(tok)); r.Status != 200 {
			t.Fatalf("status = %d; %s", r.Status, r.Body)
		}
	})
	t.Run("expired", func(t *testing.T) {
		e.Clock.Advance(301 * time.Second)
		r := e.Do("GET", "/api/v1/admin/tenants/"+e.Root.ID, nil, bearer(tok))
		if r.Status != 401 || !strings.Contains(string(r.Body), "expired") {
			t.Fatalf("expired token: %d %s", r.Status, r.Body)
		}
	})
}

func TestOAuthTokenEndpoint(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	id, secret := e.OAuthClient(tn, "tenant-admin", "audit:export", "event:event:consumer")
	post := func(form url.Values, basicID, basicSecret string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", e.Server.URL+"/oauth/v1/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if basicID != "" {
			req.SetBasicAuth(url.QueryEscape(basicID), url.QueryEscape(basicSecret))
		}
		resp, err := e.Server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	cc := func(kv ...string) url.Values {
		v := url.Values{"grant_type": {"client_credentials"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	tests := []struct {
		name       string
		form       url.Values
		basic      [2]string
		wantStatus int
		wantError  string
		wantScope  string
	}{
		{"post", cc("client_id", id, "client_secret", secret), [2]string{}, 200, "", "audit:export event:event:consumer"},
		{"basic", cc(), [2]string{id, secret}, 200, "", "audit:export event:event:consumer"},
		{"narrowed scope", cc("client_id", id, "client_secret", secret, "scope", "audit:export"), [2]string{}, 200, "", "audit:export"},
		{"scope not allowed", cc("client_id", id, "client_secret", secret, "scope", "notification:consent:administrator"), [2]string{}, 400, "invalid_scope", ""},
		// RFC 6749 §5.2: invalid_client is 401 with a Basic challenge only
		// when the client used HTTP Basic, else 400 without a challenge.
		{"wrong secret", cc("client_id", id, "client_secret", "x"), [2]string{}, 400, "invalid_client", ""},
		{"wrong secret basic", cc(), [2]string{id, "x"}, 401, "invalid_client", ""},
		{"unknown client", cc("client_id", "lkc_nope", "client_secret", "x"), [2]string{}, 400, "invalid_client", ""},
		{"unknown client basic", cc(), [2]string{"lkc_nope", "x"}, 401, "invalid_client", ""},
		{"no credentials", cc(), [2]string{}, 400, "invalid_client", ""},
		{"two methods", cc("client_secret", secret), [2]string{id, secret}, 400, "invalid_request", ""},
		{"password grant", url.Values{"grant_type": {"password"}}, [2]string{}, 400, "unsupported_grant_type", ""},
		{"no grant", url.Values{}, [2]string{}, 400, "invalid_request", ""},
		{"repeated parameter", url.Values{"grant_type": {"client_credentials", "client_credentials"}}, [2]string{}, 400, "invalid_request", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(tt.form, tt.basic[0], tt.basic[1])
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; %v", status, tt.wantStatus, body)
			}
			if tt.wantError != "" {
				if body["error"] != tt.wantError || body["error_description"] == "" {
					t.Errorf("body = %v, want error %q", body, tt.wantError)
				}
				return
			}
			want := map[string]any{"token_type": "Bearer", "expires_in": float64(3600), "scope": tt.wantScope}
			got := map[string]any{"token_type": body["token_type"], "expires_in": body["expires_in"], "scope": body["scope"]}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("token response (-want +got):\n%s", d)
			}
			hdr, claims, _ := jwtParts(t, body["access_token"].(string))
			if hdr["typ"] != "at+jwt" {
				t.Errorf("access token typ = %v, want at+jwt (RFC 9068)", hdr["typ"])
			}
			// RFC 9068 §2.2: aud is required; by default it is the issuer.
			if d := cmp.Diff([]any{"https://latchkey.test"}, claims["aud"]); d != "" {
				t.Errorf("access token aud (-want +got):\n%s", d)
			}
			if claims["client_id"] != id || claims["tid"] != tn.ID || claims["sub"] != id {
				t.Errorf("claims = %v", claims)
			}
		})
	}
	t.Run("issuance audited with client_id", func(t *testing.T) {
		recs, _ := e.Store.ListAuditRecords(t.Context(), tn.ID, 0, 1_000_000)
		var rec audit.Record
		for _, r := range recs {
			if r.Action == "oauth.token" && r.Status == audit.StatusSuccess {
				rec = r
			}
		}
		if rec.Meta["client_id"] != id {
			t.Errorf("audit = %+v", rec)
		}
	})
	t.Run("wrong content type", func(t *testing.T) {
		r := e.Do("POST", "/oauth/v1/token", map[string]string{"grant_type": "client_credentials"})
		if r.Status != 400 || r.JSON()["error"] != "invalid_request" {
			t.Errorf("json body: %d %s", r.Status, r.Body)
		}
	})
}

func TestAdminTenantIsolation(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("Acme")
	b := e.NewTenant("Bolt")
	r := e.Do("POST", "/api/v1/admin/tenants/"+a.ID+"/users", map[string]any{"name": "plain", "password": "plain-password", "roles": []string{"user"}}, bearer(a.AdminToken))
	if r.Status != 201 {
		t.Fatalf("create user: %d %s", r.Status, r.Body)
	}
	plain := e.Login("plain", "plain-password", a.Code)

	type call struct {
		method, path string
		body         any
	}
	calls := func(tenantID string) []call {
		return []call{
			{"GET", "/api/v1/admin/tenants/" + tenantID, nil},
			{"PATCH", "/api/v1/admin/tenants/" + tenantID + "/settings", map[string]any{"fidoImportEnabled": false}},
			{"POST", "/api/v1/admin/tenants/" + tenantID + "/users", map[string]any{"name": "x", "password": "xxxxxxxxxx"}},
			{"POST", "/api/v1/admin/tenants/" + tenantID + "/oauth-clients", map[string]any{"name": "x", "scopes": []string{"audit:export"}}},
			{"POST", "/api/v1/admin/tenants/" + tenantID + "/api-keys", map[string]any{"name": "x", "areas": []string{"authenticator"}}},
		}
	}
	for _, c := range calls(b.ID) {
		t.Run("other tenant admin "+c.method+" "+c.path, func(t *testing.T) {
			if r := e.Do(c.method, c.path, c.body, bearer(a.AdminToken)); r.Status != 404 {
				t.Errorf("status = %d, want 404; %s", r.Status, r.Body)
			}
		})
	}
	for _, c := range calls(a.ID) {
		t.Run("plain user "+c.method+" "+c.path, func(t *testing.T) {
			if r := e.Do(c.method, c.path, c.body, bearer(plain)); r.Status != 403 {
				t.Errorf("status = %d, want 403; %s", r.Status, r.Body)
			}
		})
		t.Run("no token "+c.method+" "+c.path, func(t *testing.T) {
			if r := e.Do(c.method, c.path, c.body); r.Status != 401 {
				t.Errorf("status = %d, want 401; %s", r.Status, r.Body)
			}
		})
	}
	t.Run("tenant admin cannot create tenants", func(t *testing.T) {
		if r := e.Do("POST", "/api/v1/admin/tenants", map[string]string{"name": "x"}, bearer(a.AdminToken)); r.Status != 403 {
			t.Errorf("status = %d, want 403", r.Status)
		}
	})
	t.Run("root admin may administer any tenant", func(t *testing.T) {
		if r := e.Do("GET", "/api/v1/admin/tenants/"+b.ID, nil, bearer(e.AdminToken())); r.Status != 200 {
			t.Errorf("status = %d, want 200", r.Status)
		}
	})
	t.Run("login into another tenant with the same name fails", func(t *testing.T) {
		r := e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "plain", "password": "plain-password", "auth_domain": b.Code})
		if r.Status != 401 {
			t.Errorf("status = %d, want 401", r.Status)
		}
	})
}

func TestAdminValidation(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("Acme")
	adm := bearer(a.AdminToken)
	base := "/api/v1/admin/tenants/" + a.ID
	tests := []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"tenant bad code", "POST", "/api/v1/admin/tenants", map[string]string{"name": "x", "code": "lower"}, 400},
		{"tenant empty name", "POST", "/api/v1/admin/tenants", map[string]string{"name": ""}, 400},
		{"tenant duplicate code", "POST", "/api/v1/admin/tenants", map[string]string{"name": "x", "code": a.Code}, 409},
		{"malformed tenant id", "GET", "/api/v1/admin/tenants/not-a-guid", nil, 404},
		{"user short password", "POST", base + "/users", map[string]any{"name": "u", "password": "short"}, 400},
		{"user unknown role", "POST", base + "/users", map[string]any{"name": "u", "password": "long-enough", "roles": []string{"god"}}, 400},
		{"user duplicate", "POST", base + "/users", map[string]any{"name": "tadmin", "password": "long-enough"}, 409},
		{"client unknown scope", "POST", base + "/oauth-clients", map[string]any{"name": "c", "scopes": []string{"root"}}, 400},
		{"client unknown role", "POST", base + "/oauth-clients", map[string]any{"name": "c", "role": "god"}, 400},
		{"key no areas", "POST", base + "/api-keys", map[string]any{"name": "k"}, 400},
		{"key unknown area", "POST", base + "/api-keys", map[string]any{"name": "k", "areas": []string{"vault"}}, 400},
		{"key unknown user", "POST", base + "/api-keys", map[string]any{"name": "k", "areas": []string{"provisioning"}, "userId": "AAAAAAAAAAAAAAAAAAAAAA"}, 404},
		{"key malformed user", "POST", base + "/api-keys", map[string]any{"name": "k", "areas": []string{"provisioning"}, "userId": "!!"}, 400},
		{"settings retention zero", "PATCH", base + "/settings", map[string]any{"notificationRetentionSeconds": 0}, 400},
		{"settings bad origin", "PATCH", base + "/settings", map[string]any{"webauthn": map[string]any{"rpId": "x", "origins": []string{"ftp://x"}}}, 400},
		{"settings wrong type", "PATCH", base + "/settings", `{"fidoImportEnabled": "yes"}`, 400},
		{"wrong content type", "POST", base + "/users", "name=u", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := []string{adm}
			if tt.name == "tenant bad code" || tt.name == "tenant empty name" || tt.name == "tenant duplicate code" {
				hdr = []string{bearer(e.AdminToken())}
			}
			if tt.name == "wrong content type" {
				hdr = append(hdr, "Content-Type: application/x-www-form-urlencoded")
			}
			r := e.Do(tt.method, tt.path, tt.body, hdr...)
			if r.Status != tt.want {
				t.Errorf("status = %d, want %d; %s", r.Status, tt.want, r.Body)
			}
		})
	}
	t.Run("settings round trip", func(t *testing.T) {
		r := e.Do("PATCH", base+"/settings", map[string]any{"fidoImportEnabled": false, "planFeatures": []string{}, "notificationRetentionSeconds": 60}, adm)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		r = e.Do("GET", base, nil, adm)
		s := r.JSON()["settings"].(map[string]any)
		if s["fidoImportEnabled"] != false || s["notificationRetentionSeconds"] != float64(60) {
			t.Errorf("settings = %v", s)
		}
	})
}

func TestWellKnownAndHealth(t *testing.T) {
	e := latchkeytest.New(t)
	for _, p := range []string{"/healthz", "/.well-known/jwks.json", "/.well-known/oauth-authorization-server"} {
		if r := e.Do("GET", p, nil); r.Status != 200 || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %s", p, r.Status, r.Header.Get("Content-Type"))
		}
	}
	m := e.Do("GET", "/.well-known/oauth-authorization-server", nil).JSON()
	if m["issuer"] != "https://latchkey.test" || !strings.HasSuffix(m["token_endpoint"].(string), "/oauth/v1/token") {
		t.Errorf("metadata = %v", m)
	}
	if r := e.Do("GET", "/no/such/route", nil); r.Status != 404 {
		t.Errorf("unknown route: %d", r.Status)
	}
}

// TestCreateUserAppendsEvent401 checks that a user created through the
// admin route appends the native event "User created" to the tenant's log,
// which notifications, event streams and directory sync read.
func TestCreateUserAppendsEvent401(t *testing.T) {
	e := latchkeytest.New(t)
	a := e.NewTenant("Acme")
	r := e.Do("POST", "/api/v1/admin/tenants/"+a.ID+"/users", map[string]any{"name": "erin", "password": "erin-password-1"}, "Authorization: Bearer "+a.AdminToken)
	if r.Status != http.StatusCreated {
		t.Fatalf("create user: %d %s", r.Status, r.Body)
	}
	evs, err := e.Store.ListEventsAfter(t.Context(), a.ID, 0, []string{"401"}, time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("%d events 401 in the tenant's log, want 1", len(evs))
	}
	var body struct {
		Username string `json:"username"`
		EndUser  struct {
			ID string `json:"id"`
		} `json:"end_user"`
	}
	if err := json.Unmarshal(evs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"erin", r.JSON()["id"].(string)}, []string{body.Username, body.EndUser.ID}); diff != "" {
		t.Errorf("event 401 (-want +got):\n%s", diff)
	}
}
