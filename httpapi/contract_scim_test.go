package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/identity"
)

// Contract scenarios of the SCIM 2.0 service provider (/scim/v2).

func init() {
	registerContractArea("scim", contractSCIM)
}

const (
	scimGroupURN  = "urn:ietf:params:scim:schemas:core:2.0:Group"
	scimPatchURN  = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	scimSearchURN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
)

// scimAPIKey creates an API key of acme with the given areas.
func scimAPIKey(t *testing.T, c *contract, f fixture, areas ...string) string {
	t.Helper()
	_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/api-keys", token: f.acme.admin,
		body: jsonBody(map[string]any{"name": "scim", "areas": areas}), want: 201})
	return decode[map[string]any](t, body)["key"].(string)
}

func scimCall(method, path, key string, body []byte, want int) call {
	cl := call{method: method, path: path, token: key, body: body, want: want}
	if body != nil {
		cl.contentType = "application/scim+json"
	}
	return cl
}

func contractSCIM(t *testing.T, c *contract, f fixture) {
	const b = "/scim/v2"
	key := scimAPIKey(t, c, f, "scim")
	authnKey := scimAPIKey(t, c, f, "authenticator")
	group := func(name string, members ...string) []byte {
		var ms []any
		for _, m := range members {
			ms = append(ms, map[string]any{"value": m})
		}
		g := map[string]any{"schemas": []string{scimGroupURN}, "displayName": name}
		if ms != nil {
			g["members"] = ms
		}
		return jsonBody(g)
	}
	patch := func(ops ...map[string]any) []byte {
		return jsonBody(map[string]any{"schemas": []string{scimPatchURN}, "Operations": ops})
	}
	var gid string
	t.Run("discovery", func(t *testing.T) {
		c.do(t, scimCall("GET", b+"/ServiceProviderConfig", key, nil, 200))
		c.do(t, scimCall("GET", b+"/ResourceTypes", key, nil, 200))
		c.do(t, scimCall("GET", b+"/ResourceTypes/Group", key, nil, 200))
		c.do(t, scimCall("GET", b+"/ResourceTypes/Device", key, nil, 404))
		c.do(t, scimCall("GET", b+"/Schemas", key, nil, 200))
		c.do(t, scimCall("GET", b+"/Schemas/urn:ietf:params:scim:schemas:extension:enterprise:2.0:User", key, nil, 200))
		c.do(t, scimCall("GET", b+"/Schemas/urn:x", key, nil, 404))
	})
	t.Run("create group", func(t *testing.T) {
		_, body := c.do(t, scimCall("POST", b+"/Groups", key, group("Sales", f.userID), 201))
		gid = decode[map[string]any](t, body)["id"].(string)
		c.do(t, scimCall("POST", b+"/Groups", key, group("Support"), 201))
		c.do(t, scimCall("POST", b+"/Groups", key, group("SALES"), 409))
		noSchemas := scimCall("POST", b+"/Groups", key, jsonBody(map[string]any{"displayName": "x"}), 400)
		noSchemas.req = reqInvalid
		c.do(t, noSchemas)
		bad := scimCall("POST", b+"/Groups", key, []byte(`{"schemas":`), 400)
		bad.req = reqInvalid
		c.do(t, bad)
		big := scimCall("POST", b+"/Groups", key, oversized(), 413)
		big.req = reqInvalid
		c.do(t, big)
	})
	t.Run("list and search groups", func(t *testing.T) {
		_, body := c.do(t, scimCall("GET", b+"/Groups?count=1&startIndex=1&sortBy=displayName&sortOrder=descending&filter=displayName+sw+%22S%22", key, nil, 200))
		l := decode[map[string]any](t, body)
		if l["totalResults"] != 2.0 || l["itemsPerPage"] != 1.0 || l["Resources"].([]any)[0].(map[string]any)["displayName"] != "Support" {
			t.Errorf("list: %s", body)
		}
		c.do(t, scimCall("GET", b+"/Groups?excludedAttributes=members&filter="+strings.ReplaceAll(`displayName eq "sales"`, " ", "+"), key, nil, 200))
		c.do(t, scimCall("GET", b+"/Groups?filter=members+pr", key, nil, 400))
		c.do(t, scimCall("POST", b+"/Groups/.search", key, jsonBody(map[string]any{"schemas": []string{scimSearchURN}, "filter": `displayName sw "S"`, "count": 0}), 200))
		c.do(t, scimCall("POST", b+"/Groups/.search", key, jsonBody(map[string]any{"schemas": []string{scimSearchURN}, "filter": "displayName eq"}), 400))
		big := scimCall("POST", b+"/Groups/.search", key, oversized(), 413)
		big.req = reqInvalid
		c.do(t, big)
	})
	t.Run("get group", func(t *testing.T) {
		resp, _ := c.do(t, scimCall("GET", b+"/Groups/"+gid, key, nil, 200))
		etag := resp.Header.Get("ETag")
		cl := scimCall("GET", b+"/Groups/"+gid, key, nil, 304)
		cl.header = http.Header{"If-None-Match": {etag}}
		c.do(t, cl)
		c.do(t, scimCall("GET", b+"/Groups/"+gid+"?attributes=displayName", key, nil, 200))
		c.do(t, scimCall("GET", b+"/Groups/nope", key, nil, 404))
		// A group over 20,000 members is read only without them (in a
		// tenant of its own, so that the other areas' counts of acme's
		// users stay as they are).
		_, tb := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants", token: f.root, body: jsonBody(map[string]string{"name": "Big", "code": "BIGG000001"}), want: 201})
		bigTenant := decode[map[string]any](t, tb)["id"].(string)
		_, kb := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + bigTenant + "/api-keys", token: f.root, body: jsonBody(map[string]any{"name": "scim", "areas": []string{"scim"}}), want: 201})
		key := decode[map[string]any](t, kb)["key"].(string)
		big := identity.Group{ID: "big", TenantID: bigTenant, DisplayName: "Everyone", Version: 1, CreatedAt: c.clock.Now(), UpdatedAt: c.clock.Now()}
		// One batch: 20,001 CreateUser calls, each scanning the fake's
		// users, took minutes (over eight under -race).
		var ids []identity.ObjectID
		var members []identity.User
		for i := range identity.MaxGroupMembers + 1 {
			u := identity.User{ID: identity.NewObjectID(), TenantID: bigTenant, Name: "member-" + strconv.Itoa(i), PasswordScheme: "none", Roles: []string{"user"}, CreatedAt: c.clock.Now()}
			members = append(members, u)
			ids = append(ids, u.ID)
		}
		if err := c.store.ImportUsers(t.Context(), members, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.store.CreateGroup(t.Context(), big, ids); err != nil {
			t.Fatal(err)
		}
		c.do(t, scimCall("GET", b+"/Groups/big", key, nil, 400))
		c.do(t, scimCall("GET", b+"/Groups/big?excludedAttributes=members", key, nil, 200))
		c.do(t, scimCall("GET", b+"/Groups?excludedAttributes=members&filter=displayName+eq+%22Everyone%22", key, nil, 200))
		c.do(t, scimCall("GET", b+"/Groups?filter=displayName+eq+%22Everyone%22", key, nil, 400))

	})
	t.Run("replace group", func(t *testing.T) {
		c.do(t, scimCall("PUT", b+"/Groups/"+gid, key, group("Sales EMEA", f.userID), 200))
		c.do(t, scimCall("PUT", b+"/Groups/"+gid, key, group("Support"), 409))
		c.do(t, scimCall("PUT", b+"/Groups/"+gid, key, jsonBody(map[string]any{"schemas": []string{scimGroupURN}, "displayName": ""}), 400))
		c.do(t, scimCall("PUT", b+"/Groups/nope", key, group("X"), 404))
		cl := scimCall("PUT", b+"/Groups/"+gid, key, group("Sales"), 412)
		cl.header = http.Header{"If-Match": {`W/"99"`}}
		c.do(t, cl)
		big := scimCall("PUT", b+"/Groups/"+gid, key, oversized(), 413)
		big.req = reqInvalid
		c.do(t, big)
	})
	t.Run("patch group", func(t *testing.T) {
		c.do(t, scimCall("PATCH", b+"/Groups/"+gid, key, patch(map[string]any{"op": "Remove", "path": "members", "value": []any{map[string]any{"value": f.userID}}}), 200))
		c.do(t, scimCall("PATCH", b+"/Groups/"+gid, key, patch(map[string]any{"op": "replace", "value": map[string]any{"id": gid, "displayName": "Sales"}}), 200))
		c.do(t, scimCall("PATCH", b+"/Groups/"+gid, key, patch(map[string]any{"op": "replace", "path": "displayName", "value": "Support"}), 409))
		c.do(t, scimCall("PATCH", b+"/Groups/"+gid, key, patch(map[string]any{"op": "remove"}), 400))
		c.do(t, scimCall("PATCH", b+"/Groups/nope", key, patch(map[string]any{"op": "add", "path": "members", "value": []any{}}), 404))
		cl := scimCall("PATCH", b+"/Groups/"+gid, key, patch(map[string]any{"op": "replace", "path": "displayName", "value": "X"}), 412)
		cl.header = http.Header{"If-Match": {`W/"1"`}}
		c.do(t, cl)
		big := scimCall("PATCH", b+"/Groups/"+gid, key, oversized(), 413)
		big.req = reqInvalid
		c.do(t, big)
	})
	var uid string
	user := func(name string) []byte {
		return jsonBody(map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:User"}, "userName": name, "password": "scim-password-1",
			"emails": []any{map[string]any{"value": name + "@acme.example", "type": "work", "primary": true}}, "name": map[string]any{"givenName": "G", "familyName": "F"},
			"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": map[string]any{"employeeNumber": "7"}})
	}
	t.Run("create user", func(t *testing.T) {
		_, body := c.do(t, scimCall("POST", b+"/Users", key, user("scim-ann"), 201))
		uid = decode[map[string]any](t, body)["id"].(string)
		c.do(t, scimCall("POST", b+"/Users", key, user("scim-bob"), 201))
		c.do(t, scimCall("POST", b+"/Users", key, user("SCIM-ANN"), 409))
		badType := scimCall("POST", b+"/Users", key, jsonBody(map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:User"}, "userName": 7}), 400)
		badType.req = reqInvalid
		c.do(t, badType)
		big := scimCall("POST", b+"/Users", key, oversized(), 413)
		big.req = reqInvalid
		c.do(t, big)
	})
	t.Run("list and search users", func(t *testing.T) {
		_, body := c.do(t, scimCall("GET", b+"/Users?filter="+strings.ReplaceAll(`userName eq "Scim-Ann"`, " ", "+"), key, nil, 200))
		if l := decode[map[string]any](t, body); l["totalResults"] != 1.0 {
			t.Errorf("userName eq: %s", body)
		}
		c.do(t, scimCall("GET", b+"/Users?sortBy=userName&count=1&attributes=userName", key, nil, 200))
		c.do(t, scimCall("GET", b+"/Users?filter=password+eq+%22x%22", key, nil, 400))
		c.do(t, scimCall("POST", b+"/Users/.search", key, jsonBody(map[string]any{"schemas": []string{scimSearchURN}, "filter": `emails[type eq "work"]`, "sortBy": "emails"}), 200))
		c.do(t, scimCall("POST", b+"/Users/.search", key, jsonBody(map[string]any{"schemas": []string{scimSearchURN}, "sortBy": "password"}), 400))
		big := scimCall("POST", b+"/Users/.search", key, oversized(), 413)
		big.req = reqInvalid
		c.do(t, big)
	})
	t.Run("get user", func(t *testing.T) {
		resp, _ := c.do(t, scimCall("GET", b+"/Users/"+uid, key, nil, 200))
		cl := scimCall("GET", b+"/Users/"+uid, key, nil, 304)
		cl.header = http.Header{"If-None-Match": {resp.Header.Get("ETag")}}
		c.do(t, cl)
		c.do(t, scimCall("GET", b+"/Users/nope", key, nil, 404))
		bad := scimCall("GET", b+"/Users/"+uid+"?count=x", key, nil, 400)
		bad.req = reqInvalid
		c.do(t, bad)
	})
	t.Run("replace user", func(t *testing.T) {
		c.do(t, scimCall("PUT", b+"/Users/"+uid, key, user("scim-ann"), 200))
		c.do(t, scimCall("PUT", b+"/Users/"+uid, key, user("scim-bob"), 409))
		c.do(t, scimCall("PUT", b+"/Users/"+uid, key, jsonBody(map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:User"}}), 400))
		c.do(t, scimCall("PUT", b+"/Users/AAAAAAAAAAAAAAAAAAAAAA", key, user("x"), 404))
		cl := scimCall("PUT", b+"/Users/"+uid, key, user("scim-ann"), 412)
		cl.header = http.Header{"If-Match": {`W/"99"`}}
		c.do(t, cl)
		big := scimCall("PUT", b+"/Users/"+uid, key, oversized(), 413)
		big.req = reqInvalid
		c.do(t, big)
	})
	t.Run("patch user", func(t *testing.T) {
		c.do(t, scimCall("PATCH", b+"/Users/"+uid, key, patch(map[string]any{"op": "Replace", "path": "active", "value": "False"}), 200))
		c.do(t, scimCall("PATCH", b+"/Users/"+uid, key, patch(map[string]any{"op": "replace", "value": map[string]any{"active": true, "name.givenName": "Ann"}}), 200))
		c.do(t, scimCall("PATCH", b+"/Users/"+uid, key, patch(map[string]any{"op": "replace", "path": "userName", "value": "SCIM-BOB"}), 409))
		c.do(t, scimCall("PATCH", b+"/Users/"+uid, key, patch(map[string]any{"op": "replace", "path": "id", "value": "x"}), 400))
		c.do(t, scimCall("PATCH", b+"/Users/nope", key, patch(map[string]any{"op": "add", "path": "nickName", "value": "x"}), 404))
		cl := scimCall("PATCH", b+"/Users/"+uid, key, patch(map[string]any{"op": "add", "path": "nickName", "value": "x"}), 412)
		cl.header = http.Header{"If-Match": {`W/"1"`}}
		c.do(t, cl)
		big := scimCall("PATCH", b+"/Users/"+uid, key, oversized(), 413)
		big.req = reqInvalid
		c.do(t, big)
	})
	t.Run("not implemented", func(t *testing.T) {
		c.do(t, scimCall("POST", b+"/Bulk", key, []byte(`{}`), 501))
		for _, m := range []string{"GET", "DELETE"} {
			c.do(t, scimCall(m, b+"/Me", key, nil, 501))
		}
		for _, m := range []string{"POST", "PUT", "PATCH"} {
			c.do(t, scimCall(m, b+"/Me", key, []byte(`{}`), 501))
		}
	})
	// Every route: no credential 401, a key of another area 403, an
	// exhausted credential 429.
	routes := []struct {
		method, path string
		body         []byte
	}{
		{"GET", b + "/ServiceProviderConfig", nil}, {"GET", b + "/ResourceTypes", nil}, {"GET", b + "/ResourceTypes/User", nil},
		{"GET", b + "/Schemas", nil}, {"GET", b + "/Schemas/" + scimGroupURN, nil}, {"GET", b + "/Groups", nil},
		{"POST", b + "/Groups/.search", jsonBody(map[string]any{"schemas": []string{scimSearchURN}})}, {"POST", b + "/Groups", group("G")},
		{"GET", b + "/Groups/" + gid, nil}, {"PUT", b + "/Groups/" + gid, group("G")}, {"PATCH", b + "/Groups/" + gid, patch(map[string]any{"op": "add", "path": "externalId", "value": "e"})},
		{"DELETE", b + "/Groups/" + gid, nil}, {"POST", b + "/Bulk", []byte(`{}`)},
		{"GET", b + "/Users", nil}, {"POST", b + "/Users/.search", jsonBody(map[string]any{"schemas": []string{scimSearchURN}})}, {"POST", b + "/Users", user("u")},
		{"GET", b + "/Users/" + uid, nil}, {"PUT", b + "/Users/" + uid, user("u")}, {"PATCH", b + "/Users/" + uid, patch(map[string]any{"op": "add", "path": "nickName", "value": "n"})},
		{"DELETE", b + "/Users/" + uid, nil},
		{"GET", b + "/Me", nil}, {"POST", b + "/Me", []byte(`{}`)}, {"PUT", b + "/Me", []byte(`{}`)}, {"PATCH", b + "/Me", []byte(`{}`)}, {"DELETE", b + "/Me", nil},
	}
	t.Run("credentials", func(t *testing.T) {
		for _, r := range routes {
			cl := scimCall(r.method, r.path, "", r.body, 401)
			cl.req = reqProse
			c.do(t, cl)
			c.do(t, scimCall(r.method, r.path, "not.a.jwt", r.body, 401))
			c.do(t, scimCall(r.method, r.path, authnKey, r.body, 403))
			c.do(t, scimCall(r.method, r.path, oauthToken(t, c, f.client.id, f.client.secret), r.body, 403))
		}
	})
	t.Run("rate limit", func(t *testing.T) {
		burst := scimAPIKey(t, c, f, "scim")
		for range 200 {
			c.do(t, scimCall("GET", b+"/ServiceProviderConfig", burst, nil, 200))
		}
		for _, r := range routes {
			c.do(t, scimCall(r.method, r.path, burst, r.body, 429))
		}
	})
	t.Run("delete user", func(t *testing.T) {
		cl := scimCall("DELETE", b+"/Users/"+uid, key, nil, 412)
		cl.header = http.Header{"If-Match": {`W/"1"`}}
		c.do(t, cl)
		c.do(t, scimCall("DELETE", b+"/Users/"+uid, key, nil, 204))
		c.do(t, scimCall("DELETE", b+"/Users/"+uid, key, nil, 404))
	})
	t.Run("delete group", func(t *testing.T) {
		cl := scimCall("DELETE", b+"/Groups/"+gid, key, nil, 412)
		cl.header = http.Header{"If-Match": {`W/"1"`}}
		c.do(t, cl)
		c.do(t, scimCall("DELETE", b+"/Groups/"+gid, key, nil, 204))
		c.do(t, scimCall("DELETE", b+"/Groups/"+gid, key, nil, 404))
	})
}

func init() {
	registerContractArea("groups", contractGroups)
}

// contractGroups maps a SCIM-provisioned group to roles.
func contractGroups(t *testing.T, c *contract, f fixture) {
	key := scimAPIKey(t, c, f, "scim")
	_, body := c.do(t, scimCall("POST", "/scim/v2/Groups", key, jsonBody(map[string]any{"schemas": []string{scimGroupURN}, "displayName": "Owners"}), 201))
	gid := decode[map[string]any](t, body)["id"].(string)
	p := "/api/v1/admin/tenants/" + f.acme.id + "/groups/" + gid
	t.Run("get group", func(t *testing.T) {
		c.do(t, call{method: "GET", path: p, token: f.acme.admin, want: 200})
		c.do(t, call{method: "GET", path: "/api/v1/admin/tenants/" + f.acme.id + "/groups/nope", token: f.acme.admin, want: 404})
		c.do(t, call{method: "GET", path: p, token: f.acme.user, want: 403})
		platformUnauthenticated(t, c, f, "GET", p, nil)
	})
	t.Run("map group to roles", func(t *testing.T) {
		_, body := c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"roles": []string{"application-owner"}}), want: 200})
		if got := decode[map[string]any](t, body)["roles"].([]any); len(got) != 1 || got[0] != "application-owner" {
			t.Errorf("roles %v", got)
		}
		c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: jsonBody(map[string]any{"roles": []string{"root"}}), req: reqInvalid, want: 400})
		c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: jsonBody(map[string]any{}), req: reqInvalid, want: 400})
		c.do(t, call{method: "PATCH", path: "/api/v1/admin/tenants/" + f.acme.id + "/groups/nope", token: f.acme.admin, body: jsonBody(map[string]any{"roles": []string{}}), want: 404})
		c.do(t, call{method: "PATCH", path: p, token: f.acme.admin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "PATCH", path: p, token: f.acme.user, body: jsonBody(map[string]any{"roles": []string{}}), want: 403})
		platformUnauthenticated(t, c, f, "PATCH", p, jsonBody(map[string]any{"roles": []string{}}))
	})
}
