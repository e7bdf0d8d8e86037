// Package latchkeytest builds a complete Latchkey platform on the in-memory
// store with a fake clock, for tests of the platform itself and of programs
// that embed it. Nothing in it sleeps: time moves when the test says so.
package latchkeytest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// AdminPassword is the root administrator's password in every Env.
const AdminPassword = "admin-password-1"

// Start is the fake clock's initial time.
var Start = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// FastPasswords are cheap argon2id parameters that keep tests fast; never
// use them outside tests.
var FastPasswords = identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}

// Env is a running platform with its HTTP server.
type Env struct {
	T        testing.TB
	Clock    *clocktest.Fake
	Store    *memstore.Store
	Platform *latchkey.Platform
	Handler  *httpapi.Server
	Server   *httptest.Server
	Root     identity.Tenant
}

// Option changes an Env's configuration before it starts.
type Option func(*latchkey.Config)

// New starts an Env; it is shut down when the test ends.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	clk := clocktest.New(Start)
	st := memstore.New()
	cfg := latchkey.Config{
		Store: st, MasterKey: seal.NewKey(), Clock: clk, Issuer: "https://latchkey.test",
		PasswordParams: FastPasswords, AllowWeakPasswordHashing: true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := latchkey.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("latchkey.New: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	boot, err := p.Bootstrap(t.Context(), AdminPassword)
	if err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	o := httpapi.Defaults()
	h := httpapi.New(p, o)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Env{T: t, Clock: clk, Store: st, Platform: p, Handler: h, Server: srv, Root: boot.Tenant}
}

// For returns a copy of e that reports to t: inside a fuzz target or a
// goroutine's subtest, helpers must fail that test, not the one that made e.
func (e *Env) For(t testing.TB) *Env {
	c := *e
	c.T = t
	return &c
}

// Response is a decoded HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map.
func (r Response) JSON() map[string]any {
	var m map[string]any
	json.Unmarshal(r.Body, &m)
	return m
}

// Do sends a request with a JSON (or raw []byte / string) body and optional
// headers given as "Name: value" strings.
func (e *Env) Do(method, path string, body any, headers ...string) Response {
	e.T.Helper()
	return e.DoWith(e.Server.Client(), e.Server.URL, method, path, body, headers...)
}

// DoWith is Do against another server of the Env (base is its URL, such as
// a TLSServer's) through client c.
func (e *Env) DoWith(c *http.Client, base, method, path string, body any, headers ...string) Response {
	e.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.T.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(e.T.Context(), method, base+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := c.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Login logs in by password and returns the JWT; it fails the test otherwise.
func (e *Env) Login(name, password, authDomain string) string {
	e.T.Helper()
	r := e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": name, "password": password, "auth_domain": authDomain})
	if r.Status != http.StatusOK {
		e.T.Fatalf("login %s@%s: %d %s", name, authDomain, r.Status, r.Body)
	}
	return r.JSON()["jwt"].(string)
}

// AdminToken returns a root administrator's JWT.
func (e *Env) AdminToken() string { return e.Login(identity.AdminName, AdminPassword, "root") }

// Tenant is a tenant created by NewTenant, with an administrator.
type Tenant struct {
	ID, Code   string
	AdminToken string
}

// NewTenant creates a tenant with an administrator "tadmin" and returns it
// with the administrator's JWT.
func (e *Env) NewTenant(name string) Tenant {
	e.T.Helper()
	root := "Authorization: Bearer " + e.AdminToken()
	r := e.Do("POST", "/api/v1/admin/tenants", map[string]string{"name": name}, root)
	if r.Status != http.StatusCreated {
		e.T.Fatalf("create tenant: %d %s", r.Status, r.Body)
	}
	t := Tenant{ID: r.JSON()["id"].(string), Code: r.JSON()["code"].(string)}
	// The administrator is made through the identity service rather than
	// the admin route (or Platform.CreateUser), so that the tenant's event
	// log starts empty: the route also appends the native event 401.
	operator := identity.Principal{Kind: identity.KindUser, TenantID: e.Root.ID, TenantCode: e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
	if _, err := e.Platform.Identity.CreateUser(e.T.Context(), operator, t.ID, "tadmin", "tenant-password-1", []string{identity.RoleTenantAdmin}); err != nil {
		e.T.Fatalf("create tenant admin: %v", err)
	}
	t.AdminToken = e.Login("tadmin", "tenant-password-1", t.Code)
	return t
}

// OAuthClient creates an OAuth client in tenant t with scopes and role and
// returns its id and secret.
func (e *Env) OAuthClient(t Tenant, role string, scopes ...string) (id, secret string) {
	e.T.Helper()
	r := e.Do("POST", "/api/v1/admin/tenants/"+t.ID+"/oauth-clients", map[string]any{"name": "client", "scopes": scopes, "role": role}, "Authorization: Bearer "+t.AdminToken)
	if r.Status != http.StatusCreated {
		e.T.Fatalf("create oauth client: %d %s", r.Status, r.Body)
	}
	return r.JSON()["client_id"].(string), r.JSON()["client_secret"].(string)
}

// AccessToken runs the client_credentials grant and returns the access token.
func (e *Env) AccessToken(id, secret string) string {
	e.T.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	resp, err := e.Server.Client().PostForm(e.Server.URL+"/oauth/v1/token", form)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	if resp.StatusCode != http.StatusOK {
		e.T.Fatalf("oauth token: %d %v", resp.StatusCode, m)
	}
	return m["access_token"].(string)
}

// APIKey creates an API key in tenant t for areas, optionally bound to a
// user, and returns the key text.
func (e *Env) APIKey(t Tenant, userID string, areas ...string) string {
	e.T.Helper()
	body := map[string]any{"name": "key", "areas": areas}
	if userID != "" {
		body["userId"] = userID
	}
	r := e.Do("POST", "/api/v1/admin/tenants/"+t.ID+"/api-keys", body, "Authorization: Bearer "+t.AdminToken)
	if r.Status != http.StatusCreated {
		e.T.Fatalf("create api key: %d %s", r.Status, r.Body)
	}
	return r.JSON()["key"].(string)
}

// UnverifiedClaims decodes a JWT's payload without verifying it, for tests
// that inspect what a verified token says.
func UnverifiedClaims(tb testing.TB, jwt string) map[string]any {
	tb.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		tb.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("JWT payload is not JSON: %v", err)
	}
	return m
}
