package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/identity"
)

func init() {
	registerContractArea("authenticator", contractAuthenticator)
}

const (
	contractRPID   = "acme.example"
	contractOrigin = "https://acme.example"
)

// apiKeyOf creates an API key of tenant (by its admin JWT), bound to userID
// when set, for areas.
func apiKeyOf(t *testing.T, c *contract, admin, tenant, userID string, areas ...string) string {
	t.Helper()
	body := map[string]any{"name": "authn", "areas": areas}
	if userID != "" {
		body["userId"] = userID
	}
	_, got := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + tenant + "/api-keys", token: admin, body: jsonBody(body), want: 201})
	return decode[map[string]any](t, got)["key"].(string)
}

func keyHeader(key string) http.Header { return http.Header{"Apikey": {key}} }

// importBody is the POST body of a registration by d.
func importBody(d *authenticatortest.Device, format string) []byte {
	cdj, att := d.Register("Y29udHJhY3Q", format)
	return jsonBody(map[string]any{"type": "FIDO", "metadata": map[string]any{
		"friendlyName": "Contract key",
		"attestation":  map[string]any{"clientDataJson": authenticatortest.B64(cdj), "attestationObject": authenticatortest.B64(att)},
	}})
}

func contractAuthenticator(t *testing.T, c *contract, f fixture) {
	// A tenant of its own, so that the native events of this area do not
	// reach the event log other areas' scenarios count.
	_, got := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants", token: f.root, body: jsonBody(map[string]string{"name": "Authn", "code": "AUTHN00001"}), want: 201})
	tn := decode[map[string]any](t, got)
	tenantID, tenantCode := tn["id"].(string), tn["code"].(string)
	_, got = c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + tenantID + "/users", token: f.root, body: jsonBody(map[string]any{"name": "carol", "password": "carol-password-1"}), want: 201})
	userID := decode[map[string]any](t, got)["id"].(string)
	f.acme.id, f.acme.code, f.acme.admin, f.userID = tenantID, tenantCode, f.root, userID
	settings := "/api/v1/admin/tenants/" + f.acme.id + "/settings"
	c.do(t, call{method: "PATCH", path: settings, token: f.acme.admin, want: 200, body: jsonBody(map[string]any{
		"fidoImportEnabled": true, "planFeatures": []string{"fido-import"},
		"webauthn": map[string]any{"rpId": contractRPID, "origins": []string{contractOrigin}}})})
	key := keyHeader(apiKeyOf(t, c, f.acme.admin, f.acme.id, "", identity.AreaAuthenticator))
	bound := keyHeader(apiKeyOf(t, c, f.acme.admin, f.acme.id, f.userID, identity.AreaAuthenticator))
	provisioningOnly := keyHeader(apiKeyOf(t, c, f.acme.admin, f.acme.id, "", identity.AreaProvisioning))
	rootKey := keyHeader(apiKeyOf(t, c, f.root, f.rootTenant, "", identity.AreaAuthenticator))
	list := "/api/v1/tenants/" + f.acme.code + "/users/" + f.userID + "/authenticators"
	d := authenticatortest.New(contractRPID, contractOrigin)
	one := list + "/" + d.ID()

	t.Run("import", func(t *testing.T) {
		_, got := c.do(t, call{method: "POST", path: list, header: key, body: importBody(d, authenticatortest.FormatPackedX5C), want: 200})
		a := decode[map[string]any](t, got)
		if a["state"] != "pending" || a["id"] != d.ID() || a["metadata"].(map[string]any)["provenance"] != "imported" {
			t.Errorf("imported %v", a)
		}
		c.do(t, call{method: "POST", path: list, header: key, body: importBody(d, authenticatortest.FormatPackedX5C), want: 409})
		// Bearer is accepted as well as the apikey header.
		other := authenticatortest.New(contractRPID, contractOrigin)
		c.do(t, call{method: "POST", path: list, token: strings.TrimSpace(key.Get("Apikey")), body: importBody(other, authenticatortest.FormatNone), want: 200})
		c.do(t, call{method: "POST", path: list, header: key, body: []byte(`null`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: list, header: key, body: []byte(`{"type":"PASSWORD","metadata":{"attestation":{"clientDataJson":"e30","attestationObject":"oA"}}}`), req: reqProse, want: 400})
		c.do(t, call{method: "POST", path: list, header: key, body: []byte(`{"type":"FIDO","metadata":{"attestation":{"clientDataJson":"***","attestationObject":"oA"}}}`), req: reqProse, want: 400})
		c.do(t, call{method: "POST", path: list, header: key, body: []byte(`{"type":`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: list, header: key, body: []byte(`{"type":"FIDO","metadata":{"friendlyName":"` + strings.Repeat("x", 1<<20) + `"}}`), req: reqProse, want: 413})
		c.do(t, call{method: "POST", path: list, body: importBody(other, authenticatortest.FormatNone), req: reqInvalid, want: 401})
		c.do(t, call{method: "POST", path: list, header: provisioningOnly, body: importBody(other, authenticatortest.FormatNone), want: 401})
		c.do(t, call{method: "POST", path: list, header: rootKey, body: importBody(other, authenticatortest.FormatNone), want: 401})
		c.do(t, call{method: "POST", path: "/api/v1/tenants/NOPE000000/users/" + f.userID + "/authenticators", header: key, body: importBody(other, authenticatortest.FormatNone), want: 404})
		c.do(t, call{method: "PATCH", path: settings, token: f.acme.admin, body: jsonBody(map[string]any{"fidoImportEnabled": false}), want: 200})
		third := authenticatortest.New(contractRPID, contractOrigin)
		_, got = c.do(t, call{method: "POST", path: list, header: key, body: importBody(third, authenticatortest.FormatNone), want: 403})
		if msg := decode[map[string]any](t, got)["detail"]; msg != authenticator.MsgImportDisabled {
			t.Errorf("403 detail %q", msg)
		}
		c.do(t, call{method: "PATCH", path: settings, token: f.acme.admin, body: jsonBody(map[string]any{"fidoImportEnabled": true}), want: 200})
	})

	t.Run("list", func(t *testing.T) {
		_, got := c.do(t, call{method: "GET", path: list + "?pageIndex=0&pageSize=1", header: key, want: 200})
		l := decode[map[string]any](t, got)
		pg := l["page"].(map[string]any)
		if pg["totalItems"] != float64(2) || pg["totalPages"] != float64(2) || l["itemType"] != "Authenticator" {
			t.Errorf("list %v", l)
		}
		links := l["links"].(map[string]any)
		if !strings.HasPrefix(links["next"].(string), "http") || !strings.Contains(links["next"].(string), "pageIndex=1") {
			t.Errorf("links %v", links)
		}
		c.do(t, call{method: "GET", path: list + "?Object-Id-Format=base64", header: key, want: 200})
		c.do(t, call{method: "GET", path: list + "?pageIndex=-1", header: key, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: list + "?pageSize=21", header: key, req: reqInvalid, want: 400})
		c.do(t, call{method: "GET", path: list, header: http.Header{"Apikey": {"wrong"}}, want: 401})
		c.do(t, call{method: "GET", path: "/api/v1/tenants/" + f.acme.code + "/users/" + identity.NewObjectID().String() + "/authenticators", header: key, want: 404})
	})

	t.Run("get", func(t *testing.T) {
		c.do(t, call{method: "GET", path: one, header: key, want: 200})
		c.do(t, call{method: "GET", path: list + "/not+base64", header: key, want: 400})
		c.do(t, call{method: "GET", path: list + "/YWJj", header: key, want: 404})
		c.do(t, call{method: "GET", path: one, req: reqInvalid, want: 401})
	})

	t.Run("update", func(t *testing.T) {
		_, got := c.do(t, call{method: "PATCH", path: one, header: key, body: []byte(`{"metadata":{"friendlyName":"Renamed"}}`), want: 200})
		if n := decode[map[string]any](t, got)["metadata"].(map[string]any)["friendlyName"]; n != "Renamed" {
			t.Errorf("name %v", n)
		}
		_, got = c.do(t, call{method: "PATCH", path: one, header: key, body: []byte(`{"state":"suspended"}`), want: 400})
		if msg := decode[map[string]any](t, got)["detail"]; msg != authenticator.MsgOperationNotAllowed {
			t.Errorf("pending -> suspended: %v", msg)
		}
		c.do(t, call{method: "PATCH", path: one, header: key, body: []byte(`{"metadata":{"friendlyName":"` + strings.Repeat("x", 1<<20) + `"}}`), req: reqInvalid, want: 413})
		c.do(t, call{method: "PATCH", path: one, body: []byte(`{}`), req: reqInvalid, want: 401})
		c.do(t, call{method: "PATCH", path: list + "/YWJj", header: key, body: []byte(`{}`), want: 404})
	})

	t.Run("webauthn", func(t *testing.T) {
		wa := "/api/v1/tenants/" + f.acme.code + "/webauthn"
		missing := "/api/v1/tenants/NOPE000000/webauthn"
		dev := authenticatortest.New(contractRPID, contractOrigin)
		c.do(t, call{method: "POST", path: list, header: key, body: importBody(dev, authenticatortest.FormatPackedSelf), want: 200})
		// Activation: an assertion by the pending imported authenticator.
		_, got := c.do(t, call{method: "POST", path: wa + "/assertion/options", header: key, body: jsonBody(map[string]any{"username": "carol", "userVerification": "preferred"}), want: 200})
		opts := decode[map[string]any](t, got)
		assertion := dev.AssertionJSON(dev.Assert(opts["challenge"].(string)))
		_, got = c.do(t, call{method: "POST", path: wa + "/assertion/result", header: key, body: assertion, want: 200})
		if r := decode[map[string]any](t, got); r["status"] != "ok" {
			t.Errorf("assertion result %v", r)
		}
		_, got = c.do(t, call{method: "GET", path: list + "/" + dev.ID(), header: key, want: 200})
		if a := decode[map[string]any](t, got); a["state"] != "active" || a["lastSuccessAuthnDateTime"] == nil {
			t.Errorf("after activation %v", a)
		}
		c.do(t, call{method: "PATCH", path: list + "/" + dev.ID(), header: key, body: []byte(`{"state":"suspended"}`), want: 200})
		_, got = c.do(t, call{method: "POST", path: wa + "/assertion/result", header: key, body: assertion, req: reqProse, want: 400})
		if r := decode[map[string]any](t, got); r["status"] != "failed" || r["errorMessage"] != authenticator.MsgChallengeUnknown {
			t.Errorf("replayed assertion %v", r)
		}
		c.do(t, call{method: "POST", path: wa + "/assertion/options", header: key, body: jsonBody(map[string]any{"username": ""}), req: reqProse, want: 400})
		c.do(t, call{method: "POST", path: wa + "/assertion/options", header: key, body: jsonBody(map[string]any{"username": "nobody"}), want: 404})
		c.do(t, call{method: "POST", path: missing + "/assertion/options", header: key, body: jsonBody(map[string]any{"username": "carol"}), want: 404})
		c.do(t, call{method: "POST", path: wa + "/assertion/options", body: jsonBody(map[string]any{"username": "carol"}), req: reqInvalid, want: 401})
		c.do(t, call{method: "POST", path: missing + "/assertion/result", header: key, body: assertion, want: 404})
		c.do(t, call{method: "POST", path: wa + "/assertion/result", body: assertion, req: reqInvalid, want: 401})

		// Inline registration.
		_, got = c.do(t, call{method: "POST", path: wa + "/attestation/options", header: key, body: jsonBody(map[string]any{"username": "carol", "attestation": "direct"}), want: 200})
		opts = decode[map[string]any](t, got)
		reg := authenticatortest.New(contractRPID, contractOrigin)
		cdj, att := reg.Register(opts["challenge"].(string), authenticatortest.FormatPackedX5C)
		cred := reg.CredentialJSON(cdj, att)
		c.do(t, call{method: "POST", path: wa + "/attestation/result", header: key, body: cred, want: 200})
		_, got = c.do(t, call{method: "GET", path: list + "/" + reg.ID(), header: key, want: 200})
		if a := decode[map[string]any](t, got); a["state"] != "active" || a["metadata"].(map[string]any)["provenance"] != "inline" {
			t.Errorf("registered %v", a)
		}
		c.do(t, call{method: "POST", path: wa + "/attestation/result", header: key, body: cred, req: reqProse, want: 400})
		c.do(t, call{method: "POST", path: wa + "/attestation/options", header: key, body: jsonBody(map[string]any{"username": "nobody"}), want: 404})
		c.do(t, call{method: "POST", path: wa + "/attestation/options", header: key, body: jsonBody(map[string]any{"username": "carol", "attestation": "sometimes"}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: wa + "/attestation/options", body: jsonBody(map[string]any{"username": "carol"}), req: reqInvalid, want: 401})
		c.do(t, call{method: "POST", path: missing + "/attestation/result", header: key, body: cred, want: 404})
		c.do(t, call{method: "POST", path: wa + "/attestation/result", body: cred, req: reqInvalid, want: 401})
	})

	t.Run("delete", func(t *testing.T) {
		c.do(t, call{method: "DELETE", path: one, header: bound, want: 403})
		c.do(t, call{method: "DELETE", path: one, header: key, want: 204})
		c.do(t, call{method: "DELETE", path: one, header: key, want: 404})
		c.do(t, call{method: "DELETE", path: one, header: key.Clone(), req: reqProse, want: 404})
		h := key.Clone()
		h.Set("Object-Id-Format", "hex")
		c.do(t, call{method: "DELETE", path: one, header: h, want: 400})
		c.do(t, call{method: "DELETE", path: one, req: reqInvalid, want: 401})
	})
}
