package mfa_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/mfa"
)

// Rules of API-mfa.md not held by the other tests, each failing without
// its rule.

// adminMFA enrols the tenant administrator's TOTP device and returns a
// JWT of a password + TOTP sign-in (the step-up policy changes need) and
// the device's secret.
func (e env) adminMFA() (string, []byte) {
	e.T.Helper()
	secret, _ := e.enrol(e.tenant.AdminToken)
	return e.adminSignIn(secret), secret
}

// adminSignIn signs the tenant administrator in with password and TOTP.
func (e env) adminSignIn(secret []byte) string {
	e.T.Helper()
	t := e.T.(*testing.T)
	e.Clock.Advance(30 * time.Second)
	tok := wantCode(t, "admin login", e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "tadmin", "password": "tenant-password-1", "auth_domain": e.tenant.Code}), 403, mfa.CodeRequired)["mfa_token"].(string)
	return wantCode(t, "admin second step", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": totpCode(secret, e.Clock.Now(), 6)}), 200, "")["jwt"].(string)
}

func (e env) policy(admin string, p map[string]any) {
	e.T.Helper()
	r := e.Do("PATCH", "/api/v1/admin/tenants/"+e.tenant.ID+"/settings", map[string]any{"mfa": p}, e.bearer(admin))
	wantCode(e.T.(*testing.T), fmt.Sprint("policy ", p), r, 200, "")
}

func (e env) user(admin, name string, roles ...string) {
	e.T.Helper()
	body := map[string]any{"name": name, "password": name + "-password-1"}
	if len(roles) > 0 {
		body["roles"] = roles
	}
	wantCode(e.T.(*testing.T), "create "+name, e.Do("POST", "/api/v1/admin/tenants/"+e.tenant.ID+"/users", body, e.bearer(admin)), http.StatusCreated, "")
}

// TestFactorNotAllowed: TOTP enrolment under mode off or level phr is
// 403 MFA_FACTOR_NOT_ALLOWED.
func TestFactorNotAllowed(t *testing.T) {
	e := newEnv(t)
	admin, _ := e.adminMFA()
	for _, p := range []map[string]any{{"mode": "off"}, {"mode": "optional", "level": "phr"}} {
		e.policy(admin, p)
		jwt := e.Login("alice", "alice-password-1", e.tenant.Code)
		wantCode(t, fmt.Sprint("TOTP under ", p), e.Do("POST", "/api/v1/me/mfa/totp", map[string]any{}, e.bearer(jwt)), 403, mfa.CodeFactorNotAllowed)
	}
}

// TestPendingDeviceExpiresAndDiesOfWrongCodes: a pending device cannot
// be confirmed after 10 minutes (404), and 5 wrong codes delete one (a
// right code then is 404).
func TestPendingDeviceExpiresAndDiesOfWrongCodes(t *testing.T) {
	e := newEnv(t)
	jwt := e.Login("alice", "alice-password-1", e.tenant.Code)
	create := func() (string, []byte) {
		m := wantCode(t, "create", e.Do("POST", "/api/v1/me/mfa/totp", map[string]any{}, e.bearer(jwt)), 201, "")
		s, err := latchkeytest.TOTPSecret(m["secret"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return m["id"].(string), s
	}
	confirm := func(id, otp string) latchkeytest.Response {
		return e.Do("POST", "/api/v1/me/mfa/totp/"+id+"/confirm", map[string]any{"otp": otp}, e.bearer(jwt))
	}
	id, secret := create()
	e.Clock.Advance(mfa.PendingTTL + time.Second)
	jwt = e.Login("alice", "alice-password-1", e.tenant.Code)
	wantCode(t, "an expired pending device", confirm(id, totpCode(secret, e.Clock.Now(), 6)), 404, "")

	id, secret = create()
	wrong := totpCode(secret, e.Clock.Now().Add(-time.Hour), 6)
	for i := range mfa.MaxConfirmFailures {
		wantCode(t, fmt.Sprint("wrong code ", i+1), confirm(id, wrong), 400, mfa.CodeInvalidOTP)
	}
	wantCode(t, "a right code after 5 wrong ones", confirm(id, totpCode(secret, e.Clock.Now(), 6)), 404, "")
}

// TestRequiredRoles: under optional, a holder of a required role without
// a factor must enrol; a user without the role signs in with a password.
func TestRequiredRoles(t *testing.T) {
	e := newEnv(t)
	admin, _ := e.adminMFA()
	e.policy(admin, map[string]any{"mode": "optional", "requiredRoles": []string{"tenant-admin"}})
	e.user(admin, "olga", "tenant-admin")
	wantCode(t, "a tenant-admin's password", e.login("olga", "olga-password-1"), 403, mfa.CodeEnrollmentRequired)
	wantCode(t, "a user's password", e.login("alice", "alice-password-1"), 200, "")
}

// TestRefreshBelowTheRequirement: a refresh token of a password sign-in,
// once the tenant requires a second factor, is spent and answered 403
// with an mfa_token; the same token again is 401.
func TestRefreshBelowTheRequirement(t *testing.T) {
	e := newEnv(t)
	admin, _ := e.adminMFA()
	// bob signs in with a password while nothing is asked of him.
	e.user(admin, "bob")
	refresh := wantCode(t, "bob", e.login("bob", "bob-password-1"), 200, "")["refresh_token"]
	e.policy(admin, map[string]any{"mode": "required"})
	m := wantCode(t, "refresh below the requirement", e.step(map[string]any{"grant_type": "refresh_token", "refresh_token": refresh}), 403, mfa.CodeEnrollmentRequired)
	if tok, _ := m["mfa_token"].(string); !strings.HasPrefix(tok, mfa.TokenPrefix) {
		t.Errorf("no mfa_token: %v", m)
	}
	wantCode(t, "the spent refresh token", e.step(map[string]any{"grant_type": "refresh_token", "refresh_token": refresh}), 401, "")
}

// TestCorrectPasswordKeepsTheThrottle: an MFA user's correct password
// (answered MFA_REQUIRED) does not clear the login throttle's failures;
// only a completed sign-in does.
func TestCorrectPasswordKeepsTheThrottle(t *testing.T) {
	e := newEnv(t)
	secret, _ := e.enrol(e.Login("alice", "alice-password-1", e.tenant.Code))
	for range 4 {
		wantCode(t, "wrong password", e.login("alice", "wrong-password-1"), 401, "")
	}
	wantCode(t, "the right password", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)
	wantCode(t, "the fifth wrong password", e.login("alice", "wrong-password-1"), 401, "")
	r := e.login("alice", "alice-password-1")
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the right password after 5 failures: %d %s", r.Status, r.Body)
	}
	// A completed sign-in clears the failures.
	e.Clock.Advance(16 * time.Minute)
	for range 4 {
		wantCode(t, "wrong password", e.login("alice", "wrong-password-1"), 401, "")
	}
	tok := wantCode(t, "the right password", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)["mfa_token"].(string)
	wantCode(t, "the code", e.step(map[string]any{"grant_type": "mfa_otp", "mfa_token": tok, "otp": totpCode(secret, e.Clock.Now(), 6)}), 200, "")
	for range 4 {
		wantCode(t, "wrong password after a sign-in", e.login("alice", "wrong-password-1"), 401, "")
	}
	wantCode(t, "the right password after a sign-in", e.login("alice", "alice-password-1"), 403, mfa.CodeRequired)
}

// TestResetGivesAGrace: under required, an administrator's reset of a
// user whose grace is over gives at least a day to enrol again.
func TestResetGivesAGrace(t *testing.T) {
	e := newEnv(t)
	admin, secret := e.adminMFA()
	e.policy(admin, map[string]any{"mode": "required", "enrollmentGraceDays": 1})
	e.Clock.Advance(49 * time.Hour)
	wantCode(t, "alice after her grace", e.login("alice", "alice-password-1"), 403, mfa.CodeEnrollmentExpired)
	admin = e.adminSignIn(secret)
	r := e.Do("DELETE", "/api/v1/admin/tenants/"+e.tenant.ID+"/users/"+aliceID(t, e)+"/mfa", nil, e.bearer(admin))
	wantCode(t, "reset", r, 204, "")
	m := wantCode(t, "alice after the reset", e.login("alice", "alice-password-1"), 403, mfa.CodeEnrollmentRequired)
	deadline, err := time.Parse(time.RFC3339, fmt.Sprint(m["enrollment_deadline"]))
	if err != nil || deadline.Before(e.Clock.Now().Add(24*time.Hour-time.Second)) {
		t.Errorf("enrollment_deadline %v (%v), now %v", m["enrollment_deadline"], err, e.Clock.Now())
	}
}
