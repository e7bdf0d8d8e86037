package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

// TestOIDCBrowserTOTPSecondStep: in Chromium, a relying party on go-oidc
// asks acr_values=urn:latchkey:acr:mfa; the administrator, who has a TOTP
// device (its codes made here by an RFC 6238 implementation of the
// test's, not pquerna/otp), signs in with the password, gets the page's
// "Two-step verification" (the design's label and button), types the
// code, and the relying party verifies an ID token whose acr is mfa and
// amr pwd otp mfa.
func TestOIDCBrowserTOTPSecondStep(t *testing.T) {
	b := newPasskeyBrowser(t)
	s := b.oidcServer()
	dev := s.api("POST", "/api/v1/me/mfa/totp", map[string]any{"friendlyName": "browser"})
	secret, err := latchkeytest.TOTPSecret(dev["secret"].(string))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	s.api("POST", "/api/v1/me/mfa/totp/"+dev["id"].(string)+"/confirm", map[string]any{"otp": latchkeytest.TOTP(secret, at, 6)})
	rp := browserRP(t, b, false)
	b.run("open the sign-in page", chromedp.Navigate(rp.srv.URL+"/login?acr_values="+identity.ACRMFA), chromedp.WaitVisible(`#username`))
	b.run("sign in with the password",
		chromedp.SendKeys(`#username`, "admin"), chromedp.SendKeys(`#password`, "admin-password-1"),
		chromedp.Click(`#sign-in`), chromedp.WaitVisible(`#otp`))
	page, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("h1").textContent + "|" +
		[...document.querySelectorAll("label")].map(l => l.textContent).join("|") + "|" + document.getElementById("verify-button").textContent`))
	if err != nil || page != "Two-step verification|Authentication code|Recovery code|Verify" {
		t.Errorf("second step page %q %v", page, err)
	}
	b.run("a wrong code", chromedp.SendKeys(`#otp`, "000000"), chromedp.Click(`#verify-button`), chromedp.WaitVisible(`body[data-signin="error"]`))
	if msg := b.textNow(`#error`); msg != "Invalid code." {
		t.Errorf("wrong code message %q", msg)
	}
	// The step after the confirmation's: accepted whatever second the
	// test reaches this line at within the ±1 window.
	b.run("the code", chromedp.SendKeys(`#otp`, latchkeytest.TOTP(secret, at.Add(30*time.Second), 6)), chromedp.Click(`#verify-button`), chromedp.WaitVisible(`#rp`))
	res := rp.result()
	if res.err != nil {
		t.Fatalf("relying party: %v", res.err)
	}
	amr, _ := res.claims["amr"].([]any)
	var got []string
	for _, a := range amr {
		got = append(got, a.(string))
	}
	if res.claims["acr"] != identity.ACRMFA || strings.Join(got, " ") != "pwd otp mfa" {
		t.Errorf("ID token acr %v amr %v", res.claims["acr"], res.claims["amr"])
	}
}

// TestOIDCBrowserPasskeySecondFactorStepUp: the relying party asks
// acr_values=urn:latchkey:acr:phr; the administrator, whose passkey lives
// in Chrome's virtual authenticator, signs in with the password, and the
// page asks only for a phishing-resistant second factor ("Use a
// passkey"); the assertion completes the sign-in, and the ID token says
// acr phr and amr pwd hwk ... mfa.
func TestOIDCBrowserPasskeySecondFactorStepUp(t *testing.T) {
	b := newPasskeyBrowser(t)
	b.registerInGuide()
	rp := browserRP(t, b, true)
	b.run("open the sign-in page", chromedp.Navigate(rp.srv.URL+"/login?acr_values="+identity.ACRPhishingResistant), chromedp.WaitVisible(`#username`))
	b.run("sign in with the password",
		chromedp.SendKeys(`#username`, "admin"), chromedp.SendKeys(`#password`, "admin-password-1"),
		// The sign-in page has a #passkey button of its own (a passkey as
		// the first factor): wait for the second step's page.
		chromedp.Click(`#sign-in`), chromedp.WaitVisible(`body[data-mfa="verify"] #passkey`))
	if n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#otp, #use-recovery").length`)); err != nil || n != 0 {
		t.Errorf("a phr floor offers %d other factors (%v)", n, err)
	}
	b.run("use the passkey", chromedp.Click(`#passkey`), chromedp.WaitVisible(`#rp, body[data-signin="error"]`))
	if msg := b.textNow(`#error`); msg != "" {
		t.Fatalf("the page shows %q", msg)
	}
	res := rp.result()
	if res.err != nil {
		t.Fatalf("relying party: %v", res.err)
	}
	amr, _ := res.claims["amr"].([]any)
	var got []string
	for _, a := range amr {
		got = append(got, a.(string))
	}
	if res.claims["acr"] != identity.ACRPhishingResistant || len(got) < 3 || got[0] != "pwd" || got[1] != "hwk" || got[len(got)-1] != "mfa" {
		t.Errorf("ID token acr %v amr %v", res.claims["acr"], res.claims["amr"])
	}
}

// post posts a JSON body to the platform without credentials and returns
// the status and the decoded answer.
func (s *oidcServer) post(path string, body any) (int, map[string]any) {
	s.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := s.http.Post(s.srv.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// enrollAdminTOTP adds and confirms a TOTP device of the root
// administrator through the API (its code of now) and returns the secret.
func (s *oidcServer) enrollAdminTOTP() []byte {
	s.t.Helper()
	dev := s.api("POST", "/api/v1/me/mfa/totp", map[string]any{"friendlyName": "phone"})
	secret, err := latchkeytest.TOTPSecret(dev["secret"].(string))
	if err != nil {
		s.t.Fatal(err)
	}
	s.api("POST", "/api/v1/me/mfa/totp/"+dev["id"].(string)+"/confirm", map[string]any{"otp": latchkeytest.TOTP(secret, time.Now(), 6)})
	return secret
}

// signOut ends the browser's session at the provider (RP-initiated
// logout with the ID token of res as id_token_hint).
func (b *passkeyBrowser) signOut(res rpResult) {
	b.t.Helper()
	raw, _ := res.token.Extra("id_token").(string)
	b.run("sign out", chromedp.Navigate(b.url+"/oauth/v1/logout?id_token_hint="+url.QueryEscape(raw)), chromedp.WaitVisible(`body[data-page="signed-out"]`))
}

// claimsOK checks an ID token's acr and amr.
func claimsOK(t *testing.T, what string, res rpResult, acr, amr string) {
	t.Helper()
	if res.err != nil {
		t.Fatalf("%s: relying party: %v", what, res.err)
	}
	var got []string
	for _, a := range res.claims["amr"].([]any) {
		got = append(got, a.(string))
	}
	if res.claims["acr"] != acr || strings.Join(got, " ") != amr {
		t.Errorf("%s: ID token acr %v amr %v, want %s and %s", what, res.claims["acr"], got, acr, amr)
	}
}

// TestOIDCBrowserGraceEnrollmentThenTOTPAndRecoveryCode: the root tenant
// requires two-step verification (the administrator, stepped up with a
// TOTP code, says so); carol, created since and within her grace, signs
// in with her password in Chromium and gets "Set up two-step
// verification": the QR image (a 256×256 PNG the page's CSP lets load)
// and its key in groups of four. She types the code of that key (the
// test's RFC 6238 implementation), "Verify and continue", sees her ten
// recovery codes once, "I have saved these codes", and the relying party
// (go-oidc) verifies an ID token at acr mfa. She signs out, signs in
// with password + TOTP, signs out, and signs in with a recovery code
// (typed in lower case): each ID token says acr mfa, amr pwd otp mfa; a
// spent recovery code is "Invalid code.".
func TestOIDCBrowserGraceEnrollmentThenTOTPAndRecoveryCode(t *testing.T) {
	b := newPasskeyBrowser(t)
	s := b.oidcServer()
	admin := s.enrollAdminTOTP()
	st, first := s.post("/api/v1/auth/tokens/", map[string]any{"name": "admin", "password": "admin-password-1", "auth_domain": "root"})
	if st != http.StatusForbidden || first["codeDesc"] != "MFA_REQUIRED" {
		t.Fatalf("admin's password step: %d %v", st, first)
	}
	st, second := s.post("/api/v1/auth/tokens/", map[string]any{"grant_type": "mfa_otp", "mfa_token": first["mfa_token"], "otp": latchkeytest.TOTP(admin, time.Now().Add(30*time.Second), 6)})
	if st != http.StatusOK {
		t.Fatalf("admin's second step: %d %v", st, second)
	}
	s.admin = second["jwt"].(string)
	s.api("PATCH", "/api/v1/admin/tenants/"+b.root.ID+"/settings", map[string]any{"mfa": map[string]any{"mode": "required"}})
	s.api("POST", "/api/v1/admin/tenants/"+b.root.ID+"/users", map[string]any{"name": "carol", "password": "carol-password-1"})
	rp := browserRP(t, b, true)

	b.run("open the sign-in page", chromedp.Navigate(rp.srv.URL+"/login"), chromedp.WaitVisible(`#username`))
	b.run("carol's password", chromedp.SendKeys(`#username`, "carol"), chromedp.SendKeys(`#password`, "carol-password-1"),
		chromedp.Click(`#sign-in`), chromedp.WaitVisible(`body[data-mfa="enroll"] #otp`))
	page, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("h1").textContent + "|" +
		document.getElementById("qr").naturalWidth + "x" + document.getElementById("qr").naturalHeight + "|" +
		document.querySelector("label[for=otp]").textContent + "|" + document.getElementById("verify-button").textContent + "|" +
		document.getElementById("add-passkey").textContent`))
	if err != nil || page != "Set up two-step verification|256x256|Authentication code|Verify and continue|Add a passkey" {
		t.Errorf("enrollment page %q %v", page, err)
	}
	shown := b.textNow(`#secret`)
	if !regexp.MustCompile(`^[A-Z2-7]{4}( [A-Z2-7]{4}){7}$`).MatchString(shown) {
		t.Fatalf("the key %q is not 32 base32 characters in groups of four", shown)
	}
	secret, err := latchkeytest.TOTPSecret(shown)
	if err != nil || len(secret) != 20 {
		t.Fatalf("key %q: %v", shown, err)
	}
	b.run("the first code", chromedp.SendKeys(`#otp`, latchkeytest.TOTP(secret, time.Now(), 6)), chromedp.Click(`#verify-button`),
		chromedp.WaitVisible(`#codes-saved`))
	codes, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#codes li")].map(li => li.textContent)`))
	if err != nil || len(codes) != 10 || b.textNow(`h1`) != "Save your recovery codes" || b.textNow(`#codes-saved`) != "I have saved these codes" {
		t.Fatalf("recovery codes page: %q %v (%q)", codes, err, b.textNow(`h1`))
	}
	for _, c := range codes {
		if !regexp.MustCompile(`^[0-9A-Z]{5}-[0-9A-Z]{5}$`).MatchString(c) {
			t.Errorf("recovery code %q", c)
		}
	}
	b.run("I have saved these codes", chromedp.Click(`#codes-saved`), chromedp.WaitVisible(`#rp`))
	res := rp.result()
	claimsOK(t, "enrollment", res, identity.ACRMFA, "pwd otp mfa")

	b.signOut(res)
	b.run("open the sign-in page again", chromedp.Navigate(rp.srv.URL+"/login"), chromedp.WaitVisible(`#username`))
	b.run("the password again", chromedp.SendKeys(`#username`, "carol"), chromedp.SendKeys(`#password`, "carol-password-1"),
		chromedp.Click(`#sign-in`), chromedp.WaitVisible(`body[data-mfa="verify"] #otp`))
	// The next step's code: the enrolment took an earlier step.
	b.run("a TOTP code", chromedp.SendKeys(`#otp`, latchkeytest.TOTP(secret, time.Now().Add(30*time.Second), 6)), chromedp.Click(`#verify-button`),
		chromedp.WaitVisible(`#rp`))
	res = rp.result()
	claimsOK(t, "password + TOTP", res, identity.ACRMFA, "pwd otp mfa")

	b.signOut(res)
	recovery := func(code string) {
		b.t.Helper()
		b.run("open the sign-in page", chromedp.Navigate(rp.srv.URL+"/login"), chromedp.WaitVisible(`#username`))
		b.run("the password", chromedp.SendKeys(`#username`, "carol"), chromedp.SendKeys(`#password`, "carol-password-1"),
			chromedp.Click(`#sign-in`), chromedp.WaitVisible(`#use-recovery`))
		b.run("use a recovery code", chromedp.Click(`#use-recovery`), chromedp.WaitVisible(`#recovery_code`),
			chromedp.SendKeys(`#recovery_code`, code), chromedp.Click(`#recovery-button`),
			chromedp.WaitVisible(`#rp, body[data-signin="error"]`))
	}
	recovery(strings.ToLower(codes[3]))
	res = rp.result()
	claimsOK(t, "password + recovery code", res, identity.ACRMFA, "pwd otp mfa")

	b.signOut(res)
	recovery(codes[3])
	if msg := b.textNow(`#error`); msg != "Invalid code." {
		t.Errorf("a spent recovery code: %q", msg)
	}
}

// TestOIDCBrowserStepUpAsksOnlyTheSecondFactor: the administrator, whose
// passkey makes the password alone enough under the optional policy,
// signs in with the password (ID token acr pwd), then confirms a TOTP
// device; the relying party then asks acr_values=urn:latchkey:acr:mfa.
// The browser's session is below it: the page asks for the second factor
// only (no username or password), the TOTP code completes it, and the ID
// token says acr mfa, amr pwd otp mfa, the same sid and a later
// auth_time.
func TestOIDCBrowserStepUpAsksOnlyTheSecondFactor(t *testing.T) {
	b := newPasskeyBrowser(t)
	s := b.oidcServer()
	// A pending device now (adding a factor needs a step-up once the
	// passkey is there), confirmed after the sign-in at pwd.
	dev := s.api("POST", "/api/v1/me/mfa/totp", map[string]any{"friendlyName": "phone"})
	secret, err := latchkeytest.TOTPSecret(dev["secret"].(string))
	if err != nil {
		t.Fatal(err)
	}
	b.registerInGuide()
	rp := browserRP(t, b, true)
	b.signInPage(rp)
	b.run("sign in with the password", chromedp.SendKeys(`#username`, "admin"), chromedp.SendKeys(`#password`, "admin-password-1"),
		chromedp.Click(`#sign-in`), chromedp.WaitVisible(`#rp`))
	before := rp.result()
	claimsOK(t, "password", before, identity.ACRPassword, "pwd")
	// A second factor: the sessions a password started live on.
	s.api("POST", "/api/v1/me/mfa/totp/"+dev["id"].(string)+"/confirm", map[string]any{"otp": latchkeytest.TOTP(secret, time.Now(), 6)})

	b.run("the relying party asks mfa", chromedp.Navigate(rp.srv.URL+"/login?acr_values="+identity.ACRMFA), chromedp.WaitVisible(`body[data-mfa="verify"] #otp`))
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#username, #password").length`))
	if err != nil || n != 0 || b.textNow(`h1`) != "Two-step verification" {
		t.Errorf("the step-up page asks %d first-factor fields, heading %q (%v)", n, b.textNow(`h1`), err)
	}
	b.run("the TOTP code", chromedp.SendKeys(`#otp`, latchkeytest.TOTP(secret, time.Now().Add(30*time.Second), 6)), chromedp.Click(`#verify-button`),
		chromedp.WaitVisible(`#rp`))
	after := rp.result()
	claimsOK(t, "step-up", after, identity.ACRMFA, "pwd otp mfa")
	if after.claims["sid"] == nil || after.claims["sid"] != before.claims["sid"] {
		t.Errorf("sid %v after the step-up, %v before", after.claims["sid"], before.claims["sid"])
	}
	if at, bt := after.claims["auth_time"].(float64), before.claims["auth_time"].(float64); at < bt {
		t.Errorf("auth_time %v after the step-up, %v before", at, bt)
	}
	// The stepped-up session answers mfa at once.
	b.run("mfa again", chromedp.Navigate(rp.srv.URL+"/login?acr_values="+identity.ACRMFA+"&prompt=none"), chromedp.WaitVisible(`#rp`))
	claimsOK(t, "the stepped-up session", rp.result(), identity.ACRMFA, "pwd otp mfa")
}
