package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/latchkeytest"
)

// passkeyHTTP is a user of tenant Acme with one passkey, registered
// through the routes.
type passkeyHTTP struct {
	e      *latchkeytest.Env
	tenant latchkeytest.Tenant
	jwt    string
	d      *authenticatortest.Device
}

func newPasskeyHTTP(t *testing.T) *passkeyHTTP {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	d := authenticatortest.New("localhost", "http://localhost:8080") // the default relying party of a tenant
	ph := &passkeyHTTP{e: e, tenant: tn, jwt: tn.AdminToken, d: d}
	o := e.Do("POST", "/api/v1/me/passkeys/options", map[string]any{}, bearer(ph.jwt))
	if o.Status != 200 {
		t.Fatalf("options: %d %s", o.Status, o.Body)
	}
	pk := o.JSON()["publicKey"].(map[string]any)
	d.UserHandle, _ = base64.RawURLEncoding.DecodeString(pk["user"].(map[string]any)["id"].(string))
	r := e.Do("POST", "/api/v1/me/passkeys", map[string]any{"flowId": o.JSON()["flowId"],
		"credential": json.RawMessage(d.PasskeyRegistrationJSON(pk["challenge"].(string)))}, bearer(ph.jwt))
	if r.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	return ph
}

// signIn runs the options and the passkey grant with d's credential,
// changed by edit when set.
func (ph *passkeyHTTP) signIn(t *testing.T, name string, d *authenticatortest.Device, edit func(map[string]any)) latchkeytest.Response {
	t.Helper()
	o := ph.e.Do("POST", "/api/v1/auth/passkeys/options", map[string]any{"auth_domain": ph.tenant.Code, "name": name})
	if o.Status != 200 {
		t.Fatalf("options: %d %s", o.Status, o.Body)
	}
	var cred map[string]any
	json.Unmarshal(d.PasskeyAssertionJSON(o.JSON()["publicKey"].(map[string]any)["challenge"].(string)), &cred)
	body := map[string]any{"grant_type": "passkey", "flowId": o.JSON()["flowId"], "credential": cred}
	if edit != nil {
		edit(body)
	}
	return ph.e.Do("POST", "/api/v1/auth/tokens/", body)
}

// TestPasskeySignInOverHTTP: the sign-in answers as a password login does,
// each refusal is a 401 in area A's shape with the Bearer challenge, and
// the throttle's 429 carries Retry-After.
func TestPasskeySignInOverHTTP(t *testing.T) {
	ph := newPasskeyHTTP(t)
	ok := ph.signIn(t, "", ph.d, nil)
	if ok.Status != 200 {
		t.Fatalf("sign in: %d %s", ok.Status, ok.Body)
	}
	var keys []string
	for k := range ok.JSON() {
		keys = append(keys, k)
	}
	if diff := cmp.Diff([]string{"duration", "jwt", "refresh_token", "token_type"}, keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("token response fields (-want +got):\n%s", diff)
	}
	if r := ph.e.Do("GET", "/api/v1/me/passkeys", nil, bearer(ok.JSON()["jwt"].(string))); r.Status != 200 {
		t.Errorf("the passkey's JWT on /me/passkeys: %d %s", r.Status, r.Body)
	}

	refusals := []struct {
		name string
		dev  func() *authenticatortest.Device
		user string
		edit func(map[string]any)
	}{
		{"wrong origin", func() *authenticatortest.Device { d := *ph.d; d.Origin = "http://evil.localhost"; return &d }, "", nil},
		{"wrong RP ID", func() *authenticatortest.Device { d := *ph.d; d.RPID = "evil.example"; return &d }, "", nil},
		{"unknown credential", func() *authenticatortest.Device {
			d := authenticatortest.New("localhost", "http://localhost:8080")
			d.UserHandle = ph.d.UserHandle
			return d
		}, "", nil},
		{"flow of another name", func() *authenticatortest.Device { return ph.d }, "someone-else", nil},
		{"flow of another tenant", func() *authenticatortest.Device { return ph.d }, "", func(b map[string]any) {
			_, chal, _ := strings.Cut(b["flowId"].(string), ".")
			b["flowId"] = "ROOT000000." + chal
		}},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			r := ph.signIn(t, c.user, c.dev(), c.edit)
			if r.Status != http.StatusUnauthorized || r.JSON()["codeDesc"] != "UNAUTHORIZED" || r.JSON()["jwt"] != nil ||
				!strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("got %d %s %v", r.Status, r.Body, r.Header)
			}
		})
	}
	// Two failures above blame tadmin (the credential's user: wrong origin
	// and RP ID); the others name no user (an unknown credential, or a
	// flow of a name or tenant the credential is not of). Three more, and
	// even the right passkey is 429.
	for range 3 {
		d := *ph.d
		d.Origin = "http://evil.localhost"
		ph.signIn(t, "", &d, nil)
	}
	r := ph.signIn(t, "", ph.d, nil)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Errorf("after five failures: %d %s %v", r.Status, r.Body, r.Header)
	}
}
