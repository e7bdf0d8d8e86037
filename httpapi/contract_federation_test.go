package httpapi_test

import (
	"net/url"
	"testing"
)

// Contract scenarios of upstream sign-in (API-federation.md): the
// providers' admin routes, a user's linked identities (self-service and
// admin), the account page's refusals and the callback's. A GitHub
// provider needs no discovery, so the contract's server reaches nothing
// outside; the answers that need a signed-in upstream round trip are
// produced by the federation tests named in producedElsewhere.

func init() {
	registerContractArea("federation", contractFederation)
}

func contractFederation(t *testing.T, c *contract, f fixture) {
	acme := "/api/v1/admin/tenants/" + f.acme.id
	root := "/api/v1/admin/tenants/" + f.rootTenant
	base := acme + "/identity-providers"
	gh := map[string]any{"id": "gh", "displayName": "GitHub", "type": "github", "clientId": "Iv1.contract", "clientSecret": "contract-secret"}
	t.Run("providers", func(t *testing.T) {
		c.do(t, call{method: "POST", path: base, token: f.acme.admin, body: jsonBody(gh), want: 201})
		c.do(t, call{method: "POST", path: base, token: f.acme.admin, body: jsonBody(gh), req: reqProse, want: 409})
		bad := map[string]any{"id": "Bad Id!", "displayName": "x", "type": "github", "clientId": "a", "clientSecret": "b"}
		c.do(t, call{method: "POST", path: base, token: f.acme.admin, body: jsonBody(bad), req: reqProse, want: 400})
		c.do(t, call{method: "POST", path: base, token: f.acme.user, body: jsonBody(gh), want: 403})
		c.do(t, call{method: "POST", path: root + "/identity-providers", token: f.acme.admin, body: jsonBody(gh), want: 404})
		platformUnauthenticated(t, c, f, "POST", base, jsonBody(gh))

		c.do(t, call{method: "GET", path: base, token: f.acme.admin, want: 200})
		c.do(t, call{method: "GET", path: base, token: f.acme.user, want: 403})
		c.do(t, call{method: "GET", path: root + "/identity-providers", token: f.acme.admin, want: 404})
		platformUnauthenticated(t, c, f, "GET", base, nil)

		c.do(t, call{method: "GET", path: base + "/gh", token: f.acme.admin, want: 200})
		c.do(t, call{method: "GET", path: base + "/nope", token: f.acme.admin, want: 404})
		c.do(t, call{method: "GET", path: base + "/gh", token: f.acme.user, want: 403})
		platformUnauthenticated(t, c, f, "GET", base+"/gh", nil)

		c.do(t, call{method: "PATCH", path: base + "/gh", token: f.acme.admin, body: jsonBody(map[string]any{"displayName": "GitHub (corp)"}), want: 200})
		c.do(t, call{method: "PATCH", path: base + "/gh", token: f.acme.admin, body: jsonBody(map[string]any{"scopes": []string{}}), req: reqProse, want: 400})
		c.do(t, call{method: "PATCH", path: base + "/nope", token: f.acme.admin, body: jsonBody(map[string]any{"displayName": "x"}), want: 404})
		c.do(t, call{method: "PATCH", path: base + "/gh", token: f.acme.user, body: jsonBody(map[string]any{"displayName": "x"}), want: 403})
		platformUnauthenticated(t, c, f, "PATCH", base+"/gh", jsonBody(map[string]any{"displayName": "x"}))
	})
	t.Run("identities", func(t *testing.T) {
		users := acme + "/users/" + f.userID + "/identities"
		link := map[string]any{"providerId": "gh", "subject": "4242"}
		c.do(t, call{method: "POST", path: users, token: f.acme.admin, body: jsonBody(link), want: 201})
		c.do(t, call{method: "POST", path: users, token: f.acme.admin, body: jsonBody(link), req: reqProse, want: 409})
		c.do(t, call{method: "POST", path: users, token: f.acme.admin, body: jsonBody(map[string]any{"providerId": "nope", "subject": "1"}), req: reqProse, want: 400})
		c.do(t, call{method: "POST", path: users, token: f.acme.user, body: jsonBody(link), want: 403})
		c.do(t, call{method: "POST", path: acme + "/users/00000000-0000-0000-0000-000000000000/identities", token: f.acme.admin, body: jsonBody(link), want: 404})
		platformUnauthenticated(t, c, f, "POST", users, jsonBody(link))

		c.do(t, call{method: "GET", path: users, token: f.acme.admin, want: 200})
		c.do(t, call{method: "GET", path: users, token: f.acme.user, want: 403})
		c.do(t, call{method: "GET", path: acme + "/users/00000000-0000-0000-0000-000000000000/identities", token: f.acme.admin, want: 404})
		platformUnauthenticated(t, c, f, "GET", users, nil)

		c.do(t, call{method: "GET", path: "/api/v1/me/identities", token: f.acme.user, want: 200})
		// A registered client's platform JWT has no user behind it.
		robot := clientJWT(t, c, f.acme.id, f.acme.code)
		c.do(t, call{method: "GET", path: "/api/v1/me/identities", token: robot, want: 403})
		c.do(t, call{method: "DELETE", path: "/api/v1/me/identities/gh", token: robot, want: 403})
		platformUnauthenticated(t, c, f, "GET", "/api/v1/me/identities", nil)
		// alice has a password: unlinking GitHub leaves her a way in.
		c.do(t, call{method: "DELETE", path: "/api/v1/me/identities/nope", token: f.acme.user, want: 404})
		platformUnauthenticated(t, c, f, "DELETE", "/api/v1/me/identities/gh", nil)
		c.do(t, call{method: "DELETE", path: "/api/v1/me/identities/gh", token: f.acme.user, want: 204})

		c.do(t, call{method: "POST", path: users, token: f.acme.admin, body: jsonBody(link), want: 201})
		c.do(t, call{method: "DELETE", path: users + "/gh", token: f.acme.user, want: 403})
		platformUnauthenticated(t, c, f, "DELETE", users+"/gh", nil)
		c.do(t, call{method: "DELETE", path: users + "/gh", token: f.acme.admin, want: 204})
		c.do(t, call{method: "DELETE", path: users + "/gh", token: f.acme.admin, want: 404})
	})
	t.Run("account page and callback", func(t *testing.T) {
		// Without a session the account page is 401; without the flow's
		// cookie a callback is the error page (400), never a redirect.
		c.do(t, call{method: "GET", path: "/oauth/v1/account/identities", want: 401})
		form := url.Values{"action": {"connect"}, "provider": {"gh"}}
		c.do(t, call{method: "POST", path: "/oauth/v1/account/identities", body: []byte(form.Encode()), contentType: "application/x-www-form-urlencoded", want: 401})
		c.do(t, call{method: "GET", path: "/oauth/v1/federation/" + f.acme.code + "/gh/callback?code=x&state=y", want: 400})
	})
	t.Run("delete provider", func(t *testing.T) {
		c.do(t, call{method: "DELETE", path: base + "/gh", token: f.acme.user, want: 403})
		platformUnauthenticated(t, c, f, "DELETE", base+"/gh", nil)
		c.do(t, call{method: "DELETE", path: base + "/gh", token: f.acme.admin, want: 204})
		c.do(t, call{method: "DELETE", path: base + "/gh", token: f.acme.admin, want: 404})
	})
}
