package httpapi_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

// FuzzEveryRouteBody sends arbitrary bodies to every registered route, with
// a valid credential of the route's kind, and requires a non-5xx answer: no
// body may crash a handler or surface as an internal error. New routes are
// fuzzed without being listed here.
func FuzzEveryRouteBody(f *testing.F) {
	e := latchkeytest.New(f)
	root := latchkeytest.Tenant{ID: e.Root.ID, Code: e.Root.Code, AdminToken: e.AdminToken()}
	oauth := e.AuditClient(root, identity.RoleTenantAdmin, identity.AllScopes...)
	apiKey := e.APIKey(root, "", identity.AreaAuthenticator, identity.AreaProvisioning)
	routes := e.Handler.Routes()
	param := regexp.MustCompile(`\{([A-Za-z]+)\}`)

	for i := range routes {
		for _, seed := range []string{`{}`, `{"name":"x","password":"yyyyyyyy"}`, `[]`, `{"a":{"b":[1,2,{"c":null}]}}`, `"str"`, ``, `{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z"}`, "\x00\xff"} {
			f.Add(uint8(i), seed, "x")
		}
	}
	f.Fuzz(func(t *testing.T, pick uint8, body, pathValue string) {
		r := routes[int(pick)%len(routes)]
		if pathValue == "" || pathValue == "." || pathValue == ".." {
			pathValue = "x"
		}
		pathValue = url.PathEscape(pathValue)
		path := param.ReplaceAllStringFunc(r.Pattern, func(m string) string {
			if m == "{tenantId}" {
				return e.Root.ID
			}
			return pathValue
		})
		var hdr []string
		switch {
		case r.Auth == "platform-jwt", r.Auth == "platform-jwt-or-mfa-enrollment":
			hdr = append(hdr, bearer(root.AdminToken))
		case strings.HasPrefix(r.Auth, "oauth:"):
			hdr = append(hdr, bearer(oauth))
		case strings.HasPrefix(r.Auth, "apikey:"):
			hdr = append(hdr, "Authorization: Bearer "+apiKey)
		}
		resp := e.For(t).Do(r.Method, path, []byte(body), hdr...)
		if resp.Status >= 500 {
			t.Fatalf("%s %s with body %q: %d %s", r.Method, path, body, resp.Status, resp.Body)
		}
	})
}
