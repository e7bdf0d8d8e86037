package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/mfa"
)

var mfaTokenInput = regexp.MustCompile(`name="mfa_token" value="([^"]+)"`)

// hostedMFA is a tenant with a public relying party and a user whose
// TOTP device is confirmed, driven through the hosted page as a browser
// would, without one.
type hostedMFA struct {
	e        *latchkeytest.Env
	acme     latchkeytest.Tenant
	client   string
	secret   []byte
	codes    []string
	verifier string
}

func newHostedMFA(t *testing.T) *hostedMFA {
	h := &hostedMFA{e: latchkeytest.New(t)}
	e := h.e
	acme := e.NewTenant("Acme")
	h.acme = acme
	r := e.Do("POST", "/api/v1/admin/tenants/"+acme.ID+"/oauth-clients", map[string]any{"name": "web", "type": "public", "scopes": []string{"openid", "offline_access"},
		"grant_types": []string{"authorization_code", "refresh_token"}, "redirect_uris": []string{"https://app.example/cb"}}, bearer(acme.AdminToken))
	if r.Status != http.StatusCreated {
		t.Fatalf("client: %d %s", r.Status, r.Body)
	}
	h.client = r.JSON()["client_id"].(string)
	if r := e.Do("POST", "/api/v1/admin/tenants/"+acme.ID+"/users", map[string]any{"name": "alice", "password": "alice-password-1"}, bearer(acme.AdminToken)); r.Status != http.StatusCreated {
		t.Fatalf("alice: %d %s", r.Status, r.Body)
	}
	jwt := e.Login("alice", "alice-password-1", acme.Code)
	dev := e.Do("POST", "/api/v1/me/mfa/totp", map[string]any{}, bearer(jwt))
	h.secret, _ = latchkeytest.TOTPSecret(dev.JSON()["secret"].(string))
	conf := e.Do("POST", "/api/v1/me/mfa/totp/"+dev.JSON()["id"].(string)+"/confirm", map[string]any{"otp": latchkeytest.TOTP(h.secret, e.Clock.Now(), 6)}, bearer(jwt))
	if conf.Status != http.StatusOK {
		t.Fatalf("confirm: %d %s", conf.Status, conf.Body)
	}
	for _, c := range conf.JSON()["recoveryCodes"].([]any) {
		h.codes = append(h.codes, c.(string))
	}
	h.verifier, _ = pkce("mfa")
	return h
}

// start follows an authorization request (extra parameters added) to the
// sign-in page and returns the browser's cookie and the page.
func (h *hostedMFA) start(t *testing.T, cookie string, extra url.Values) (string, latchkeytest.Response) {
	t.Helper()
	_, challenge := pkce("mfa")
	q := url.Values{"response_type": {"code"}, "client_id": {h.client}, "redirect_uri": {"https://app.example/cb"},
		"scope": {"openid offline_access"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	for k, v := range extra {
		q[k] = v
	}
	req, _ := http.NewRequest("GET", h.e.Server.URL+"/oauth/v1/authorize?"+q.Encode(), nil)
	if cookie != "" {
		req.Header.Set("Cookie", strings.TrimPrefix(cookie, "Cookie: "))
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "/oauth/v1/sign-in") {
		return cookie, latchkeytest.Response{Status: resp.StatusCode, Header: resp.Header}
	}
	hdr := []string{}
	if cookie != "" {
		hdr = append(hdr, cookie)
	}
	page := h.e.Do("GET", loc, nil, hdr...)
	if c := cookieOf(page, "latchkey-oidc"); c != "" {
		cookie = "Cookie: latchkey-oidc=" + c
	}
	return cookie, page
}

// post posts the page's form with fields and returns the answer; the
// cookie follows a new session.
func (h *hostedMFA) post(t *testing.T, cookie string, fields url.Values) (string, latchkeytest.Response) {
	t.Helper()
	// Never followed: the success redirect names the relying party.
	r := h.e.DoWith(noRedirect, h.e.Server.URL, "POST", "/oauth/v1/sign-in", fields.Encode(), cookie, "Content-Type: application/x-www-form-urlencoded")
	if c := cookieOf(r, "latchkey-oidc"); c != "" {
		cookie = "Cookie: latchkey-oidc=" + c
	}
	return cookie, r
}

func (h *hostedMFA) redeem(t *testing.T, location string) map[string]any {
	t.Helper()
	u, err := url.Parse(location)
	if err != nil || u.Query().Get("code") == "" {
		t.Fatalf("redirect %q", location)
	}
	resp, err := h.e.Server.Client().PostForm(h.e.Server.URL+"/oauth/v1/token", url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")},
		"redirect_uri": {"https://app.example/cb"}, "client_id": {h.client}, "code_verifier": {h.verifier}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("token: %d", resp.StatusCode)
	}
	var tok map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil {
		t.Fatal(err)
	}
	return latchkeytest.UnverifiedClaims(t, tok["id_token"].(string))
}

func hidden(t *testing.T, page []byte, re *regexp.Regexp) string {
	t.Helper()
	m := re.FindSubmatch(page)
	if m == nil {
		t.Fatalf("page without %s: %s", re, page)
	}
	return strings.ReplaceAll(string(m[1]), "&#43;", "+")
}

// TestHostedSecondStep: after alice's password the page asks for her
// code ("Two-step verification", the design's inputs and labels); a
// wrong code is 401 "Invalid code." on the same page, another browser's
// post of her step 403, a right code completes the request, and the ID
// token says acr mfa and amr pwd otp mfa.
func TestHostedSecondStep(t *testing.T) {
	h := newHostedMFA(t)
	cookie, page := h.start(t, "", nil)
	csrf, request := formValues(t, page.Body)
	cookie, second := h.post(t, cookie, url.Values{"csrf_token": {csrf}, "request": {request}, "username": {"alice"}, "password": {"alice-password-1"}})
	body := string(second.Body)
	for _, want := range []string{"<h1>Two-step verification</h1>", `<label for="otp">Authentication code</label>`, `inputmode="numeric"`,
		`autocomplete="one-time-code"`, `>Verify</button>`, `>Use a recovery code</a>`, `<label for="recovery_code">Recovery code</label>`, `>Sign in as someone else</a>`} {
		if second.Status != 200 || !strings.Contains(body, want) {
			t.Fatalf("second step %d lacks %q:\n%s", second.Status, want, body)
		}
	}
	step := hidden(t, second.Body, mfaTokenInput)
	if strings.Contains(body, "lkmfa_") {
		t.Error("the page shows the raw mfa_token")
	}
	form := func(extra url.Values) url.Values {
		v := url.Values{"csrf_token": {csrf}, "request": {request}, "mfa_token": {step}}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}
	_, wrong := h.post(t, cookie, form(url.Values{"otp": {"000000"}}))
	if wrong.Status != 401 || !strings.Contains(string(wrong.Body), "Invalid code.") {
		t.Errorf("wrong code: %d %s", wrong.Status, wrong.Body)
	}
	// Another browser (its own cookie and CSRF token) posting alice's step.
	other, page2 := h.start(t, "", nil)
	csrf2, request2 := formValues(t, page2.Body)
	_, stolen := h.post(t, other, url.Values{"csrf_token": {csrf2}, "request": {request2}, "mfa_token": {step}, "otp": {latchkeytest.TOTP(h.secret, h.e.Clock.Now(), 6)}})
	if stolen.Status != 403 {
		t.Errorf("another browser's post: %d %s", stolen.Status, stolen.Body)
	}
	h.e.Clock.Advance(30 * time.Second)
	_, done := h.post(t, cookie, form(url.Values{"otp": {latchkeytest.TOTP(h.secret, h.e.Clock.Now(), 6)}}))
	if done.Status != http.StatusSeeOther {
		t.Fatalf("right code: %d %s", done.Status, done.Body)
	}
	claims := h.redeem(t, done.Header.Get("Location"))
	if claims["acr"] != identity.ACRMFA || strings.Join(toStrings(claims["amr"]), " ") != "pwd otp mfa" {
		t.Errorf("ID token acr %v amr %v", claims["acr"], claims["amr"])
	}
}

// TestHostedRecoveryCodeAndACRValues: a recovery code completes the
// second step; a request asking acr_values phr of a user without a FIDO
// authenticator ends in unmet_authentication_requirements; a session at
// mfa answers acr_values mfa at once, and an expired step is 401 on the
// first page.
func TestHostedRecoveryCodeAndACRValues(t *testing.T) {
	h := newHostedMFA(t)
	cookie, page := h.start(t, "", url.Values{"acr_values": {"urn:example:unknown " + identity.ACRMFA}})
	csrf, request := formValues(t, page.Body)
	cookie, second := h.post(t, cookie, url.Values{"csrf_token": {csrf}, "request": {request}, "username": {"alice"}, "password": {"alice-password-1"}})
	step := hidden(t, second.Body, mfaTokenInput)
	cookie, done := h.post(t, cookie, url.Values{"csrf_token": {csrf}, "request": {request}, "mfa_token": {step}, "recovery_code": {strings.ToLower(h.codes[0])}})
	if done.Status != http.StatusSeeOther {
		t.Fatalf("recovery code: %d %s", done.Status, done.Body)
	}
	if c := h.redeem(t, done.Header.Get("Location")); c["acr"] != identity.ACRMFA {
		t.Errorf("ID token acr %v", c["acr"])
	}
	// The session is at mfa: a request asking mfa answers at once.
	_, again := h.start(t, cookie, url.Values{"acr_values": {identity.ACRMFA}, "prompt": {"none"}})
	if loc := again.Header.Get("Location"); !strings.Contains(loc, "code=") {
		t.Errorf("acr_values mfa on an mfa session: %d %q", again.Status, loc)
	}
	// phr: only a FIDO authenticator reaches it, and prompt=none cannot ask.
	_, none := h.start(t, cookie, url.Values{"acr_values": {identity.ACRPhishingResistant}, "prompt": {"none"}})
	if loc := none.Header.Get("Location"); !strings.Contains(loc, "error=login_required") {
		t.Errorf("prompt=none below the floor: %q", loc)
	}
	fresh, page := h.start(t, "", url.Values{"acr_values": {identity.ACRPhishingResistant}})
	csrf, request = formValues(t, page.Body)
	_, unmet := h.post(t, fresh, url.Values{"csrf_token": {csrf}, "request": {request}, "username": {"alice"}, "password": {"alice-password-1"}})
	if unmet.Status != http.StatusSeeOther || !strings.Contains(unmet.Header.Get("Location"), "error=unmet_authentication_requirements") {
		t.Errorf("phr without a FIDO authenticator: %d %q", unmet.Status, unmet.Header.Get("Location"))
	}
	// An unknown acr alone is invalid_request.
	_, bad := h.start(t, "", url.Values{"acr_values": {"urn:example:unknown"}})
	if !strings.Contains(bad.Header.Get("Location"), "error=invalid_request") {
		t.Errorf("unknown acr_values: %q", bad.Header.Get("Location"))
	}
	// A step taken after its token expired: the first page, 401.
	fresh, page = h.start(t, "", nil)
	csrf, request = formValues(t, page.Body)
	fresh, second = h.post(t, fresh, url.Values{"csrf_token": {csrf}, "request": {request}, "username": {"alice"}, "password": {"alice-password-1"}})
	step = hidden(t, second.Body, mfaTokenInput)
	h.e.Clock.Advance(6 * time.Minute)
	_, late := h.post(t, fresh, url.Values{"csrf_token": {csrf}, "request": {request}, "mfa_token": {step}, "otp": {latchkeytest.TOTP(h.secret, h.e.Clock.Now(), 6)}})
	if late.Status != 401 || !strings.Contains(string(late.Body), "This sign-in has expired. Sign in again.") || !strings.Contains(string(late.Body), `name="password"`) {
		t.Errorf("expired step: %d %s", late.Status, late.Body)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestClientDefaultACRAndMaxAge: a client's default_acr_values and
// default_max_age (OpenID Connect Registration §2) are checked at
// registration and PATCH, shown, cleared by null, and stand in at the
// authorization endpoint for a request that sends neither parameter; a
// request's own acr_values or max_age wins.
func TestClientDefaultACRAndMaxAge(t *testing.T) {
	h := newHostedMFA(t)
	e, admin := h.e, bearer(h.acme.AdminToken)
	clients := "/api/v1/admin/tenants/" + h.acme.ID + "/oauth-clients"
	reg := func(extra map[string]any) map[string]any {
		b := map[string]any{"name": "rp", "type": "public", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
			"redirect_uris": []string{"https://rp.example/cb"}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		field string
		value any
	}{
		{"unknown acr", "default_acr_values", []string{"urn:example:gold"}},
		{"acr twice", "default_acr_values", []string{identity.ACRMFA, identity.ACRMFA}},
		{"acr not a list", "default_acr_values", identity.ACRMFA},
		{"negative max age", "default_max_age", -1},
		{"max age too large", "default_max_age", int64(1) << 31},
		{"max age not a number", "default_max_age", "600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := e.Do("POST", clients, reg(map[string]any{tc.field: tc.value}), admin); r.Status != http.StatusBadRequest {
				t.Errorf("register: %d %s", r.Status, r.Body)
			}
			if r := e.Do("PATCH", clients+"/"+h.client, map[string]any{tc.field: tc.value}, admin); r.Status != http.StatusBadRequest {
				t.Errorf("patch: %d %s", r.Status, r.Body)
			}
		})
	}
	r := e.Do("POST", clients, reg(map[string]any{"default_acr_values": []string{identity.ACRPhishingResistant, identity.ACRMFA}, "default_max_age": 0}), admin)
	if r.Status != http.StatusCreated {
		t.Fatalf("register with defaults: %d %s", r.Status, r.Body)
	}
	got := e.Do("GET", clients+"/"+r.JSON()["client_id"].(string), nil, admin).JSON()
	if diff := cmp.Diff([]any{identity.ACRPhishingResistant, identity.ACRMFA}, got["default_acr_values"]); diff != "" || got["default_max_age"] != 0.0 {
		t.Errorf("registered defaults (-want +got):\n%s max age %v", diff, got["default_max_age"])
	}

	// bob has no second factor: his session is at pwd.
	if r := e.Do("POST", "/api/v1/admin/tenants/"+h.acme.ID+"/users", map[string]any{"name": "bob", "password": "bob-password-1"}, admin); r.Status != http.StatusCreated {
		t.Fatalf("bob: %d %s", r.Status, r.Body)
	}
	signIn := func() string {
		cookie, page := h.start(t, "", nil)
		csrf, request := formValues(t, page.Body)
		cookie, done := h.post(t, cookie, url.Values{"csrf_token": {csrf}, "request": {request}, "username": {"bob"}, "password": {"bob-password-1"}})
		if done.Status != http.StatusSeeOther || !strings.Contains(done.Header.Get("Location"), "code=") {
			t.Fatalf("bob's sign-in: %d %s", done.Status, done.Header.Get("Location"))
		}
		return cookie
	}
	cookie := signIn()
	silent := func(extra url.Values) string {
		t.Helper()
		q := url.Values{"prompt": {"none"}}
		for k, v := range extra {
			q[k] = v
		}
		_, r := h.start(t, cookie, q)
		return r.Header.Get("Location")
	}
	if loc := silent(nil); !strings.Contains(loc, "code=") {
		t.Fatalf("no defaults, a pwd session: %q", loc)
	}
	patch := func(body map[string]any) {
		t.Helper()
		if r := e.Do("PATCH", clients+"/"+h.client, body, admin); r.Status != http.StatusOK {
			t.Fatalf("patch %v: %d %s", body, r.Status, r.Body)
		}
	}
	patch(map[string]any{"default_acr_values": []string{identity.ACRMFA}})
	if loc := silent(nil); !strings.Contains(loc, "error=login_required") {
		t.Errorf("default_acr_values mfa, a pwd session: %q", loc)
	}
	if loc := silent(url.Values{"acr_values": {identity.ACRPassword}}); !strings.Contains(loc, "code=") {
		t.Errorf("the request's own acr_values pwd: %q", loc)
	}
	// Through the page: bob has no factor reaching mfa.
	fresh, page := h.start(t, "", nil)
	csrf, request := formValues(t, page.Body)
	if _, unmet := h.post(t, fresh, url.Values{"csrf_token": {csrf}, "request": {request}, "username": {"bob"}, "password": {"bob-password-1"}}); !strings.Contains(unmet.Header.Get("Location"), "error=unmet_authentication_requirements") {
		t.Errorf("default mfa, bob's password: %d %q", unmet.Status, unmet.Header.Get("Location"))
	}

	patch(map[string]any{"default_acr_values": nil, "default_max_age": 60})
	if got := e.Do("GET", clients+"/"+h.client, nil, admin).JSON(); got["default_acr_values"] != nil || got["default_max_age"] != 60.0 {
		t.Errorf("after the patch: default_acr_values %v default_max_age %v", got["default_acr_values"], got["default_max_age"])
	}
	if loc := silent(nil); !strings.Contains(loc, "code=") {
		t.Errorf("default_max_age 60, a fresh session: %q", loc)
	}
	e.Clock.Advance(2 * time.Minute)
	if loc := silent(nil); !strings.Contains(loc, "error=login_required") {
		t.Errorf("default_max_age 60, a session 2 minutes old: %q", loc)
	}
	if loc := silent(url.Values{"max_age": {"3600"}}); !strings.Contains(loc, "code=") {
		t.Errorf("the request's own max_age 3600: %q", loc)
	}
	patch(map[string]any{"default_max_age": nil})
	if loc := silent(nil); !strings.Contains(loc, "code=") {
		t.Errorf("default_max_age cleared: %q", loc)
	}
}

// TestHostedSecondStepThrottled: the page's wrong codes count toward the
// second-factor throttle the API keeps: after 10 in an hour the page
// answers 429 "Too many attempts. Try again in N seconds." with
// Retry-After.
func TestHostedSecondStepThrottled(t *testing.T) {
	h := newHostedMFA(t)
	wrong := latchkeytest.TOTP(h.secret, h.e.Clock.Now().Add(-time.Hour), 6)
	step := func() (string, url.Values) {
		cookie, page := h.start(t, "", nil)
		csrf, request := formValues(t, page.Body)
		cookie, second := h.post(t, cookie, url.Values{"csrf_token": {csrf}, "request": {request}, "username": {"alice"}, "password": {"alice-password-1"}})
		return cookie, url.Values{"csrf_token": {csrf}, "request": {request}, "mfa_token": {hidden(t, second.Body, mfaTokenInput)}, "otp": {wrong}}
	}
	for fails := 0; fails < mfa.MaxFailuresPerWindow; {
		cookie, form := step()
		for range mfa.MaxTokenAttempts {
			if fails == mfa.MaxFailuresPerWindow {
				break
			}
			if _, r := h.post(t, cookie, form); r.Status != http.StatusUnauthorized || !strings.Contains(string(r.Body), "Invalid code.") {
				t.Fatalf("wrong code %d: %d %s", fails+1, r.Status, r.Body)
			}
			fails++
		}
	}
	cookie, form := step()
	_, r := h.post(t, cookie, form)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" ||
		!regexp.MustCompile(`Too many attempts\. Try again in [0-9]+ seconds\.`).Match(r.Body) {
		t.Errorf("the 11th wrong code: %d Retry-After %q %s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
}
