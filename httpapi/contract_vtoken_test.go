package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/identity"
)

// Contract scenarios of area G, virtual token provisioning.

func init() { registerContractArea("vtoken", contractVToken) }

// pfxForm returns a multipart/form-data body holding file as field name,
// and its content type.
func pfxForm(t testing.TB, name string, file []byte) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, err := w.CreateFormFile(name, "cert.pfx")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(file)
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

func readVTokenFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../vtoken/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func contractVToken(t *testing.T, c *contract, f fixture) {
	_, body := c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/api-keys", token: f.acme.admin,
		body: jsonBody(map[string]any{"name": "prov", "areas": []string{identity.AreaProvisioning}}), want: 201})
	key := decode[map[string]any](t, body)["key"].(string)
	_, body = c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/api-keys", token: f.acme.admin,
		body: jsonBody(map[string]any{"name": "auth-only", "areas": []string{identity.AreaAuthenticator}}), want: 201})
	authKey := decode[map[string]any](t, body)["key"].(string)
	_, body = c.do(t, call{method: "POST", path: "/api/v1/admin/tenants/" + f.acme.id + "/users", token: f.root,
		body: jsonBody(map[string]any{"name": "bob-vtoken", "password": "bob-password-1"}), want: 201})
	bob := decode[map[string]any](t, body)["id"].(string)

	v1 := "/VirtualToken/Provisioning/V1.0/Tenants/" + f.acme.id
	v2 := "/VirtualToken/Provisioning/V2.0/Tenants/" + f.acme.id
	users := "/Users/" + f.userID + "/Tokens"
	unknownUser := "/Users/" + identity.NewObjectID().String() + "/Tokens"
	badUser := "/Users/not-a-user-id/Tokens"
	bare := http.Header{"Authorization": {key}}
	// unauth runs the 401 cases every provisioning route shares.
	unauth := func(t *testing.T, method, path string, body []byte, ct string) {
		t.Helper()
		c.do(t, call{method: method, path: path, body: body, contentType: ct, req: reqInvalid, want: 401})
		c.do(t, call{method: method, path: path, body: body, contentType: ct, token: "not-a-key", req: reqProse, want: 401})
		c.do(t, call{method: method, path: path, body: body, contentType: ct, token: authKey, req: reqProse, want: 401})
	}

	t.Run("exchange key", func(t *testing.T) {
		p := v1 + "/TenantExchangePublicKey"
		_, body := c.do(t, call{method: "GET", path: p, token: key, want: 200})
		if k := decode[map[string]any](t, body); k["keyType"] != "RSA" || k["exponent"] != "AQAB" {
			t.Errorf("exchange key = %s", body)
		}
		c.do(t, call{method: "GET", path: p, header: bare, want: 200})
		c.do(t, call{method: "GET", path: "/VirtualToken/Provisioning/V1.0/Tenants/" + identity.NewGUID() + "/TenantExchangePublicKey", token: key, want: 404})
		// A key of acme naming the root tenant: no access.
		c.do(t, call{method: "GET", path: "/VirtualToken/Provisioning/V1.0/Tenants/" + f.rootTenant + "/TenantExchangePublicKey", token: key, req: reqProse, want: 401})
		unauth(t, "GET", p, nil, "")
	})

	var tok1, tok2 string
	t.Run("create", func(t *testing.T) {
		for _, base := range []string{v1, v2} {
			_, body := c.do(t, call{method: "POST", path: base + users, token: key, want: 200})
			id := decode[string](t, body)
			if !identity.IsGUID(id) {
				t.Errorf("token id %q", id)
			}
			if base == v1 {
				tok1 = id
			} else {
				tok2 = id
			}
			c.do(t, call{method: "POST", path: base + badUser, token: key, req: reqProse, want: 400})
			c.do(t, call{method: "POST", path: base + unknownUser, token: key, want: 404})
			unauth(t, "POST", base+users, nil, "")
		}
		for range 16 {
			c.do(t, call{method: "POST", path: v1 + "/Users/" + bob + "/Tokens", token: key, want: 200})
		}
		c.do(t, call{method: "POST", path: v1 + "/Users/" + bob + "/Tokens", token: key, want: 409})
		c.do(t, call{method: "POST", path: v2 + "/Users/" + bob + "/Tokens", token: key, want: 409})
	})

	t.Run("list", func(t *testing.T) {
		_, body := c.do(t, call{method: "GET", path: v1 + users, token: key, want: 200})
		if ids := decode[[]string](t, body); len(ids) != 1 || ids[0] != tok1 {
			t.Errorf("V1.0 list = %s", body)
		}
		_, body = c.do(t, call{method: "GET", path: v2 + users, token: key, want: 200})
		sizes := map[any]any{}
		for _, it := range decode[[]map[string]any](t, body) {
			sizes[it["tokenId"]] = it["maxKeySize"]
		}
		if len(sizes) != 2 || sizes[tok1] != float64(2048) || sizes[tok2] != float64(4096) {
			t.Errorf("V2.0 list = %s", body)
		}
		for _, base := range []string{v1, v2} {
			c.do(t, call{method: "GET", path: base + badUser, token: key, req: reqProse, want: 400})
			c.do(t, call{method: "GET", path: base + unknownUser, token: key, want: 404})
			unauth(t, "GET", base+users, nil, "")
		}
	})

	tokPath := func(tok string) string { return v1 + users + "/" + tok }
	t.Run("import", func(t *testing.T) {
		form, ct := pfxForm(t, "pfxCertificate", readVTokenFixture(t, "chain.pfx"))
		pw := http.Header{"X-Virtualtoken-Certificatepassword": {"pfx-password"}}
		_, body := c.do(t, call{method: "POST", path: tokPath(tok1) + "/Certificate", token: key, header: pw, body: form, contentType: ct, want: 200})
		if s := decode[[]string](t, body); len(s) != 3 || s[0] != "ABCDEF0123" {
			t.Errorf("serials = %s", body)
		}
		wrong := http.Header{"X-Virtualtoken-Certificatepassword": {"wrong"}}
		c.do(t, call{method: "POST", path: tokPath(tok1) + "/Certificate", token: key, header: wrong, body: form, contentType: ct, req: reqProse, want: 400})
		ec, ect := pfxForm(t, "pfxCertificate", readVTokenFixture(t, "ec.pfx"))
		c.do(t, call{method: "POST", path: tokPath(tok2) + "/Certificate", token: key, header: pw, body: ec, contentType: ect, req: reqProse, want: 400})
		other, oct := pfxForm(t, "other", readVTokenFixture(t, "chain.pfx"))
		c.do(t, call{method: "POST", path: tokPath(tok1) + "/Certificate", token: key, header: pw, body: other, contentType: oct, req: reqProse, want: 400})
		c.do(t, call{method: "POST", path: tokPath(identity.NewGUID()) + "/Certificate", token: key, header: pw, body: form, contentType: ct, want: 404})
		big, bct := pfxForm(t, "pfxCertificate", bytes.Repeat([]byte{0x30}, 300<<10))
		c.do(t, call{method: "POST", path: tokPath(tok1) + "/Certificate", token: key, header: pw, body: big, contentType: bct, req: reqProse, want: 413})
		unauth(t, "POST", tokPath(tok1)+"/Certificate", form, ct)
	})

	t.Run("certificates", func(t *testing.T) {
		_, body := c.do(t, call{method: "GET", path: tokPath(tok1) + "/Certificates", token: key, want: 200})
		if certs := decode[[]map[string]any](t, body); len(certs) != 3 || certs[0]["hasPrivateKey"] != true || certs[0]["serialNumber"] != "ABCDEF0123" {
			t.Errorf("certificates = %s", body)
		}
		c.do(t, call{method: "GET", path: v1 + badUser + "/" + tok1 + "/Certificates", token: key, req: reqProse, want: 400})
		c.do(t, call{method: "GET", path: tokPath(identity.NewGUID()) + "/Certificates", token: key, want: 404})
		unauth(t, "GET", tokPath(tok1)+"/Certificates", nil, "")
	})

	t.Run("label", func(t *testing.T) {
		c.do(t, call{method: "PUT", path: tokPath(tok1) + "/Label/My%20card", token: key, want: 204})
		c.do(t, call{method: "PUT", path: tokPath(tok1) + "/Label/" + strings.Repeat("x", 33), token: key, req: reqProse, want: 400})
		c.do(t, call{method: "PUT", path: tokPath(identity.NewGUID()) + "/Label/x", token: key, want: 404})
		unauth(t, "PUT", tokPath(tok1)+"/Label/x", nil, "")
	})

	adminPIN := jsonBody(strings.Repeat("ab", 24))
	t.Run("pins", func(t *testing.T) {
		role := func(r string) string { return tokPath(tok1) + "/Role/" + r }
		c.do(t, call{method: "POST", path: role("User:ChangePin"), token: key, body: jsonBody("new-user-pin"),
			header: http.Header{"X-Virtualtoken-Currentpassword": {"whatever-1"}}, want: 409})
		c.do(t, call{method: "POST", path: role("User:ResetPin"), token: key, body: jsonBody("user-pin-1"), want: 204})
		c.do(t, call{method: "POST", path: role("Admin:ResetPin"), token: key, body: adminPIN, want: 204})
		c.do(t, call{method: "POST", path: role("Admin:ResetPin"), token: key, body: jsonBody("not-hex"), req: reqProse, want: 400})
		c.do(t, call{method: "POST", path: role("User:ResetPin"), token: key, body: jsonBody("short"), req: reqProse, want: 400})
		c.do(t, call{method: "POST", path: role("SO:ResetPin"), token: key, body: jsonBody("user-pin-1"), req: reqProse, want: 404})
		c.do(t, call{method: "POST", path: role("User:Unblock"), token: key, body: jsonBody("user-pin-1"), req: reqProse, want: 404})
		c.do(t, call{method: "POST", path: role("User"), token: key, body: jsonBody("user-pin-1"), req: reqInvalid, want: 404})
		c.do(t, call{method: "POST", path: tokPath(identity.NewGUID()) + "/Role/User:ResetPin", token: key, body: jsonBody("user-pin-1"), want: 404})
		c.do(t, call{method: "POST", path: role("User:ChangePin"), token: key, body: jsonBody("user-pin-2"),
			header: http.Header{"X-Virtualtoken-Currentpassword": {"user-pin-1"}}, want: 204})
		// The specification's ChangePin: reset's body and header, no current password.
		c.do(t, call{method: "POST", path: role("User:ChangePin"), token: key, body: jsonBody("user-pin-3"),
			header: http.Header{"X-Virtualtoken-Isnewpasswordencrypted": {"false"}}, want: 204})
		c.do(t, call{method: "POST", path: role("User:ChangePin"), token: key, body: jsonBody("user-pin-2"),
			header: http.Header{"X-Virtualtoken-Currentpassword": {"user-pin-3"}}, want: 204})
		for range 5 {
			c.do(t, call{method: "POST", path: role("Admin:ChangePin"), token: key, body: adminPIN,
				header: http.Header{"X-Virtualtoken-Currentpassword": {strings.Repeat("00", 24)}}, req: reqProse, want: 400})
		}
		resp, _ := c.do(t, call{method: "POST", path: role("Admin:ChangePin"), token: key, body: adminPIN,
			header: http.Header{"X-Virtualtoken-Currentpassword": {strings.Repeat("ab", 24)}}, req: reqProse, want: 429})
		if resp.Header.Get("Retry-After") != "900" {
			t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
		}
		unauth(t, "POST", role("User:ResetPin"), jsonBody("user-pin-1"), "")
	})

	t.Run("sign", func(t *testing.T) {
		p := tokPath(tok1) + "/Sign"
		data := base64.StdEncoding.EncodeToString([]byte("hello"))
		req := func(alg, pw string) []byte {
			return jsonBody(map[string]any{"algorithm": alg, "data": data, "password": pw, "serialNumber": "ABCDEF0123"})
		}
		_, body := c.do(t, call{method: "POST", path: p, token: key, body: req("PS256", "user-pin-2"), want: 200})
		if s := decode[map[string]any](t, body); s["signature"] == "" {
			t.Errorf("signature = %s", body)
		}
		c.do(t, call{method: "POST", path: p, token: key, body: req("ES256", "user-pin-2"), req: reqInvalid, want: 400})
		c.do(t, call{method: "POST", path: p, token: key, body: jsonBody(map[string]any{"algorithm": "RS256", "data": data, "password": "user-pin-2", "serialNumber": "1001"}), want: 404})
		c.do(t, call{method: "POST", path: tokPath(tok2) + "/Sign", token: key, body: req("RS256", "user-pin-2"), want: 404})
		big := jsonBody(map[string]any{"algorithm": "RS256", "data": strings.Repeat("A", 200<<10), "password": "x"})
		c.do(t, call{method: "POST", path: p, token: key, body: big, req: reqProse, want: 413})
		// tok2 holds a key but no User password: 409; wrong passwords lock it: 429.
		form, ct := pfxForm(t, "pfxCertificate", readVTokenFixture(t, "rsa4096-legacy.pfx"))
		c.do(t, call{method: "POST", path: tokPath(tok2) + "/Certificate", token: key, header: http.Header{"X-Virtualtoken-Certificatepassword": {"pfx-password"}}, body: form, contentType: ct, want: 200})
		p2 := tokPath(tok2) + "/Sign"
		req2 := func(pw string) []byte {
			return jsonBody(map[string]any{"algorithm": "RS256", "data": data, "password": pw})
		}
		c.do(t, call{method: "POST", path: p2, token: key, body: req2("user-pin-1"), want: 409})
		c.do(t, call{method: "POST", path: tokPath(tok2) + "/Role/User:ResetPin", token: key, body: jsonBody("user-pin-1"), want: 204})
		for range 5 {
			c.do(t, call{method: "POST", path: p2, token: key, body: req2("wrong-pin-1"), req: reqProse, want: 400})
		}
		c.do(t, call{method: "POST", path: p2, token: key, body: req2("user-pin-1"), req: reqProse, want: 429})
		unauth(t, "POST", p, req("RS256", "user-pin-2"), "")
	})

	t.Run("complete", func(t *testing.T) {
		c.do(t, call{method: "PUT", path: tokPath(tok1) + "/ProvisioningComplete", token: key, want: 204})
		c.do(t, call{method: "PUT", path: tokPath(tok1) + "/ProvisioningComplete", token: key, want: 409})
		c.do(t, call{method: "PUT", path: tokPath(tok1) + "/Label/late", token: key, want: 409})
		form, ct := pfxForm(t, "pfxCertificate", readVTokenFixture(t, "rsa2048-modern.pfx"))
		c.do(t, call{method: "POST", path: tokPath(tok1) + "/Certificate", token: key, header: http.Header{"X-Virtualtoken-Certificatepassword": {"pfx-password"}}, body: form, contentType: ct, want: 409})
		c.do(t, call{method: "PUT", path: v1 + badUser + "/" + tok1 + "/ProvisioningComplete", token: key, req: reqProse, want: 400})
		c.do(t, call{method: "PUT", path: tokPath(identity.NewGUID()) + "/ProvisioningComplete", token: key, want: 404})
		unauth(t, "PUT", tokPath(tok1)+"/ProvisioningComplete", nil, "")
	})

	t.Run("delete", func(t *testing.T) {
		unauth(t, "DELETE", tokPath(tok1), nil, "")
		c.do(t, call{method: "DELETE", path: tokPath(tok1), token: key, want: 204})
		c.do(t, call{method: "DELETE", path: tokPath(tok1), token: key, want: 404})
		c.do(t, call{method: "DELETE", path: v1 + badUser + "/" + tok2, token: key, req: reqProse, want: 400})
	})
}
