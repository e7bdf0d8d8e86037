package httpapi_test

import (
	"net/http"
	"testing"
)

func init() {
	registerContractArea("eventstream", contractEventStream)
}

func contractEventStream(t *testing.T, c *contract, f fixture) {
	admin := eventsClient(t, c, f.acme.admin, f.acme.id, "eventstream:subscription:administrator")
	rootAdmin := eventsClient(t, c, f.root, f.rootTenant, "eventstream:subscription:administrator")
	noScope := eventsClient(t, c, f.acme.admin, f.acme.id, "event:event:consumer")
	acting := http.Header{"Acting-Tenant-Id": {f.acme.code}}
	byTenantID := http.Header{"Tenant-Id": {f.acme.code}}
	sets := []struct {
		name, base string
		header     http.Header
	}{
		{"path", "/eventstream/v1/tenants/" + f.acme.code, nil},
		{"acting-tenant-id", "/eventstream/v1", acting},
		{"tenant-id", "/eventstream/v1", byTenantID},
	}
	sub := jsonBody(map[string]any{"endpoint": "https://203.0.113.10/hook", "eventTypes": []string{"401", "10001"}, "maxPerSecond": 10,
		"auth": map[string]any{"type": "basic", "username": "u", "password": "p"}})
	ds := jsonBody(map[string]any{"connect": map[string]any{"idpUri": "https://203.0.113.11/scim", "clientId": "c1"},
		"groupConfig": []map[string]any{{"nodeType": "user", "relationshipType": "member"}}})
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			b, h := set.base, set.header
			_, got := c.do(t, call{method: "POST", path: b + "/subscriptions", token: admin, header: h, body: sub, want: 201})
			id := decode[struct{ Resources []string }](t, got).Resources[0]
			one := b + "/subscriptions/" + id
			c.do(t, call{method: "POST", path: b + "/subscriptions", token: admin, header: h, body: jsonBody(map[string]any{"endpoint": "https://203.0.113.10/", "eventTypes": []string{"9999"}}), req: reqInvalid, want: 400})
			c.do(t, call{method: "POST", path: b + "/subscriptions", token: admin, header: h, body: []byte(`{"endpoint":`), req: reqInvalid, want: 400})
			c.do(t, call{method: "GET", path: b + "/subscriptions", token: admin, header: h, want: 200})
			c.do(t, call{method: "GET", path: b + "/subscriptions?limit=1", token: admin, header: h, want: 200})
			c.do(t, call{method: "GET", path: b + "/subscriptions?limit=0", token: admin, header: h, req: reqInvalid, want: 400})
			c.do(t, call{method: "GET", path: one, token: admin, header: h, want: 200})
			c.do(t, call{method: "PATCH", path: one, token: admin, header: h, body: jsonBody(map[string]any{"numberOfRetries": 5}), want: 200})
			c.do(t, call{method: "PATCH", path: one, token: admin, header: h, body: jsonBody(map[string]any{"endpoint": "https://203.0.113.12/"}), req: reqProse, want: 400})
			c.do(t, call{method: "GET", path: one + "/dead-letters", token: admin, header: h, want: 200})
			c.do(t, call{method: "GET", path: one + "/dead-letters?limit=1000", token: admin, header: h, req: reqInvalid, want: 400})
			c.do(t, call{method: "POST", path: one + "/dead-letters/redeliver", token: admin, header: h, body: jsonBody(map[string]any{"ids": []string{"msg_x"}}), want: 202})
			c.do(t, call{method: "POST", path: one + "/dead-letters/redeliver", token: admin, header: h, body: []byte(`{"ids":`), req: reqInvalid, want: 400})
			_, got = c.do(t, call{method: "POST", path: b + "/directory-sync", token: admin, header: h, body: ds, want: 201})
			dsID := decode[struct{ Resources []string }](t, got).Resources[0]
			c.do(t, call{method: "POST", path: b + "/directory-sync", token: admin, header: h, body: jsonBody(map[string]any{"connect": map[string]any{"idpUri": "https://203.0.113.11/", "clientId": "c"}}), req: reqInvalid, want: 400})
			c.do(t, call{method: "DELETE", path: b + "/directory-sync/" + dsID, token: admin, header: h, want: 204})
			c.do(t, call{method: "DELETE", path: b + "/directory-sync/" + dsID, token: admin, header: h, want: 404})
			c.do(t, call{method: "DELETE", path: one, token: admin, header: h, want: 204})

			// Every route: no token 401, no scope 403, another tenant's token 404,
			// an unknown subscription 404, and no tenant code at all 400.
			routes := []struct {
				method, path string
				body         []byte
			}{
				{"POST", b + "/subscriptions", sub}, {"GET", b + "/subscriptions", nil}, {"GET", one, nil},
				{"PATCH", one, jsonBody(map[string]any{"maxPerSecond": 5})}, {"DELETE", one, nil},
				{"GET", one + "/dead-letters", nil}, {"POST", one + "/dead-letters/redeliver", jsonBody(map[string]any{})},
				{"POST", b + "/directory-sync", ds}, {"DELETE", b + "/directory-sync/" + id, nil},
			}
			for _, r := range routes {
				c.do(t, call{method: r.method, path: r.path, header: h, body: r.body, req: reqProse, want: 401})
				c.do(t, call{method: r.method, path: r.path, token: noScope, header: h, body: r.body, want: 403})
				c.do(t, call{method: r.method, path: r.path, token: rootAdmin, header: h, body: r.body, want: 404})
				if h != nil {
					c.do(t, call{method: r.method, path: r.path, token: admin, body: r.body, req: reqProse, want: 400})
				}
			}
		})
	}
}
