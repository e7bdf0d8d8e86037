package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// The contract test drives a real Platform over HTTP and checks every
// request it sends and every response it gets against the OpenAPI document
// the server serves at /openapi.json.

// reqCheck says what request validation must conclude about a request.
type reqCheck uint8

const (
	reqValid   reqCheck = iota // the request follows the document
	reqInvalid                 // the request deliberately breaks the document (malformed JSON, no credentials, ...)
	reqProse                   // the request breaks a rule the document states in prose only, which schema validation cannot see
	reqAny                     // either: a scenario run on every route alike, whatever its body schema
)

// call is one HTTP exchange of the contract test.
type call struct {
	method, path string
	body         []byte
	contentType  string // default application/json when body is set
	token        string // "Authorization: Bearer <token>" when set
	header       http.Header
	req          reqCheck
	want         int
}

func jsonBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// contract is the server under test and the validator of its document.
type contract struct {
	srv *httptest.Server
	api *httpapi.Server
	p   *latchkey.Platform
	// store is the platform's store (tests make it fail readiness).
	store *memstore.Store
	doc   []byte
	// rootTenant is the id of the root tenant made by Bootstrap.
	rootTenant string
	v          validator.Validator // strict mode: a response field the document does not declare is an error
	vLoose     validator.Validator // for GET /openapi.json
	client     *http.Client

	// archiveDir holds the audit-export archives.
	archiveDir string
	// clock is the platform's clock.
	clock *clocktest.Fake

	mu      sync.Mutex
	covered map[string]bool // "METHOD pattern status"
}

func newContract(t *testing.T) *contract {
	t.Helper()
	ctx := context.Background()
	archiveDir := t.TempDir()
	st := memstore.New()
	clk := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	p, err := latchkey.New(ctx, latchkey.Config{
		ArchiveDir:               archiveDir,
		Store:                    st,
		MasterKey:                seal.NewKey(),
		Clock:                    clk,
		PasswordParams:           identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1},
		AllowWeakPasswordHashing: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	boot, err := p.Bootstrap(ctx, "admin-password-1")
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(p, httpapi.Defaults())
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	c := &contract{srv: srv, api: api, p: p, store: st, rootTenant: boot.Tenant.ID, client: srv.Client(), covered: map[string]bool{}, archiveDir: archiveDir, clock: clk}

	resp, err := c.client.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if c.doc, err = io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, c.doc)
	}
	document, err := libopenapi.NewDocument(c.doc)
	if err != nil {
		t.Fatal(err)
	}
	// The radix-tree path lookup trims trailing slashes, so of two paths that
	// differ only by one ({base_url}/client-management/clients and .../clients/)
	// it keeps the last and misses the other's methods; the regular matcher
	// picks the path that has the request's method.
	opts := []config.Option{config.WithFormatAssertions(), config.WithURLEncodedBodyValidation(), config.DisablePathTree()}
	v, errs := validator.NewValidator(document, append(opts, config.WithStrictMode())...)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	c.v = v
	// The document's own body is free-form below its top-level keys, which
	// strict mode would report; TestOpenAPIDocumentIsValid31 checks it.
	if c.vLoose, errs = validator.NewValidator(document, opts...); len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return c
}

// newRequest builds the request of cl against the test server.
func (c *contract) newRequest(cl call) *http.Request {
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	r, err := http.NewRequest(cl.method, c.srv.URL+cl.path, body)
	if err != nil {
		panic(err)
	}
	if cl.body != nil {
		ct := cl.contentType
		if ct == "" {
			ct = "application/json"
		}
		r.Header.Set("Content-Type", ct)
	}
	if cl.token != "" {
		r.Header.Set("Authorization", "Bearer "+cl.token)
	}
	for k, vs := range cl.header {
		r.Header[k] = vs
	}
	return r
}

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  - %s: %s", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      %s: %s", se.FieldPath+" "+se.KeywordLocation, se.Reason)
		}
	}
	return b.String()
}

// do sends cl, validates the request and the response against the document
// and checks the status; it returns the response and its body.
func (c *contract) do(t *testing.T, cl call) (*http.Response, []byte) {
	t.Helper()
	ok, errs := c.v.ValidateHttpRequest(c.newRequest(cl))
	switch {
	case cl.req == reqValid && !ok:
		t.Errorf("%s %s: request does not follow the document:%s", cl.method, cl.path, describe(errs))
	case cl.req == reqInvalid && ok:
		t.Errorf("%s %s: request was meant to break the document but validates", cl.method, cl.path)
	}
	resp, err := c.client.Do(c.newRequest(cl))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if cl.want >= 0 && resp.StatusCode != cl.want {
		t.Errorf("%s %s: status %d, want %d; body %s", cl.method, cl.path, resp.StatusCode, cl.want, body)
	}
	vresp := *resp
	vresp.Body = io.NopCloser(bytes.NewReader(body))
	vreq := c.newRequest(call{method: cl.method, path: cl.path})
	v := c.v
	if cl.path == "/openapi.json" {
		v = c.vLoose
	}
	if ok, errs := v.ValidateHttpResponse(vreq, &vresp); !ok {
		t.Errorf("%s %s: %d response does not follow the document:%s\nbody: %s", cl.method, cl.path, resp.StatusCode, describe(errs), body)
	}
	c.mu.Lock()
	c.covered[fmt.Sprintf("%s %s %d", cl.method, c.pattern(cl.method, cl.path), resp.StatusCode)] = true
	c.mu.Unlock()
	return resp, body
}

// pattern returns the registered pattern that path matches.
func (c *contract) pattern(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	for _, r := range c.api.Routes() {
		if r.Method == method && matchPattern(r.Pattern, path) {
			return r.Pattern
		}
	}
	return path
}

func matchPattern(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], "{") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}

// decode unmarshals a response body.
func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

// documentOperations lists "METHOD path" of every operation in doc.
func documentOperations(t *testing.T, doc []byte) []string {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for p, item := range d.Paths {
		for m := range item {
			switch m {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				ops = append(ops, strings.ToUpper(m)+" "+p)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

func TestOpenAPIDocumentIsValid31(t *testing.T) {
	doc, err := httpapi.OpenAPIDocument(httpapi.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		t.Fatalf("building the v3 model: %v", err)
	}
	if !strings.HasPrefix(m.Model.Version, "3.1") {
		t.Errorf("version %q, want 3.1.x", m.Model.Version)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Errorf("the document breaks the OpenAPI 3.1 schema:%s", describe(verrs))
	}
}

func TestOpenAPIDocumentListsEveryRoute(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts httpapi.Options
	}{
		{"defaults", httpapi.Defaults()},
		{"moved areas", func() httpapi.Options {
			o := httpapi.Defaults()
			o.BaseURL, o.AuthURL = "/platform", "/auth"
			return o
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newContractServer(t, tc.opts)
			var routes []string
			for _, r := range c.Routes() {
				routes = append(routes, r.Method+" "+r.Pattern)
			}
			slices.Sort(routes)
			doc, err := httpapi.OpenAPIDocument(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(routes, documentOperations(t, doc)); diff != "" {
				t.Errorf("registered routes (-) and documented operations (+) differ:\n%s", diff)
			}
		})
	}
}

// newContractServer builds a Server without serving it.
func newContractServer(t *testing.T, opts httpapi.Options) *httpapi.Server {
	t.Helper()
	p, err := latchkey.New(context.Background(), latchkey.Config{
		Store: memstore.New(), MasterKey: seal.NewKey(),
		PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return httpapi.New(p, opts)
}

// tokens and ids the contract scenarios share.
type fixture struct {
	root       string // root admin JWT
	rootTenant string
	acme       struct{ id, code, admin, user string } // a second tenant, its admin JWT and a plain user's JWT
	userID     string                                 // the plain user's id
	client     struct{ id, secret string }            // an OAuth client of acme with two scopes
}

func login(t *testing.T, c *contract, name, password, domain string) identity.TokenResponse {
	t.Helper()
	_, body := c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: jsonBody(map[string]string{"name": name, "password": password, "auth_domain": domain}), want: 200})
	return decode[identity.TokenResponse](t, body)
}

func setup(t *testing.T, c *contract) fixture {
	t.Helper()
	var f fixture
	f.root = login(t, c, "admin", "admin-password-1", "root").JWT
	_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants", token: f.root, body: jsonBody(map[string]string{"name": "Acme", "code": "ACME000001"}), want: 201})
	acme := decode[map[string]any](t, body)
	f.acme.id, f.acme.code = acme["id"].(string), acme["code"].(string)
	base := "/api/v1/admin/tenants/" + f.acme.id
	c.do(t, call{method: "POST", path: base + "/users", token: f.root, body: jsonBody(map[string]any{"name": "acme-admin", "password": "acme-password-1", "roles": []string{"tenant-admin"}}), want: 201})
	_, body = c.do(t, call{method: "POST", path: base + "/users", token: f.root, body: jsonBody(map[string]any{"name": "alice", "password": "alice-password-1"}), want: 201})
	f.userID = decode[map[string]any](t, body)["id"].(string)
	f.acme.admin = login(t, c, "acme-admin", "acme-password-1", f.acme.code).JWT
	f.acme.user = login(t, c, "alice", "alice-password-1", strings.ToLower(f.acme.code)).JWT
	_, body = c.do(t, call{method: "POST", path: base + "/oauth-clients", token: f.acme.admin, body: jsonBody(map[string]any{"name": "exporter", "scopes": []string{"audit:export", "event:event:consumer"}, "role": "tenant-admin"}), want: 201})
	cl := decode[map[string]any](t, body)
	f.client.id, f.client.secret = cl["client_id"].(string), cl["client_secret"].(string)
	f.rootTenant = c.rootTenant
	return f
}

// contractArea is the contract scenarios of one API area, kept in its own
// file and registered with registerContractArea from an init function;
// TestContract runs them, in name order, on its server and fixture before
// its coverage check.
type contractArea struct {
	name string
	run  func(t *testing.T, c *contract, f fixture)
}

var contractAreas []contractArea

func registerContractArea(name string, run func(t *testing.T, c *contract, f fixture)) {
	contractAreas = append(contractAreas, contractArea{name, run})
	slices.SortStableFunc(contractAreas, func(a, b contractArea) int { return strings.Compare(a.name, b.name) })
}

// oversized is a JSON body larger than the default 1 MiB limit.
func oversized() []byte {
	return []byte(`{"name":"` + strings.Repeat("x", 1<<20) + `"}`)
}

func TestContract(t *testing.T) {
	c := newContract(t)
	f := setup(t, c)
	acme := "/api/v1/admin/tenants/" + f.acme.id
	unknownTenant := "/api/v1/admin/tenants/00000000-0000-4000-8000-000000000000"

	t.Run("public", func(t *testing.T) {
		c.do(t, call{method: "GET", path: "/healthz", want: 200})
		_, served := c.do(t, call{method: "GET", path: "/openapi.json", want: 200})
		if built, err := httpapi.OpenAPIDocument(httpapi.Defaults()); err != nil || !bytes.Equal(served, built) {
			t.Errorf("served document differs from OpenAPIDocument(Defaults()) (err %v)", err)
		}
		const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		resp, _ := c.do(t, call{method: "GET", path: "/healthz", header: http.Header{"Traceparent": {"00-" + traceID + "-00f067aa0ba902b7-01"}}, want: 200})
		if diff := cmp.Diff(traceID, resp.Header.Get("X-Trace-Id")); diff != "" {
			t.Errorf("X-Trace-Id (-want +got):\n%s", diff)
		}
		_, body := c.do(t, call{method: "GET", path: "/.well-known/jwks.json", want: 200})
		if keys := decode[map[string][]map[string]any](t, body)["keys"]; len(keys) == 0 {
			t.Error("JWKS has no key")
		}
		_, body = c.do(t, call{method: "GET", path: "/.well-known/oauth-authorization-server", want: 200})
		md := decode[map[string]any](t, body)
		if diff := cmp.Diff("http://127.0.0.1:8080/oauth/v1/token", md["token_endpoint"]); diff != "" {
			t.Errorf("token_endpoint (-want +got):\n%s", diff)
		}
	})

	t.Run("login", func(t *testing.T) {
		tok := login(t, c, "admin", "admin-password-1", "")
		if diff := cmp.Diff(identity.TokenResponse{JWT: tok.JWT, Duration: 300, TokenType: "Bearer", RefreshToken: tok.RefreshToken}, tok); diff != "" || tok.RefreshToken == "" {
			t.Errorf("token response (-want +got):\n%s", diff)
		}
		pw := func(name, password, domain string) []byte {
			return jsonBody(map[string]string{"name": name, "password": password, "auth_domain": domain})
		}
		for _, path := range []string{"/api/v1/auth/tokens/", "/api/v1/auth/tokens"} {
			t.Run(path, func(t *testing.T) {
				c.do(t, call{method: "POST", path: path, body: pw("admin", "admin-password-1", "ROOT"), want: 200})
				c.do(t, call{method: "POST", path: path, body: []byte(`{"name":`), req: reqInvalid, want: 400})
				c.do(t, call{method: "POST", path: path, body: pw("admin", "x", "root"), contentType: "text/plain", req: reqInvalid, want: 400})
				c.do(t, call{method: "POST", path: path, body: []byte(`{"name":"admin"}`), req: reqInvalid, want: 400})
				c.do(t, call{method: "POST", path: path, body: []byte(`{"grant_type":"magic"}`), req: reqInvalid, want: 400})
				c.do(t, call{method: "POST", path: path, body: oversized(), req: reqInvalid, want: 413})
				c.do(t, call{method: "POST", path: path, body: []byte(`{"name":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`), req: reqInvalid, want: 400})
				c.do(t, call{method: "POST", path: path, body: []byte(`{"name":"admin","password":"admin-password-1"} x`), req: reqInvalid, want: 400})
				c.do(t, call{method: "POST", path: path, body: pw("admin", "wrong-password", "root"), want: 401})
			})
		}
		t.Run("refresh", func(t *testing.T) {
			body := func(rt string) []byte {
				return jsonBody(map[string]string{"grant_type": "refresh_token", "refresh_token": rt})
			}
			_, b := c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: body(tok.RefreshToken), want: 200})
			if decode[identity.TokenResponse](t, b).RefreshToken == tok.RefreshToken {
				t.Error("refresh token not rotated")
			}
			c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: body(tok.RefreshToken), want: 401}) // spent
			c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: body("nonsense"), want: 401})
		})
		t.Run("client_credential without a client certificate", func(t *testing.T) {
			c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: jsonBody(map[string]string{"grant_type": "client_credential", "client_id": "0b6c2a9e-0000-4000-8000-000000000001"}), want: 401})
		})
		t.Run("bad credentials", func(t *testing.T) {
			resp, _ := c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: pw("admin", "wrong-password", "root"), want: 401})
			if resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: pw("admin", "admin-password-1", "NOSUCHTENA"), want: 401})
		})
		t.Run("throttled", func(t *testing.T) {
			for i, path := range []string{"/api/v1/auth/tokens/", "/api/v1/auth/tokens"} {
				name := fmt.Sprintf("mallory%d", i)
				for range 5 {
					c.do(t, call{method: "POST", path: path, body: pw(name, "guess-guess", "root"), want: 401})
				}
				resp, _ := c.do(t, call{method: "POST", path: path, body: pw(name, "guess-guess", "root"), want: 429})
				if resp.Header.Get("Retry-After") == "" {
					t.Error("429 without Retry-After")
				}
			}
		})
	})

	// unauthenticated runs the 401 cases every admin route shares.
	unauthenticated := func(t *testing.T, method, path string, body []byte) {
		t.Helper()
		c.do(t, call{method: method, path: path, body: body, req: reqInvalid, want: 401})
		c.do(t, call{method: method, path: path, body: body, token: "not.a.jwt", want: 401})
		c.do(t, call{method: method, path: path, body: body, header: http.Header{"Authorization": {"Basic YWRtaW46eA=="}}, req: reqInvalid, want: 401})
		// An OAuth access token is not a platform token.
		c.do(t, call{method: method, path: path, body: body, token: oauthToken(t, c, f.client.id, f.client.secret), want: 401})
	}

	t.Run("create tenant", func(t *testing.T) {
		p := "/api/v1/admin/tenants"
		_, body := c.do(t, call{method: "POST", path: p, token: f.root, body: jsonBody(map[string]string{"name": "Globex"}), want: 201})
		if code := decode[map[string]any](t, body)["code"].(string); len(code) != 10 {
			t.Errorf("generated code %q", code)
		}
		c.do(t, call{method: "POST", path: p, token: f.root, body: jsonBody(map[string]string{"name": "Acme again", "code": "ACME000001"}), want: 409})
		c.do(t, call{method: "POST", path: p, token: f.root, body: []byte(`{"name": [}`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.root, body: jsonBody(map[string]string{"name": "Lower", "code": "lower"}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.root, body: jsonBody(map[string]any{"name": 7}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.root, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]string{"name": "Mine"}), want: 403})
		unauthenticated(t, "POST", p, jsonBody(map[string]string{"name": "Nope"}))
	})

	t.Run("get tenant", func(t *testing.T) {
		_, body := c.do(t, call{method: "GET", path: acme, token: f.root, want: 200})
		if _, ok := decode[map[string]any](t, body)["settings"]; !ok {
			t.Error("GET tenant without settings")
		}
		c.do(t, call{method: "GET", path: acme, token: f.acme.admin, want: 200})
		c.do(t, call{method: "GET", path: "/api/v1/admin/tenants/" + f.rootTenant, token: f.acme.admin, want: 404}) // another tenant
		c.do(t, call{method: "GET", path: acme, token: f.acme.user, want: 403})
		c.do(t, call{method: "GET", path: unknownTenant, token: f.root, want: 404})
		c.do(t, call{method: "GET", path: "/api/v1/admin/tenants/not-a-guid", token: f.root, req: reqInvalid, want: 404})
		unauthenticated(t, "GET", acme, nil)
	})

	t.Run("update settings", func(t *testing.T) {
		p := acme + "/settings"
		patch := jsonBody(map[string]any{"fidoImportEnabled": false, "notificationRetentionSeconds": 3600, "webauthn": map[string]any{"rpId": "acme.example", "origins": []string{"https://acme.example"}}})
		_, body := c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: patch, want: 200})
		type settings struct {
			FIDOImportEnabled            bool
			NotificationRetentionSeconds int64
		}
		got := decode[struct{ Settings settings }](t, body).Settings
		if diff := cmp.Diff(settings{false, 3600}, got); diff != "" {
			t.Errorf("settings (-want +got):\n%s", diff)
		}
		c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: []byte(`{}`), want: 200})
		t.Run("empty plan", func(t *testing.T) {
			c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: []byte(`{"planFeatures": []}`), want: 200})
		})
		t.Run("webauthn without origins", func(t *testing.T) {
			c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: []byte(`{"webauthn": {"rpId": "acme.example"}}`), want: 200})
		})
		c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"notificationRetentionSeconds": 0}), req: reqInvalid, want: 400})
		c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"webauthn": map[string]any{"rpId": "acme.example", "origins": []string{"acme.example/path"}}}), req: reqInvalid, want: 400})
		c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: []byte(`{"fidoImportEnabled": tru`), req: reqInvalid, want: 400})
		c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "PATCH", path: "/api/v1/admin/tenants/" + f.rootTenant + "/settings", token: f.acme.admin, body: []byte(`{}`), want: 404})
		c.do(t, call{method: "PATCH", path: p, token: f.acme.user, body: []byte(`{}`), want: 403})
		c.do(t, call{method: "PATCH", path: unknownTenant + "/settings", token: f.root, body: []byte(`{}`), want: 404})
		unauthenticated(t, "PATCH", p, []byte(`{}`))
	})

	t.Run("create user", func(t *testing.T) {
		p := acme + "/users"
		user := func(name string) []byte {
			return jsonBody(map[string]any{"name": name, "password": "bob-password-1", "roles": []string{"user", "application-owner"}})
		}
		_, body := c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: user("bob"), want: 201})
		if diff := cmp.Diff([]any{"application-owner", "user"}, decode[map[string]any](t, body)["roles"]); diff != "" {
			t.Errorf("roles (-want +got):\n%s", diff)
		}
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: user("bob"), want: 409})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "carol", "password": "short"}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "carol", "password": "carol-password-1", "roles": []string{"god"}}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: []byte(`[`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.rootTenant + "/users", token: f.acme.admin, body: user("intruder"), want: 404})
		c.do(t, call{method: "POST", path: p, token: f.acme.user, body: user("eve"), want: 403})
		c.do(t, call{method: "POST", path: unknownTenant + "/users", token: f.root, body: user("nobody"), want: 404})
		unauthenticated(t, "POST", p, user("dave"))
	})

	t.Run("create OAuth client", func(t *testing.T) {
		p := acme + "/oauth-clients"
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "reader", "scopes": []string{"event:event:consumer"}}), want: 201})
		t.Run("without scopes", func(t *testing.T) {
			c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "bare"}), want: 201})
		})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "greedy", "scopes": []string{"root:everything"}}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": " padded "}), want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: []byte(`{"name":"x"} {}`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.rootTenant + "/oauth-clients", token: f.acme.admin, body: jsonBody(map[string]any{"name": "spy"}), want: 404})
		c.do(t, call{method: "POST", path: p, token: f.acme.user, body: jsonBody(map[string]any{"name": "mine"}), want: 403})
		c.do(t, call{method: "POST", path: unknownTenant + "/oauth-clients", token: f.root, body: jsonBody(map[string]any{"name": "x"}), want: 404})
		unauthenticated(t, "POST", p, jsonBody(map[string]any{"name": "x"}))
	})

	t.Run("create API key", func(t *testing.T) {
		p := acme + "/api-keys"
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "fido", "areas": []string{"authenticator"}}), want: 201})
		_, body := c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "alice's", "userId": f.userID, "areas": []string{"provisioning", "authenticator"}}), want: 201})
		if diff := cmp.Diff(f.userID, decode[map[string]any](t, body)["userId"]); diff != "" {
			t.Errorf("userId (-want +got):\n%s", diff)
		}
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "ghost's", "userId": "AAAAAAAAAAAAAAAAAAAAAA", "areas": []string{"authenticator"}}), want: 404})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "none", "areas": []string{}}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"name": "bad user", "userId": "!!", "areas": []string{"authenticator"}}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: []byte(`{"areas":"authenticator"}`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.rootTenant + "/api-keys", token: f.acme.admin, body: jsonBody(map[string]any{"name": "spy", "areas": []string{"authenticator"}}), want: 404})
		c.do(t, call{method: "POST", path: p, token: f.acme.user, body: jsonBody(map[string]any{"name": "mine", "areas": []string{"authenticator"}}), want: 403})
		c.do(t, call{method: "POST", path: unknownTenant + "/api-keys", token: f.root, body: jsonBody(map[string]any{"name": "x", "areas": []string{"authenticator"}}), want: 404})
		unauthenticated(t, "POST", p, jsonBody(map[string]any{"name": "x", "areas": []string{"authenticator"}}))
	})

	t.Run("OAuth token", func(t *testing.T) {
		const form = "application/x-www-form-urlencoded"
		tok := func(v url.Values, basic bool, req reqCheck, want int) []byte {
			t.Helper()
			cl := call{method: "POST", path: "/oauth/v1/token", body: []byte(v.Encode()), contentType: form, req: req, want: want}
			if basic {
				cl.header = http.Header{"Authorization": {"Basic " + basicAuth(url.QueryEscape(f.client.id), url.QueryEscape(f.client.secret))}}
			}
			_, body := c.do(t, cl)
			return body
		}
		cc := url.Values{"grant_type": {"client_credentials"}}
		post := url.Values{"grant_type": {"client_credentials"}, "client_id": {f.client.id}, "client_secret": {f.client.secret}}
		t.Run("client_secret_basic", func(t *testing.T) {
			got := decode[map[string]any](t, tok(cc, true, reqValid, 200))
			if got["access_token"] == "" {
				t.Error("no access_token")
			}
			delete(got, "access_token")
			if diff := cmp.Diff(map[string]any{"token_type": "Bearer", "expires_in": float64(3600), "scope": "audit:export event:event:consumer"}, got); diff != "" {
				t.Errorf("token response (-want +got):\n%s", diff)
			}
		})
		t.Run("client_secret_post", func(t *testing.T) {
			tok(post, false, reqValid, 200)
			withScope := url.Values{"grant_type": {"client_credentials"}, "client_id": {f.client.id}, "client_secret": {f.client.secret}, "scope": {"event:event:consumer"}}
			if got := decode[map[string]any](t, tok(withScope, false, reqValid, 200))["scope"]; got != "event:event:consumer" {
				t.Errorf("scope %v", got)
			}
		})
		oauthError := func(t *testing.T, body []byte, want string) {
			t.Helper()
			if got := decode[map[string]any](t, body)["error"]; got != want {
				t.Errorf("error %v, want %s", got, want)
			}
		}
		t.Run("invalid_client", func(t *testing.T) {
			// RFC 6749 §5.2: 400 without a challenge unless the client used HTTP Basic.
			oauthError(t, tok(url.Values{"grant_type": {"client_credentials"}, "client_id": {f.client.id}, "client_secret": {"wrong"}}, false, reqValid, 400), "invalid_client")
			oauthError(t, tok(cc, false, reqValid, 400), "invalid_client")
			oauthError(t, tok(url.Values{"grant_type": {"client_credentials"}, "client_id": {"lkc_nosuchclient"}, "client_secret": {"x"}}, false, reqValid, 400), "invalid_client")
			resp, body := c.do(t, call{method: "POST", path: "/oauth/v1/token", body: []byte(cc.Encode()), contentType: form, want: 401,
				header: http.Header{"Authorization": {"Basic " + basicAuth(url.QueryEscape(f.client.id), "wrong")}}})
			oauthError(t, body, "invalid_client")
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Basic ") {
				t.Errorf("WWW-Authenticate %q, want a Basic challenge", got)
			}
		})
		t.Run("introspect and revoke", func(t *testing.T) {
			access := oauthToken(t, c, f.client.id, f.client.secret)
			creds := url.Values{"client_id": {f.client.id}, "client_secret": {f.client.secret}}
			with := func(v url.Values, kv ...string) []byte {
				w := url.Values{}
				for k, x := range v {
					w[k] = x
				}
				for i := 0; i+1 < len(kv); i += 2 {
					w.Set(kv[i], kv[i+1])
				}
				return []byte(w.Encode())
			}
			_, body := c.do(t, call{method: "POST", path: "/oauth/v1/introspect", body: with(creds, "token", access), contentType: form, want: 200})
			if got := decode[map[string]any](t, body); got["active"] != true || got["client_id"] != f.client.id || got["token_type"] != "Bearer" {
				t.Errorf("introspection %v", got)
			}
			_, body = c.do(t, call{method: "POST", path: "/oauth/v1/introspect", body: with(creds, "token", "not-a-token"), contentType: form, want: 200})
			if diff := cmp.Diff(map[string]any{"active": false}, decode[map[string]any](t, body)); diff != "" {
				t.Errorf("introspection of garbage (-want +got):\n%s", diff)
			}
			_, body = c.do(t, call{method: "POST", path: "/oauth/v1/introspect", body: with(creds, "client_secret", "wrong", "token", access), contentType: form, want: 400})
			oauthError(t, body, "invalid_client")
			_, body = c.do(t, call{method: "POST", path: "/oauth/v1/introspect", body: with(url.Values{"token": {access}}), contentType: form, want: 401,
				header: http.Header{"Authorization": {"Basic " + basicAuth(url.QueryEscape(f.client.id), "wrong")}}})
			oauthError(t, body, "invalid_client")
			_, body = c.do(t, call{method: "POST", path: "/oauth/v1/revoke", body: with(creds), contentType: form, req: reqInvalid, want: 400})
			oauthError(t, body, "invalid_request")
			_, body = c.do(t, call{method: "POST", path: "/oauth/v1/revoke", body: with(creds, "client_secret", "wrong", "token", access), contentType: form, want: 400})
			oauthError(t, body, "invalid_client")
			_, body = c.do(t, call{method: "POST", path: "/oauth/v1/revoke", body: with(url.Values{"token": {access}}), contentType: form, want: 401,
				header: http.Header{"Authorization": {"Basic " + basicAuth(url.QueryEscape(f.client.id), "wrong")}}})
			oauthError(t, body, "invalid_client")
			c.do(t, call{method: "POST", path: "/oauth/v1/revoke", body: with(creds, "token", access, "token_type_hint", "access_token"), contentType: form, want: 200})
			_, body = c.do(t, call{method: "POST", path: "/oauth/v1/introspect", body: with(creds, "token", access), contentType: form, want: 200})
			if got := decode[map[string]any](t, body)["active"]; got != false {
				t.Errorf("revoked token introspects as active=%v", got)
			}
			c.do(t, call{method: "POST", path: "/oauth/v1/introspect", body: []byte("token=" + strings.Repeat("a", 64<<10)), contentType: form, want: 413})
			c.do(t, call{method: "POST", path: "/oauth/v1/revoke", body: []byte("token=" + strings.Repeat("a", 64<<10)), contentType: form, want: 413})
		})
		t.Run("unsupported_grant_type", func(t *testing.T) {
			oauthError(t, tok(url.Values{"grant_type": {"password"}, "client_id": {f.client.id}, "client_secret": {f.client.secret}}, false, reqInvalid, 400), "unsupported_grant_type")
		})
		t.Run("invalid_scope", func(t *testing.T) {
			oauthError(t, tok(url.Values{"grant_type": {"client_credentials"}, "client_id": {f.client.id}, "client_secret": {f.client.secret}, "scope": {"notification:consent:administrator"}}, false, reqValid, 400), "invalid_scope")
		})
		t.Run("invalid_request", func(t *testing.T) {
			oauthError(t, tok(url.Values{"client_id": {f.client.id}, "client_secret": {f.client.secret}}, false, reqInvalid, 400), "invalid_request")
			oauthError(t, tok(post, true, reqProse, 400), "invalid_request") // two authentication methods
			_, body := c.do(t, call{method: "POST", path: "/oauth/v1/token", body: jsonBody(map[string]string{"grant_type": "client_credentials"}), req: reqInvalid, want: 400})
			oauthError(t, body, "invalid_request")
			_, body = c.do(t, call{method: "POST", path: "/oauth/v1/token", body: []byte("grant_type=client_credentials&grant_type=client_credentials&client_id=" + f.client.id + "&client_secret=" + f.client.secret), contentType: form, req: reqProse, want: 400}) // repeated parameter
			oauthError(t, body, "invalid_request")
			_, body = c.do(t, call{method: "POST", path: "/oauth/v1/token", body: []byte("grant_type=client_credentials&client_id=%zz"), contentType: form, req: reqInvalid, want: 400})
			oauthError(t, body, "invalid_request")
		})
		t.Run("oversized", func(t *testing.T) {
			_, body := c.do(t, call{method: "POST", path: "/oauth/v1/token", body: []byte("grant_type=client_credentials&scope=" + strings.Repeat("a", 64<<10)), contentType: form, want: 413})
			oauthError(t, body, "invalid_request")
		})
	})

	// The scenarios of areas kept in their own files (contract_*_test.go).
	for _, a := range contractAreas {
		t.Run(a.name, func(t *testing.T) { a.run(t, c, f) })
	}

	t.Run("coverage", func(t *testing.T) {
		var ops []string
		for _, r := range c.api.Routes() {
			ops = append(ops, r.Method+" "+r.Pattern)
		}
		for _, op := range ops {
			found := false
			for k := range c.covered {
				if strings.HasPrefix(k, op+" ") {
					found = true
				}
			}
			if !found {
				t.Errorf("route %s was not exercised", op)
			}
		}
		// Documented statuses no scenario produced (500 and 503 need a
		// failing store or audit log) are listed for the reader.
		var doc struct {
			Paths map[string]map[string]json.RawMessage
		}
		if err := json.Unmarshal(c.doc, &doc); err != nil {
			t.Fatal(err)
		}
		var missing []string
		for p, item := range doc.Paths {
			for m, raw := range item {
				if m == "parameters" || m == "summary" || m == "description" || m == "servers" || strings.HasPrefix(m, "x-") {
					continue
				}
				var op struct{ Responses map[string]json.RawMessage }
				if err := json.Unmarshal(raw, &op); err != nil {
					t.Fatal(err)
				}
				for code := range op.Responses {
					if k := strings.ToUpper(m) + " " + p + " " + code; !c.covered[k] {
						missing = append(missing, k)
					}
				}
			}
		}
		slices.Sort(missing)
		for _, m := range missing {
			if !strings.HasSuffix(m, " 500") && !strings.HasSuffix(m, " 503") && producedElsewhere[m] == "" {
				t.Errorf("documented response not exercised: %s", m)
			}
		}
	})
}

func basicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// oauthToken gets an access token by client_secret_post, outside the contract checks.
func oauthToken(t *testing.T, c *contract, id, secret string) string {
	t.Helper()
	resp, err := c.client.PostForm(c.srv.URL+"/oauth/v1/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.AccessToken == "" {
		t.Fatalf("access token: %d %v", resp.StatusCode, err)
	}
	return body.AccessToken
}

// producedElsewhere names, for documented responses that no contract
// scenario can produce without disturbing the others, the test that does.
var producedElsewhere = map[string]string{
	// 50 failed registrations would throttle every later registration from
	// this test's loopback address.
	"POST /api/v1/client-management/clients 429":  "identity/clients TestRegisterThrottlesFailuresPerAddress",
	"POST /api/v1/client-management/clients/ 429": "identity/clients TestRegisterThrottlesFailuresPerAddress",
	// Upstream sign-in's browser answers need an upstream OpenID Provider
	// (internal/oidctest) and a signed-in browser.
	"GET /oauth/v1/federation/{tenantCode}/{providerId}/callback 200": "httpapi TestFederationSignIn (the refusal and confirmation pages)",
	"GET /oauth/v1/federation/{tenantCode}/{providerId}/callback 303": "httpapi TestFederationSignIn (back to the relying party)",
	"GET /oauth/v1/account/identities 200":                            "httpapi TestFederationLinking",
	"POST /oauth/v1/account/identities 303":                           "httpapi TestFederationLinking (connect goes to the provider)",
	"POST /oauth/v1/account/identities 403":                           "httpapi TestFederationLinking (no CSRF token)",
	"POST /oauth/v1/account/identities 400":                           "httpapi TestFederationLinking (an unknown action)",
	"POST /oauth/v1/account/identities 404":                           "httpapi TestFederationLinking (disconnecting a provider with no link)",
	"GET /oauth/v1/federation/{tenantCode}/{providerId}/callback 409": "httpapi TestFederationLinking (connecting an identity linked to someone else)",
	"GET /oauth/v1/federation/{tenantCode}/{providerId}/callback 429": "httpapi TestFederationFailuresThrottle (a throttled user signing in through the upstream)",
	"DELETE /api/v1/me/identities/{providerId} 409":                   "httpapi TestFederationLinking (a JIT user's only link)",
	"POST /oauth/v1/account/identities 409":                           "httpapi TestFederationLinking (linked to someone else; the last way to sign in)",
}
