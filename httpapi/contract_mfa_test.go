package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/mfa"
)

func init() {
	registerContractArea("mfa", contractMFA)
}

// contractMFA exercises the multi-factor routes (API-mfa.md): a user's
// own factors, the two-step login, the step-up they need, and an
// administrator's view and reset.
func contractMFA(t *testing.T, c *contract, f fixture) {
	_, got := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants", token: f.root, body: jsonBody(map[string]string{"name": "Two Step", "code": "MFAT000001"}), want: 201})
	tn := decode[map[string]any](t, got)
	tenantID, tenantCode := tn["id"].(string), tn["code"].(string)
	users := "/api/v1/admin/tenants/" + tenantID + "/users"
	ids := map[string]string{}
	for _, u := range []struct{ name, role string }{{"mfa-admin", "tenant-admin"}, {"erin", "user"}, {"frank", "user"}} {
		_, got := c.do(t, call{method: "POST", path: users, token: f.root, body: jsonBody(map[string]any{"name": u.name, "password": u.name + "-password-1", "roles": []string{u.role}}), want: 201})
		ids[u.name] = decode[map[string]any](t, got)["id"].(string)
	}
	pw := func(name string) []byte {
		return jsonBody(map[string]string{"name": name, "password": name + "-password-1", "auth_domain": tenantCode})
	}
	erin := login(t, c, "erin", "erin-password-1", tenantCode).JWT
	admin := login(t, c, "mfa-admin", "mfa-admin-password-1", tenantCode).JWT
	robot := clientJWT(t, c, tenantID, tenantCode)
	const me = "/api/v1/me/mfa"

	// enrol creates a device for the holder of jwt and returns its id and
	// secret.
	enrol := func(t *testing.T, jwt string) (string, []byte) {
		t.Helper()
		_, got := c.do(t, call{method: "POST", path: me + "/totp", token: jwt, body: jsonBody(map[string]any{"friendlyName": "phone"}), want: 201})
		m := decode[map[string]any](t, got)
		secret, err := latchkeytest.TOTPSecret(m["secret"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return m["id"].(string), secret
	}
	code := func(secret []byte) string { return latchkeytest.TOTP(secret, c.clock.Now(), 6) }
	// stepUp signs name in with password and TOTP and returns the JWT.
	stepUp := func(t *testing.T, name string, secret []byte) string {
		t.Helper()
		c.clock.Advance(30 * time.Second) // a code of a step not used yet
		_, got := c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: pw(name), want: 403})
		tok := decode[map[string]any](t, got)["mfa_token"].(string)
		_, got = c.do(t, call{method: "POST", path: "/api/v1/auth/tokens/", body: jsonBody(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": code(secret)}), want: 200})
		return decode[map[string]any](t, got)["jwt"].(string)
	}

	var erinDevice string
	var erinSecret []byte
	t.Run("factors", func(t *testing.T) {
		_, got := c.do(t, call{method: "GET", path: me, token: erin, want: 200})
		if m := decode[map[string]any](t, got); m["policy"].(map[string]any)["mode"] != "optional" || len(m["totp"].([]any)) != 0 {
			t.Errorf("overview %s", got)
		}
		c.do(t, call{method: "GET", path: me, token: robot, want: 403})
		platformUnauthenticated(t, c, f, "GET", me, nil)
	})

	t.Run("create and confirm", func(t *testing.T) {
		c.do(t, call{method: "POST", path: me + "/totp", token: erin, body: jsonBody(map[string]any{"friendlyName": strings.Repeat("x", 257)}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: me + "/totp", token: erin, body: []byte(`{`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: me + "/totp", token: erin, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: me + "/totp", token: robot, body: []byte(`{}`), want: 403})
		platformUnauthenticated(t, c, f, "POST", me+"/totp", []byte(`{}`))
		c.do(t, call{method: "POST", path: me + "/totp", token: mfa.TokenPrefix + "unknown", body: []byte(`{}`), want: 401})
		erinDevice, erinSecret = enrol(t, erin)
		confirm := me + "/totp/" + erinDevice + "/confirm"
		c.do(t, call{method: "POST", path: confirm, token: erin, body: jsonBody(map[string]string{"otp": "12345"}), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: confirm, token: erin, body: jsonBody(map[string]string{"otp": latchkeytest.TOTP(erinSecret, c.clock.Now().Add(-time.Hour), 6)}), want: 400})
		c.do(t, call{method: "POST", path: me + "/totp/unknown-device/confirm", token: erin, body: jsonBody(map[string]string{"otp": "123456"}), want: 404})
		c.do(t, call{method: "POST", path: confirm, token: robot, body: jsonBody(map[string]string{"otp": "123456"}), want: 403})
		c.do(t, call{method: "POST", path: confirm, token: erin, body: oversized(), req: reqInvalid, want: 413})
		platformUnauthenticated(t, c, f, "POST", confirm, jsonBody(map[string]string{"otp": "123456"}))
		_, got := c.do(t, call{method: "POST", path: confirm, token: erin, body: jsonBody(map[string]string{"otp": code(erinSecret)}), want: 200})
		if codes, _ := decode[map[string]any](t, got)["recoveryCodes"].([]any); len(codes) != 10 {
			t.Errorf("confirmation %s", got)
		}
		c.do(t, call{method: "POST", path: confirm, token: erin, body: jsonBody(map[string]string{"otp": code(erinSecret)}), want: 409})
		// A user with a factor adds another only after a step-up.
		c.do(t, call{method: "POST", path: me + "/totp", token: erin, body: []byte(`{}`), want: 401})
	})

	erinMFA := stepUp(t, "erin", erinSecret)

	t.Run("device cap and delete", func(t *testing.T) {
		var pending []string
		for range mfa.MaxDevices - 1 {
			id, _ := enrol(t, erinMFA)
			pending = append(pending, id)
		}
		c.do(t, call{method: "POST", path: me + "/totp", token: erinMFA, body: []byte(`{}`), want: 409})
		c.do(t, call{method: "DELETE", path: me + "/totp/" + pending[0], token: erin, want: 204}) // a pending device needs no step-up
		c.do(t, call{method: "DELETE", path: me + "/totp/" + pending[0], token: erin, want: 404})
		c.do(t, call{method: "DELETE", path: me + "/totp/" + erinDevice, token: erin, want: 401})
		c.do(t, call{method: "DELETE", path: me + "/totp/" + erinDevice, token: robot, want: 403})
		platformUnauthenticated(t, c, f, "DELETE", me+"/totp/"+erinDevice, nil)
	})

	t.Run("recovery codes", func(t *testing.T) {
		p := me + "/recovery-codes"
		c.do(t, call{method: "POST", path: p, token: erin, body: []byte(`{}`), want: 401})
		c.do(t, call{method: "POST", path: p, token: erinMFA, body: []byte(`[`), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: erinMFA, body: oversized(), req: reqInvalid, want: 413})
		c.do(t, call{method: "POST", path: p, token: robot, body: []byte(`{}`), want: 403})
		platformUnauthenticated(t, c, f, "POST", p, []byte(`{}`))
		for range mfa.MaxCodeSets {
			c.do(t, call{method: "POST", path: p, token: erinMFA, body: []byte(`{}`), want: 201})
		}
		c.do(t, call{method: "POST", path: p, token: erinMFA, body: []byte(`{}`), want: 429})
		// The last factor removed (the policy requires none): the codes
		// go with it, and none can be made without a factor.
		c.do(t, call{method: "DELETE", path: me + "/totp/" + erinDevice, token: erinMFA, want: 204})
		c.do(t, call{method: "POST", path: p, token: erinMFA, body: []byte(`{}`), want: 409})
	})

	adminDevice, adminSecret := enrol(t, admin)
	c.do(t, call{method: "POST", path: me + "/totp/" + adminDevice + "/confirm", token: admin, body: jsonBody(map[string]string{"otp": code(adminSecret)}), want: 200})
	adminMFA := stepUp(t, "mfa-admin", adminSecret)

	t.Run("administrators", func(t *testing.T) {
		p := users + "/" + ids["erin"] + "/mfa"
		c.do(t, call{method: "GET", path: p, token: admin, want: 200})
		c.do(t, call{method: "GET", path: p, token: erin, want: 403})
		c.do(t, call{method: "GET", path: users + "/" + ids["mfa-admin"] + "/mfa", token: admin, want: 403}) // one's own
		c.do(t, call{method: "GET", path: users + "/AAAAAAAAAAAAAAAAAAAAAA/mfa", token: admin, want: 404})
		platformUnauthenticated(t, c, f, "GET", p, nil)
		c.do(t, call{method: "DELETE", path: p, token: admin, want: 401})
		c.do(t, call{method: "DELETE", path: p + "?passkeys=maybe", token: adminMFA, req: reqInvalid, want: 400})
		c.do(t, call{method: "DELETE", path: p, token: erin, want: 403})
		c.do(t, call{method: "DELETE", path: users + "/AAAAAAAAAAAAAAAAAAAAAA/mfa", token: adminMFA, want: 404})
		platformUnauthenticated(t, c, f, "DELETE", p, nil)
		c.do(t, call{method: "DELETE", path: p + "?passkeys=true", token: adminMFA, want: 204})
	})

	t.Run("policy", func(t *testing.T) {
		settings := "/api/v1/admin/tenants/" + tenantID + "/settings"
		c.do(t, call{method: "PATCH", path: settings, token: admin, body: jsonBody(map[string]any{"mfa": map[string]any{"mode": "required"}}), want: 401})
		c.do(t, call{method: "PATCH", path: settings, token: adminMFA, body: jsonBody(map[string]any{"mfa": map[string]any{"mode": "required", "enrollmentGraceDays": 3}}), want: 200})
		// The administrator's only factor is the last one now.
		c.do(t, call{method: "DELETE", path: me + "/totp/" + adminDevice, token: adminMFA, want: 409})
		// frank has none: an enrollment token, the bearer of enrolment only.
		_, got := c.do(t, call{method: "POST", path: "/api/v1/auth/tokens", body: pw("frank"), want: 403})
		m := decode[map[string]any](t, got)
		if m["codeDesc"] != mfa.CodeEnrollmentRequired || m["enrollment_deadline"] == nil {
			t.Errorf("frank's login %s", got)
		}
		etok := m["mfa_token"].(string)
		_, got = c.do(t, call{method: "POST", path: me + "/totp", token: etok, body: []byte(`{}`), want: 201})
		secret, _ := latchkeytest.TOTPSecret(decode[map[string]any](t, got)["secret"].(string))
		c.do(t, call{method: "POST", path: "/api/v1/auth/passkeys/options", body: jsonBody(map[string]string{"mfa_token": etok}), want: 401})
		c.do(t, call{method: "POST", path: "/api/v1/auth/passkeys/options", body: jsonBody(map[string]string{"mfa_token": mfa.TokenPrefix + "unknown"}), want: 401})
		_, got = c.do(t, call{method: "POST", path: "/api/v1/auth/tokens", body: jsonBody(map[string]any{"grant_type": "mfa_otp", "mfa_token": etok, "otp": code(secret)}), want: 200})
		if codes, _ := decode[map[string]any](t, got)["recovery_codes"].([]any); len(codes) != 10 {
			t.Errorf("enrolment's second step %s", got)
		}
		// The policy off: no TOTP may be enrolled.
		c.do(t, call{method: "PATCH", path: settings, token: adminMFA, body: jsonBody(map[string]any{"mfa": map[string]any{"mode": "off"}}), want: 200})
		frank := login(t, c, "frank", "frank-password-1", tenantCode).JWT
		c.do(t, call{method: "POST", path: me + "/totp", token: frank, body: []byte(`{}`), want: 403})
	})
}
