package mfa_test

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/mfa"
)

func totpCode(secret []byte, t time.Time, digits int) string {
	return latchkeytest.TOTP(secret, t, digits)
}

// TestIndependentTOTPMatchesRFC6238 holds the test's generator to RFC
// 6238 appendix B (the SHA-1 rows, 8 digits).
func TestIndependentTOTPMatchesRFC6238(t *testing.T) {
	secret := []byte("12345678901234567890")
	for _, v := range []struct {
		unix int64
		want string
	}{{59, "94287082"}, {1111111109, "07081804"}, {1111111111, "14050471"}, {1234567890, "89005924"}, {2000000000, "69279037"}, {20000000000, "65353130"}} {
		if got := totpCode(secret, time.Unix(v.unix, 0), 8); got != v.want {
			t.Errorf("T=%d: %s, want %s", v.unix, got, v.want)
		}
	}
}

// env is a platform with a tenant and a user alice.
type env struct {
	*latchkeytest.Env
	tenant latchkeytest.Tenant
}

func newEnv(t *testing.T, opts ...latchkeytest.Option) env {
	e := env{Env: latchkeytest.New(t, opts...)}
	e.tenant = e.NewTenant("Acme Corp")
	r := e.Do("POST", "/api/v1/admin/tenants/"+e.tenant.ID+"/users", map[string]any{"name": "alice", "password": "alice-password-1"}, e.bearer(e.tenant.AdminToken))
	if r.Status != http.StatusCreated {
		t.Fatalf("create alice: %d %s", r.Status, r.Body)
	}
	return e
}

func (e env) bearer(tok string) string { return "Authorization: Bearer " + tok }

func (e env) login(name, password string) latchkeytest.Response {
	e.T.Helper()
	return e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": name, "password": password, "auth_domain": e.tenant.Code})
}

func wantCode(t *testing.T, what string, r latchkeytest.Response, status int, code string) map[string]any {
	t.Helper()
	m := r.JSON()
	if r.Status != status || (code != "" && m["codeDesc"] != code) {
		t.Fatalf("%s: %d %s, want %d %s", what, r.Status, r.Body, status, code)
	}
	return m
}

// enrol adds and confirms a TOTP device for the holder of jwt and returns
// its secret and the recovery codes the confirmation gave.
func (e env) enrol(jwt string) ([]byte, []string) {
	e.T.Helper()
	user := latchkeytest.UnverifiedClaims(e.T, jwt)["sub"].(string)
	uid, _ := identity.ParseObjectID(user, "")
	u2, _ := e.Store.GetUser(e.T.Context(), e.tenant.ID, uid)
	r := e.Do("POST", "/api/v1/me/mfa/totp", map[string]any{"friendlyName": "phone"}, e.bearer(jwt))
	m := wantCode(e.T.(*testing.T), "create TOTP", r, http.StatusCreated, "")
	if r.Header.Get("Cache-Control") != "no-store" {
		e.T.Errorf("creation answer Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(m["secret"].(string))
	if err != nil || len(secret) != 20 {
		e.T.Fatalf("secret %q: %v", m["secret"], err)
	}
	u, err := url.Parse(m["otpauthUri"].(string))
	if err != nil || u.Scheme != "otpauth" || u.Host != "totp" || u.Path != "/Acme Corp:"+u2.Name || !strings.Contains(u.RawQuery, "issuer=Acme%20Corp&") || u.Query().Get("issuer") != "Acme Corp" ||
		u.Query().Get("secret") != m["secret"] || u.Query().Get("algorithm") != "SHA1" || u.Query().Get("digits") != "6" || u.Query().Get("period") != "30" {
		e.T.Errorf("otpauthUri %q", m["otpauthUri"])
	}
	if !strings.HasPrefix(m["qrCode"].(string), "data:image/png;base64,") || m["state"] != "pending" {
		e.T.Errorf("creation answer %v", m)
	}
	id := m["id"].(string)
	wrong := totpCode(secret, e.Clock.Now().Add(-time.Hour), 6)
	r = e.Do("POST", "/api/v1/me/mfa/totp/"+id+"/confirm", map[string]any{"otp": wrong}, e.bearer(jwt))
	wantCode(e.T.(*testing.T), "wrong confirmation", r, http.StatusBadRequest, mfa.CodeInvalidOTP)
	r = e.Do("POST", "/api/v1/me/mfa/totp/"+id+"/confirm", map[string]any{"otp": totpCode(secret, e.Clock.Now(), 6)}, e.bearer(jwt))
	m = wantCode(e.T.(*testing.T), "confirmation", r, http.StatusOK, "")
	if m["state"] != "active" {
		e.T.Errorf("confirmed device %v", m)
	}
	var codes []string
	for _, c := range m["recoveryCodes"].([]any) {
		codes = append(codes, c.(string))
	}
	return secret, codes
}

func (e env) step(body map[string]any) latchkeytest.Response {
	e.T.Helper()
	return e.Do("POST", "/api/v1/auth/tokens/", body)
}

func TestTOTPSignIn(t *testing.T) {
	e := newEnv(t)
	first := e.login("alice", "alice-password-1")
	jwt := wantCode(t, "password login", first, 200, "")["jwt"].(string)
	if c := latchkeytest.UnverifiedClaims(t, jwt); c["acr"] != identity.ACRPassword || fmt.Sprint(c["amr"]) != "[pwd]" || c["auth_time"] == nil {
		t.Errorf("password JWT claims %v", c)
	}
	secret, codes := e.enrol(jwt)
	codeRE := regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}$`)
	if len(codes) != 10 || !codeRE.MatchString(codes[0]) || slices.Compact(slices.Sorted(slices.Values(codes))) == nil {
		t.Fatalf("recovery codes %v", codes)
	}
	// The first factor ended the refresh token of the password login.
	r := e.step(map[string]any{"grant_type": "refresh_token", "refresh_token": first.JSON()["refresh_token"]})
	wantCode(t, "refresh after the first factor", r, 401, "")

	m := wantCode(t, "password of an MFA user", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)
	tok := m["mfa_token"].(string)
	if !strings.HasPrefix(tok, "lkmfa_") || m["expires_in"] != float64(300) || fmt.Sprint(m["factors"]) != "[otp recovery_code]" {
		t.Fatalf("MFA_REQUIRED body %v", m)
	}
	// The confirmation's code is the device's last step: it cannot sign in.
	r = e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": totpCode(secret, e.Clock.Now(), 6)})
	failed := wantCode(t, "the confirmation's code again", r, 401, mfa.CodeFailed)
	e.Clock.Advance(30 * time.Second)
	code := totpCode(secret, e.Clock.Now(), 6)
	r = e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": code})
	ok := wantCode(t, "second step", r, 200, "")
	c := latchkeytest.UnverifiedClaims(t, ok["jwt"].(string))
	if c["acr"] != identity.ACRMFA || fmt.Sprint(c["amr"]) != "[pwd otp mfa]" {
		t.Errorf("MFA JWT claims %v", c)
	}
	wantCode(t, "the spent token", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": code}), 401, mfa.CodeInvalidToken)
	tok = wantCode(t, "login", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
	replayed := wantCode(t, "a replayed code", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": code}), 401, mfa.CodeFailed)
	if replayed["message"] != failed["message"] {
		t.Errorf("messages differ: %q and %q", replayed["message"], failed["message"])
	}
	// The refresh keeps how the user signed in.
	r = e.step(map[string]any{"grant_type": "refresh_token", "refresh_token": ok["refresh_token"]})
	if c := latchkeytest.UnverifiedClaims(t, wantCode(t, "refresh", r, 200, "")["jwt"].(string)); c["acr"] != identity.ACRMFA || c["auth_time"] == nil {
		t.Errorf("refreshed claims %v", c)
	}

	// A recovery code, once; then one message for a spent code.
	r = e.step(map[string]any{"grant_type": "mfa_recovery_code", "mfa_token": tok, "recovery_code": strings.ToLower(strings.ReplaceAll(codes[3], "-", " "))})
	m = wantCode(t, "recovery code", r, 200, "")
	if m["recovery_codes_left"] != float64(9) {
		t.Errorf("recovery_codes_left %v", m["recovery_codes_left"])
	}
	tok = wantCode(t, "login", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
	spent := wantCode(t, "a spent recovery code", e.step(map[string]any{"grant_type": "mfa_recovery_code", "mfa_token": tok, "recovery_code": codes[3]}), 401, mfa.CodeFailed)
	if spent["message"] != failed["message"] {
		t.Errorf("messages differ: %q and %q", spent["message"], failed["message"])
	}
	// Bad input is 400 and costs no attempt.
	for _, body := range []map[string]any{
		{"grant_type": "mfa_otp", "mfa_token": tok, "otp": "12345"},
		{"grant_type": "mfa_otp", "mfa_token": tok, "otp": "12345a"},
		{"grant_type": "mfa_otp", "otp": "123456"},
		{"grant_type": "mfa_recovery_code", "mfa_token": tok},
		{"grant_type": "mfa_passkey", "mfa_token": tok, "flowId": "x"},
	} {
		wantCode(t, fmt.Sprint(body), e.step(body), 400, "INVALID_REQUEST")
	}
	// A token of the API is no token of the hosted page.
	_, err := e.Platform.MFA.Verify(t.Context(), mfa.Step{GrantType: mfa.GrantOTP, Token: tok, OTP: "000000", Origin: identity.OriginOIDC})
	if fault := err; fault == nil || !strings.Contains(err.Error(), "mfa_token") {
		t.Errorf("another origin's token: %v", err)
	}
	// Four more wrong codes (one was counted above) kill the token.
	for range 4 {
		wantCode(t, "wrong code", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": "000000"}), 401, mfa.CodeFailed)
	}
	e.Clock.Advance(30 * time.Second)
	wantCode(t, "a right code after 5 wrong ones", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": totpCode(secret, e.Clock.Now(), 6)}), 401, mfa.CodeInvalidToken)
}

func TestSecondFactorThrottleAndLock(t *testing.T) {
	e := newEnv(t)
	jwt := e.Login("alice", "alice-password-1", e.tenant.Code)
	secret, _ := e.enrol(jwt)
	fails, throttled := 0, 0
	for fails < mfa.LockAfter {
		tok := wantCode(t, "login", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
		for range mfa.MaxTokenAttempts {
			if fails > throttled && fails%mfa.MaxFailuresPerWindow == 0 {
				throttled = fails
				r := e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": "000000"})
				if r.Status != 429 || r.Header.Get("Retry-After") == "" {
					t.Fatalf("after %d failures: %d %s, want 429 with Retry-After", fails, r.Status, r.Body)
				}
				e.Clock.Advance(time.Hour)
				break
			}
			r := e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": "000000"})
			fails++
			want := mfa.CodeFailed
			status := 401
			if fails == mfa.LockAfter {
				want, status = mfa.CodeLocked, 403
			}
			wantCode(t, fmt.Sprint("failure ", fails), r, status, want)
			if fails == mfa.LockAfter {
				break
			}
		}
	}
	// Locked: the password step says so, and even the right code is refused.
	wantCode(t, "login while locked", e.login("alice", "alice-password-1"), 403, mfa.CodeLocked)
	o, err := e.Platform.MFA.UserFactors(t.Context(), identity.Principal{Kind: identity.KindUser, TenantID: e.Root.ID, TenantCode: e.Root.Code, Roles: []string{"tenant-admin"}}, e.tenant.ID, aliceID(t, e))
	if err != nil || !o.OTPLocked || o.TOTP[0].State != mfa.StateLocked {
		t.Errorf("overview %+v, %v", o, err)
	}
	_ = secret
	// The password throttle counted none of the 100: the password works.
	r := e.login("alice", "wrong-password")
	wantCode(t, "a wrong password", r, 401, "")
}

func aliceID(t *testing.T, e env) string {
	t.Helper()
	u, err := e.Store.GetUserByName(t.Context(), e.tenant.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return u.ID.String()
}

func TestRequiredPolicyEnrollment(t *testing.T) {
	e := newEnv(t)
	// Changing the policy needs the administrator's step-up.
	r := e.Do("PATCH", "/api/v1/admin/tenants/"+e.tenant.ID+"/settings", map[string]any{"mfa": map[string]any{"mode": "required"}}, e.bearer(e.tenant.AdminToken))
	wantCode(t, "policy change without step-up", r, 401, identity.CodeInsufficientUserAuthentication)
	if h := r.Header.Get("WWW-Authenticate"); !strings.Contains(h, `error="insufficient_user_authentication"`) || !strings.Contains(h, `acr_values="urn:latchkey:acr:mfa"`) || !strings.Contains(h, `max_age="900"`) {
		t.Errorf("challenge %q", h)
	}
	secret, _ := e.enrol(e.tenant.AdminToken)
	e.Clock.Advance(30 * time.Second)
	tok := wantCode(t, "admin login", e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "tadmin", "password": "tenant-password-1", "auth_domain": e.tenant.Code}), 403, mfa.CodeRequired)["mfa_token"].(string)
	admin := wantCode(t, "admin second step", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": totpCode(secret, e.Clock.Now(), 6)}), 200, "")["jwt"].(string)
	r = e.Do("PATCH", "/api/v1/admin/tenants/"+e.tenant.ID+"/settings", map[string]any{"mfa": map[string]any{"mode": "required", "enrollmentGraceDays": 2}}, e.bearer(admin))
	if m := wantCode(t, "policy change", r, 200, ""); fmt.Sprint(m["settings"].(map[string]any)["mfa"].(map[string]any)["mode"]) != "required" {
		t.Errorf("settings %v", m)
	}
	// alice has no factor: an enrollment token, valid 10 minutes.
	m := wantCode(t, "alice's login", e.login("alice", "alice-password-1"), 403, mfa.CodeEnrollmentRequired)
	if m["expires_in"] != float64(600) || fmt.Sprint(m["factors"]) != "[otp passkey]" || m["enrollment_deadline"] == nil {
		t.Fatalf("enrollment body %v", m)
	}
	etok := m["mfa_token"].(string)
	// The token is a bearer for enrolment only.
	wantCode(t, "enrollment token elsewhere", e.Do("GET", "/api/v1/me/mfa", nil, e.bearer(etok)), 401, "")
	r = e.Do("POST", "/api/v1/me/mfa/totp", map[string]any{}, e.bearer(etok))
	dev := wantCode(t, "enrol with the token", r, 201, "")
	s2, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(dev["secret"].(string))
	r = e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": etok, "otp": totpCode(s2, e.Clock.Now(), 6)})
	done := wantCode(t, "enrolment's second step", r, 200, "")
	if codes, _ := done["recovery_codes"].([]any); len(codes) != 10 {
		t.Errorf("recovery_codes %v", done["recovery_codes"])
	}
	aliceJWT := done["jwt"].(string)
	// The last factor cannot go while the policy requires one.
	r = e.Do("DELETE", "/api/v1/me/mfa/totp/"+dev["id"].(string), nil, e.bearer(aliceJWT))
	wantCode(t, "remove the last factor", r, 409, mfa.CodeLastFactor)

	// bob, created after the policy, past his grace.
	r = e.Do("POST", "/api/v1/admin/tenants/"+e.tenant.ID+"/users", map[string]any{"name": "bob", "password": "bob-password-12"}, e.bearer(admin))
	wantCode(t, "create bob", r, 201, "")
	e.Clock.Advance(49 * time.Hour)
	wantCode(t, "bob after his grace", e.login("bob", "bob-password-12"), 403, mfa.CodeEnrollmentExpired)
	if m := wantCode(t, "bob", e.login("bob", "bob-password-12"), 403, ""); m["mfa_token"] != nil {
		t.Errorf("an expired enrolment got a token: %v", m)
	}
}

// TestNoEnumeration: unknown user, wrong password and an MFA user's
// wrong password answer alike (R15).
func TestNoEnumeration(t *testing.T) {
	e := newEnv(t)
	jwt := e.Login("alice", "alice-password-1", e.tenant.Code)
	e.enrol(jwt)
	r := e.Do("POST", "/api/v1/admin/tenants/"+e.tenant.ID+"/users", map[string]any{"name": "carol", "password": "carol-password-1"}, e.bearer(e.tenant.AdminToken))
	wantCode(t, "create carol", r, 201, "")
	var bodies []string
	for _, name := range []string{"nobody", "carol", "alice"} {
		r := e.login(name, "wrong-password")
		m := wantCode(t, name, r, 401, "UNAUTHORIZED")
		bodies = append(bodies, fmt.Sprint(m["code"], m["codeDesc"], m["message"]))
	}
	if bodies[0] != bodies[1] || bodies[1] != bodies[2] {
		t.Errorf("bodies differ: %q", bodies)
	}
}

// TestGuideSecondStep: the guide's login answers the password step as
// the API does (403 MFA_REQUIRED, an mfa_token of origin guide) and takes
// the second step at the same route; its session's tokens say acr mfa. A
// token of the API's login is refused there.
func TestGuideSecondStep(t *testing.T) {
	e := newEnv(t)
	secret, _ := e.enrol(e.Login("alice", "alice-password-1", e.tenant.Code))
	pw := map[string]string{"name": "alice", "password": "alice-password-1", "tenant": e.tenant.Code}
	m := wantCode(t, "guide password step", e.Do("POST", "/guide/session", pw), 403, mfa.CodeRequired)
	tok := m["mfa_token"].(string)
	api := wantCode(t, "API password step", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
	e.Clock.Advance(30 * time.Second)
	code := totpCode(secret, e.Clock.Now(), 6)
	wantCode(t, "an API token in the guide", e.Do("POST", "/guide/session", map[string]any{"grant_type": "mfa_otp", "mfa_token": api, "otp": code}), 401, mfa.CodeInvalidToken)
	r := e.Do("POST", "/guide/session", map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": code})
	s := wantCode(t, "guide second step", r, 200, "")
	if c := latchkeytest.UnverifiedClaims(t, s["token"].(string)); c["acr"] != identity.ACRMFA || fmt.Sprint(c["amr"]) != "[pwd otp mfa]" {
		t.Errorf("guide token claims %v", c)
	}
}

// TestPasskeySecondFactor: a FIDO authenticator of the user as the
// second step after a password: the options list it with
// userVerification discouraged, the assertion completes the sign-in with
// acr phr, and a passkey sign-in says mfa too.
func TestPasskeySecondFactor(t *testing.T) {
	e := newEnv(t)
	jwt := e.Login("alice", "alice-password-1", e.tenant.Code)
	d := authenticatortest.New("localhost", "http://localhost:8080")
	o := e.Do("POST", "/api/v1/me/passkeys/options", map[string]any{}, e.bearer(jwt))
	if o.Status != 200 {
		t.Fatalf("options: %d %s", o.Status, o.Body)
	}
	pk := o.JSON()["publicKey"].(map[string]any)
	d.UserHandle, _ = base64.RawURLEncoding.DecodeString(pk["user"].(map[string]any)["id"].(string))
	r := e.Do("POST", "/api/v1/me/passkeys", map[string]any{"flowId": o.JSON()["flowId"], "credential": json.RawMessage(d.PasskeyRegistrationJSON(pk["challenge"].(string)))}, e.bearer(jwt))
	wantCode(t, "register a passkey", r, 201, "")
	// With a factor, adding TOTP needs a step-up: the passkey gives one.
	wantCode(t, "TOTP without step-up", e.Do("POST", "/api/v1/me/mfa/totp", map[string]any{}, e.bearer(jwt)), 401, identity.CodeInsufficientUserAuthentication)
	o = e.Do("POST", "/api/v1/auth/passkeys/options", map[string]any{"auth_domain": e.tenant.Code})
	r = e.Do("POST", "/api/v1/auth/tokens/", map[string]any{"grant_type": "passkey", "flowId": o.JSON()["flowId"],
		"credential": json.RawMessage(d.PasskeyAssertionJSON(o.JSON()["publicKey"].(map[string]any)["challenge"].(string)))})
	phr := wantCode(t, "passkey sign-in", r, 200, "")["jwt"].(string)
	if c := latchkeytest.UnverifiedClaims(t, phr); c["acr"] != identity.ACRPhishingResistant || fmt.Sprint(c["amr"]) != "[hwk user mfa]" {
		t.Errorf("passkey sign-in claims %v", c)
	}
	e.enrol(phr)
	m := wantCode(t, "password step", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)
	if fmt.Sprint(m["factors"]) != "[otp recovery_code passkey]" {
		t.Errorf("factors %v", m["factors"])
	}
	tok := m["mfa_token"].(string)
	o = e.Do("POST", "/api/v1/auth/passkeys/options", map[string]any{"mfa_token": tok})
	opts := wantCode(t, "second-factor options", o, 200, "")
	pub := opts["publicKey"].(map[string]any)
	if pub["userVerification"] != "discouraged" || len(pub["allowCredentials"].([]any)) != 1 {
		t.Errorf("second-factor options %v", pub)
	}
	// A credential that does not parse is 400, and counts no attempt.
	wantCode(t, "unparsable credential", e.step(map[string]any{"grant_type": "mfa_passkey", "mfa_token": tok, "flowId": opts["flowId"], "credential": map[string]any{"id": 1}}), 400, "")
	r = e.step(map[string]any{"grant_type": "mfa_passkey", "mfa_token": tok, "flowId": opts["flowId"],
		"credential": json.RawMessage(d.PasskeyAssertionJSON(pub["challenge"].(string)))})
	c := latchkeytest.UnverifiedClaims(t, wantCode(t, "passkey second step", r, 200, "")["jwt"].(string))
	if c["acr"] != identity.ACRPhishingResistant || fmt.Sprint(c["amr"]) != "[pwd hwk user mfa]" {
		t.Errorf("second-factor claims %v", c)
	}
}

// TestEnrolPasskeyDuringSignIn: under a required policy a user without a
// factor enrols a passkey with the enrollment token (POST
// /me/passkeys/options as its bearer) and the registration signs in at
// once (mfa_passkey), with recovery codes.
func TestEnrolPasskeyDuringSignIn(t *testing.T) {
	e := newEnv(t)
	secret, _ := e.enrol(e.tenant.AdminToken)
	e.Clock.Advance(30 * time.Second)
	tok := wantCode(t, "admin login", e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "tadmin", "password": "tenant-password-1", "auth_domain": e.tenant.Code}), 403, mfa.CodeRequired)["mfa_token"].(string)
	admin := wantCode(t, "admin second step", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": totpCode(secret, e.Clock.Now(), 6)}), 200, "")["jwt"].(string)
	wantCode(t, "require", e.Do("PATCH", "/api/v1/admin/tenants/"+e.tenant.ID+"/settings", map[string]any{"mfa": map[string]any{"mode": "required"}}, e.bearer(admin)), 200, "")
	etok := wantCode(t, "alice's login", e.login("alice", "alice-password-1"), 403, mfa.CodeEnrollmentRequired)["mfa_token"].(string)
	o := e.Do("POST", "/api/v1/me/passkeys/options", map[string]any{}, e.bearer(etok))
	opts := wantCode(t, "creation options with the enrollment token", o, 200, "")
	pk := opts["publicKey"].(map[string]any)
	d := authenticatortest.New("localhost", "http://localhost:8080")
	d.UserHandle, _ = base64.RawURLEncoding.DecodeString(pk["user"].(map[string]any)["id"].(string))
	r := e.step(map[string]any{"grant_type": "mfa_passkey", "mfa_token": etok, "flowId": opts["flowId"], "credential": json.RawMessage(d.PasskeyRegistrationJSON(pk["challenge"].(string)))})
	m := wantCode(t, "register and sign in", r, 200, "")
	if codes, _ := m["recovery_codes"].([]any); len(codes) != 10 {
		t.Errorf("recovery_codes %v", m["recovery_codes"])
	}
	if c := latchkeytest.UnverifiedClaims(t, m["jwt"].(string)); c["acr"] != identity.ACRPhishingResistant || fmt.Sprint(c["amr"]) != "[pwd hwk user mfa]" {
		t.Errorf("claims %v", c)
	}
	// The next sign-in asks for the passkey.
	if m := wantCode(t, "next login", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired); fmt.Sprint(m["factors"]) != "[recovery_code passkey]" {
		t.Errorf("factors %v", m["factors"])
	}
}
