package httpapi_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/identity"
)

// Contract scenarios of area B, audit-log export: service instances, export
// jobs and the signed archive download.

func init() {
	registerContractArea("audit", contractAudit)
}

// auditToken creates an OAuth client of acme with role and scopes and
// returns an access token of it.
func auditToken(t *testing.T, c *contract, f fixture, role string, scopes ...string) string {
	t.Helper()
	_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/oauth-clients", token: f.acme.admin,
		body: jsonBody(map[string]any{"name": "audit " + role, "scopes": scopes, "role": role}), want: 201})
	cl := decode[map[string]any](t, body)
	return oauthToken(t, c, cl["client_id"].(string), cl["client_secret"].(string))
}

func contractAudit(t *testing.T, c *contract, f fixture) {
	tok := oauthToken(t, c, f.client.id, f.client.secret) // audit:export, tenant-admin
	noScope := auditToken(t, c, f, identity.RoleTenantAdmin, identity.ScopeEventConsumer)
	noRole := auditToken(t, c, f, identity.RoleUser, identity.ScopeAuditExport)
	// unauthenticated runs the 401 cases: no token, garbage, and a platform
	// JWT, which is not an OAuth access token.
	unauthenticated := func(t *testing.T, method, path string, body []byte) {
		t.Helper()
		for _, cl := range []call{
			// The validator does not check oauth2 security requirements, so a
			// request without a token is not seen to break the document.
			{req: reqProse},
			{token: "not.a.jwt"},
			{token: f.acme.admin},
		} {
			cl.method, cl.path, cl.body, cl.want = method, path, body, 401
			resp, _ := c.do(t, cl)
			if resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: 401 without WWW-Authenticate", method, path)
			}
		}
	}
	forbidden := func(t *testing.T, method, path string, body []byte) {
		t.Helper()
		c.do(t, call{method: method, path: path, body: body, token: noScope, want: 403})
		c.do(t, call{method: method, path: path, body: body, token: noRole, want: 403})
	}

	t.Run("signing keys", func(t *testing.T) {
		p := "/audit/v1/signing-keys"
		_, body := c.do(t, call{method: "GET", path: p, token: tok, want: 200})
		if keys := decode[struct {
			Keys []struct{ Kid, Status string }
		}](t, body).Keys; len(keys) == 0 || keys[0].Kid == "" || keys[0].Status != "current" {
			t.Errorf("signing keys %s", body)
		}
		c.do(t, call{method: "GET", path: p, want: 401})
		c.do(t, call{method: "GET", path: p, token: noScope, want: 403})
	})

	t.Run("service instances", func(t *testing.T) {
		p := "/audit/v1/service_instances"
		_, body := c.do(t, call{method: "GET", path: p, token: tok, want: 200})
		page := decode[struct {
			Content                   []struct{ Source string }
			TotalElements, TotalPages int
		}](t, body)
		if page.TotalElements != 7 || len(page.Content) != 7 || page.TotalPages != 1 {
			t.Errorf("instances %s", body)
		}
		c.do(t, call{method: "GET", path: p + "?page=3&size=2", token: tok, want: 200})
		c.do(t, call{method: "GET", path: p + "?page=100&size=100", token: tok, want: 200})
		_, body = c.do(t, call{method: "GET", path: p + "?size=0", token: tok, req: reqInvalid, want: 400})
		if !strings.Contains(string(body), `"errors":{"size":`) {
			t.Errorf("validation body %s", body)
		}
		c.do(t, call{method: "GET", path: p + "?size=101", token: tok, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: p + "?page=-1", token: tok, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: p + "?page=first", token: tok, req: reqInvalid, want: 400})
		forbidden(t, "GET", p, nil)
		unauthenticated(t, "GET", p, nil)
	})

	const exports = "/audit/v1/audit-log-exports"
	var jobID string
	t.Run("start export", func(t *testing.T) {
		day := jsonBody(map[string]any{"from": "2026-03-01T00:00:00Z", "to": "2026-03-01 09:00:00.000000"})
		_, body := c.do(t, call{method: "POST", path: exports, token: tok, body: day, want: 202})
		jobID = decode[map[string]any](t, body)["jobId"].(string)
		c.do(t, call{method: "POST", path: exports, token: tok, want: 202, body: jsonBody(map[string]any{
			"from": "2026-02-01T00:00:00+01:00", "to": "2100-01-01T00:00:00Z", "source": "latchkey-platform", "status": "failed", "resourceId": nil, "actorId": "", "action": "auth.login"})})
		_, body = c.do(t, call{method: "POST", path: exports, token: tok, body: jsonBody(map[string]any{"from": "2026-03-01T09:00:00Z", "to": "2026-03-01T08:00:00Z"}), want: 400})
		if !strings.Contains(string(body), `"errors":{"from":`) {
			t.Errorf("validation body %s", body)
		}
		c.do(t, call{method: "POST", path: exports, token: tok, body: jsonBody(map[string]any{"from": "yesterday", "to": "2026-03-01T08:00:00Z"}), want: 400})
		c.do(t, call{method: "POST", path: exports, token: tok, body: jsonBody(map[string]any{"to": "2026-03-01T08:00:00Z"}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: exports, token: tok, body: jsonBody(map[string]any{"from": "2026-03-01T00:00:00Z", "to": "2026-03-01T08:00:00Z", "status": "maybe"}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: exports, token: tok, body: jsonBody(map[string]any{"from": "2026-03-01T00:00:00Z", "to": "2026-03-01T08:00:00Z", "source": "latchkey-nothing"}), req: reqInvalid, want: 400})
		_, body = c.do(t, call{method: "POST", path: exports, token: tok, body: []byte(`{"from":`), req: reqInvalid, want: 400})
		if !strings.Contains(string(body), `"detail"`) {
			t.Errorf("malformed JSON answered %s, want the problem shape", body)
		}
		c.do(t, call{method: "POST", path: exports, token: tok, body: day, contentType: "text/plain", req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: exports, token: tok, body: oversized(), req: reqInvalid, want: 413})
		forbidden(t, "POST", exports, day)
		unauthenticated(t, "POST", exports, day)
	})

	var location, digestLocation string
	t.Run("get export", func(t *testing.T) {
		p := exports + "/" + jobID
		_, body := c.do(t, call{method: "GET", path: p, token: tok, want: 200})
		if got := decode[map[string]any](t, body); got["state"] != "ACTIVE" || got["location"] != nil || got["digestLocation"] != nil || got["endedAt"] != nil {
			t.Errorf("queued job %s", body)
		}
		if _, err := c.p.Exports.RunPending(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, body = c.do(t, call{method: "GET", path: p, token: tok, want: 200})
		got := decode[map[string]any](t, body)
		if got["state"] != "SUCCEEDED" {
			t.Fatalf("job %s", body)
		}
		location, _ = got["location"].(string)
		digestLocation, _ = got["digestLocation"].(string)
		c.do(t, call{method: "GET", path: exports + "/00000000-0000-4000-8000-000000000000", token: tok, want: 404})
		c.do(t, call{method: "GET", path: exports + "/not-a-job", token: tok, want: 404})
		forbidden(t, "GET", p, nil)
		unauthenticated(t, "GET", p, nil)
	})

	t.Run("download integrity file", func(t *testing.T) {
		u, err := url.Parse(digestLocation)
		if err != nil || !strings.HasPrefix(digestLocation, "http://127.0.0.1:8080/audit/v1/archives/"+jobID+"/integrity?") {
			t.Fatalf("digestLocation %q (%v)", digestLocation, err)
		}
		p := u.RequestURI()
		resp, body := c.do(t, call{method: "GET", path: p, want: 200})
		if resp.Header.Get("Content-Type") != "application/zip" || !strings.HasPrefix(string(body), "PK\x03\x04") {
			t.Errorf("integrity file: %s %q", resp.Header.Get("Content-Type"), body[:min(len(body), 8)])
		}
		c.do(t, call{method: "GET", path: p, header: http.Header{"Range": {"bytes=0-3"}}, want: 206})
		c.do(t, call{method: "GET", path: p, header: http.Header{"If-Modified-Since": {"Fri, 01 Jan 2100 00:00:00 GMT"}}, want: 304})
		c.do(t, call{method: "GET", path: p, header: http.Header{"If-Unmodified-Since": {"Sat, 01 Jan 2000 00:00:00 GMT"}}, want: 412})
		c.do(t, call{method: "GET", path: p, header: http.Header{"Range": {"bytes=99999999-"}}, want: 416})
		q := u.Query()
		q.Set("sig", strings.Repeat("A", len(q.Get("sig"))))
		c.do(t, call{method: "GET", path: u.Path + "?" + q.Encode(), want: 403})
		// The archive's link does not open the integrity file.
		if loc, err := url.Parse(location); err == nil {
			c.do(t, call{method: "GET", path: u.Path + "?" + loc.RawQuery, want: 403})
		}
		// An authentic link whose file is gone.
		files, _ := filepath.Glob(filepath.Join(c.archiveDir, "*.integrity.zip"))
		for _, f := range files {
			os.Remove(f)
		}
		c.do(t, call{method: "GET", path: p, want: 404})
	})

	t.Run("download archive", func(t *testing.T) {
		u, err := url.Parse(location)
		if err != nil || !strings.HasPrefix(location, "http://127.0.0.1:8080/audit/v1/archives/"+jobID+"?") {
			t.Fatalf("location %q (%v)", location, err)
		}
		p := u.RequestURI()
		resp, body := c.do(t, call{method: "GET", path: p, want: 200})
		if resp.Header.Get("Content-Type") != "application/zip" || !strings.HasPrefix(string(body), "PK\x03\x04") {
			t.Errorf("archive: %s %q", resp.Header.Get("Content-Type"), body[:min(len(body), 8)])
		}
		resp, body = c.do(t, call{method: "GET", path: p, header: http.Header{"Range": {"bytes=0-3"}}, want: 206})
		if string(body) != "PK\x03\x04" || resp.Header.Get("Content-Range") == "" {
			t.Errorf("range: %q %q", body, resp.Header.Get("Content-Range"))
		}
		c.do(t, call{method: "GET", path: p, header: http.Header{"If-Modified-Since": {"Fri, 01 Jan 2100 00:00:00 GMT"}}, want: 304})
		_, body = c.do(t, call{method: "GET", path: p, header: http.Header{"If-Unmodified-Since": {"Sat, 01 Jan 2000 00:00:00 GMT"}}, want: 412})
		if !strings.Contains(string(body), `"status":412`) {
			t.Errorf("412 body %s", body)
		}
		resp, body = c.do(t, call{method: "GET", path: p, header: http.Header{"Range": {"bytes=99999999-"}}, want: 416})
		if !strings.Contains(string(body), `"status":416`) || !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes */") {
			t.Errorf("416: %s %q", body, resp.Header.Get("Content-Range"))
		}
		q := u.Query()
		q.Set("sig", strings.Repeat("A", len(q.Get("sig"))))
		c.do(t, call{method: "GET", path: u.Path + "?" + q.Encode(), want: 403})
		q = u.Query()
		q.Set("expires", "1")
		c.do(t, call{method: "GET", path: u.Path + "?" + q.Encode(), want: 403})
		c.do(t, call{method: "GET", path: u.Path + "?" + url.Values{"tenant": {f.acme.id}}.Encode(), req: reqInvalid, want: 403})
		// An authentic link whose archive file is gone (a process that does
		// not share the archive directory).
		files, _ := filepath.Glob(filepath.Join(c.archiveDir, "*"))
		for _, f := range files {
			os.RemoveAll(f)
		}
		c.do(t, call{method: "GET", path: p, want: 404})
	})
}
