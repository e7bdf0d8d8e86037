package httpapi_test

import (
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
		chromedp.Click(`#sign-in`), chromedp.WaitVisible(`#passkey`))
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
