package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/identity"
)

func init() {
	registerContractArea("passkeys", contractPasskeys)
}

// clientJWT signs a platform JWT of a registered client of the tenant, as
// the client login issues it (a principal that is not a user).
func clientJWT(t *testing.T, c *contract, tenantID, tenantCode string) string {
	t.Helper()
	tok, _, err := c.p.Identity.Keys().Sign(context.Background(), identity.Claims{TenantID: tenantID, TenantCode: tenantCode, ClientID: "robot",
		Roles: []string{identity.RoleApplicationOwner}, RegisteredClaims: jwt.RegisteredClaims{Subject: "robot"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func contractPasskeys(t *testing.T, c *contract, f fixture) {
	_, got := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants", token: f.root, body: jsonBody(map[string]string{"name": "Keys", "code": "PASSKEY001"}), want: 201})
	tn := decode[map[string]any](t, got)
	tenantID, tenantCode := tn["id"].(string), tn["code"].(string)
	c.do(t, call{method: "PATCH", path: "/api/v1/admin/tenants/" + tenantID + "/settings", token: f.root, want: 200, body: jsonBody(map[string]any{
		"webauthn": map[string]any{"rpId": contractRPID, "origins": []string{contractOrigin}}})})
	_, got = c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + tenantID + "/users", token: f.root, body: jsonBody(map[string]any{"name": "dave", "password": "dave-password-1"}), want: 201})
	userID := decode[map[string]any](t, got)["id"].(string)
	dave := login(t, c, "dave", "dave-password-1", tenantCode).JWT
	robot := clientJWT(t, c, tenantID, tenantCode)
	const me = "/api/v1/me/passkeys"
	d := authenticatortest.New(contractRPID, contractOrigin)
	d.UserHandle, _ = base64.RawURLEncoding.DecodeString(userID)

	register := func(t *testing.T, d *authenticatortest.Device) []byte {
		t.Helper()
		_, got := c.do(t, call{method: "POST", path: me + "/options", token: dave, body: []byte(`{}`), want: 200})
		o := decode[map[string]any](t, got)
		challenge := o["publicKey"].(map[string]any)["challenge"].(string)
		return jsonBody(map[string]any{"flowId": o["flowId"], "credential": jsonRaw(d.PasskeyRegistrationJSON(challenge)), "friendlyName": "Laptop"})
	}

	t.Run("registration options", func(t *testing.T) {
		c.do(t, call{method: "POST", path: me + "/options", token: dave, body: []byte(`{`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: me + "/options", token: robot, body: []byte(`{}`), want: 403})
		platformUnauthenticated(t, c, f, "POST", me+"/options", []byte(`{}`))
	})

	t.Run("register", func(t *testing.T) {
		body := register(t, d)
		_, got := c.do(t, call{method: "POST", path: me, token: dave, body: body, want: 201})
		if a := decode[map[string]any](t, got); a["id"] != d.ID() || a["state"] != "active" || a["metadata"].(map[string]any)["provenance"] != "inline" {
			t.Errorf("registered %s", got)
		}
		c.do(t, call{method: "POST", path: me, token: dave, body: body, want: 400}) // the flow is spent
		// dave has a factor now: adding one needs a step-up (API-mfa.md),
		// which a sign-in with his passkey gives.
		c.do(t, call{method: "POST", path: me + "/options", token: dave, body: []byte(`{}`), want: 401})
		_, got = c.do(t, call{method: "POST", path: "/api/v1/auth/passkeys/options", body: jsonBody(map[string]string{"auth_domain": tenantCode}), want: 200})
		o := decode[map[string]any](t, got)
		_, got = c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", want: 200, body: jsonBody(map[string]any{"grant_type": "passkey", "flowId": o["flowId"],
			"credential": jsonRaw(d.PasskeyAssertionJSON(o["publicKey"].(map[string]any)["challenge"].(string)))})})
		dave = decode[map[string]any](t, got)["jwt"].(string)
		c.do(t, call{method: "POST", path: me, token: dave, body: register(t, d), want: 409}) // already registered
		c.do(t, call{method: "POST", path: me, token: dave, body: []byte(`{"flowId":`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: me, token: robot, body: register(t, authenticatortest.New(contractRPID, contractOrigin)), want: 403})
		c.do(t, call{method: "POST", path: me, token: dave, body: []byte(`{"flowId":"x","friendlyName":"` + strings.Repeat("x", 1<<20) + `"}`), req: reqInvalid, want: 413})
		platformUnauthenticated(t, c, f, "POST", me, body)
	})

	t.Run("list", func(t *testing.T) {
		_, got := c.do(t, call{method: "GET", path: me, token: dave, want: 200})
		if rs := decode[map[string]any](t, got)["resources"].([]any); len(rs) != 1 {
			t.Errorf("list %s", got)
		}
		c.do(t, call{method: "GET", path: me, token: robot, want: 403})
		platformUnauthenticated(t, c, f, "GET", me, nil)
	})

	signIn := func(t *testing.T, d *authenticatortest.Device, name string, want int) {
		t.Helper()
		_, got := c.do(t, call{method: "POST", path: "/api/v1/auth/passkeys/options", body: jsonBody(map[string]string{"auth_domain": strings.ToLower(tenantCode), "name": name}), want: 200})
		o := decode[map[string]any](t, got)
		challenge := o["publicKey"].(map[string]any)["challenge"].(string)
		_, got = c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", want: want, body: jsonBody(map[string]any{
			"grant_type": "passkey", "flowId": o["flowId"], "credential": jsonRaw(d.PasskeyAssertionJSON(challenge))})})
		if want == 200 {
			if tok := decode[map[string]any](t, got); tok["jwt"] == "" || tok["refresh_token"] == "" {
				t.Errorf("token %s", got)
			}
		}
	}

	t.Run("sign in", func(t *testing.T) {
		signIn(t, d, "", 200)
		signIn(t, d, "dave", 200)
		signIn(t, d, "nobody", 401)
		wrong := *d
		wrong.Origin = "https://evil.example"
		signIn(t, &wrong, "", 401)
		c.do(t, call{method: "POST", path: "/api/v1/auth/passkeys/options", body: jsonBody(map[string]string{"auth_domain": "NOPE000001"}), want: 404})
		c.do(t, call{method: "POST", path: "/api/v1/auth/passkeys/options", body: []byte(`{"auth_domain":`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: "/api/v1/auth/passkeys/options", body: []byte(`{"name":"` + strings.Repeat("x", 1<<20) + `"}`), req: reqProse, want: 413})
		c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: []byte(`{"grant_type":"passkey","credential":{}}`), req: reqInvalid, want: 400})
	})

	t.Run("guide login", func(t *testing.T) {
		guide := func(d *authenticatortest.Device, want int) {
			t.Helper()
			_, got := c.do(t, call{method: "POST", path: "/api/v1/auth/passkeys/options", body: jsonBody(map[string]string{"auth_domain": tenantCode}), want: 200})
			o := decode[map[string]any](t, got)
			challenge := o["publicKey"].(map[string]any)["challenge"].(string)
			_, got = c.do(t, call{method: "POST", path: "/guide/session", want: want, body: jsonBody(map[string]any{
				"flowId": o["flowId"], "credential": jsonRaw(d.PasskeyAssertionJSON(challenge))})})
			if want == 200 {
				if s := decode[map[string]any](t, got); s["method"] != "passkey" || s["user"].(map[string]any)["name"] != "dave" {
					t.Errorf("guide session %s", got)
				}
			}
		}
		guide(d, 200)
		wrong := *d
		wrong.RPID = "evil.example"
		guide(&wrong, 401)
	})

	t.Run("delete", func(t *testing.T) {
		// An authenticator the organisation imported for dave: rule 5.
		key := keyHeader(apiKeyOf(t, c, f.root, tenantID, "", identity.AreaAuthenticator))
		imported := authenticatortest.New(contractRPID, contractOrigin)
		c.do(t, call{method: "POST", path: "/api/v1/tenants/" + tenantCode + "/users/" + userID + "/authenticators", header: key, body: importBody(imported, authenticatortest.FormatNone), want: 200})
		c.do(t, call{method: "DELETE", path: me + "/" + imported.ID(), token: dave, want: 403})
		c.do(t, call{method: "DELETE", path: me + "/not*base64", token: dave, want: 400})
		c.do(t, call{method: "DELETE", path: me + "/" + d.ID(), token: robot, want: 403})
		platformUnauthenticated(t, c, f, "DELETE", me+"/"+d.ID(), nil)
		c.do(t, call{method: "DELETE", path: me + "/" + d.ID(), token: dave, want: 204})
		c.do(t, call{method: "DELETE", path: me + "/" + d.ID(), token: dave, want: 404})
		// A removed passkey signs in no more.
		signIn(t, d, "", 401)
	})
}

// jsonRaw embeds JSON text as is in a body built with jsonBody.
func jsonRaw(b []byte) json.RawMessage { return json.RawMessage(b) }
