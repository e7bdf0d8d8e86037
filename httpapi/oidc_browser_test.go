package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The hosted sign-in page in headless Chromium: a relying party (x/oauth2
// and go-oidc) sends the browser to the authorization endpoint, the user
// fills the page (password) or presses "Sign in with a passkey" (Chrome's
// virtual authenticator, usernameless), and the relying party verifies
// the ID token it redeems.

// oidcServer is the passkey browser's platform seen by a relying party.
func (b *passkeyBrowser) oidcServer() *oidcServer {
	tr := b.srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.ServerName = "example.com"
	return &oidcServer{t: b.t, url: b.url, p: b.p, st: b.st, srv: b.srv, admin: b.admin, root: b.root, http: &http.Client{Transport: tr}}
}

func browserRP(t *testing.T, b *passkeyBrowser, public bool) *relyingParty {
	s := b.oidcServer()
	body := map[string]any{"name": "Root app", "scopes": []string{"openid", "profile"}, "grant_types": []string{"authorization_code"},
		"redirect_uris": []string{"http://127.0.0.1/cb"}}
	if public {
		body["type"] = "public"
	}
	cl := s.api("POST", "/api/v1/admin/tenants/"+b.root.ID+"/oauth-clients", body)
	secret, _ := cl["client_secret"].(string)
	rp := newRelyingParty(t, s, cl["client_id"].(string), secret)
	rp.conf.Scopes = []string{"openid", "profile"}
	return rp
}

// signInPage opens the relying party's login and waits for the hosted page.
func (b *passkeyBrowser) signInPage(rp *relyingParty) {
	b.t.Helper()
	b.run("open the sign-in page", chromedp.Navigate(rp.srv.URL+"/login"), chromedp.WaitVisible(`#username`))
	label, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("label")].map(l => l.textContent).join("|") + "|" +
		[...document.querySelectorAll("button")].map(l => l.textContent).join("|")`))
	if err != nil || label != "Username|Password|Sign in|Sign in with a passkey" {
		b.t.Errorf("labels and buttons %q %v", label, err)
	}
}

func TestOIDCBrowserPasswordConfidentialClient(t *testing.T) {
	b := newPasskeyBrowser(t)
	rp := browserRP(t, b, false)
	b.signInPage(rp)
	b.run("sign in with the password",
		chromedp.SendKeys(`#username`, "admin"), chromedp.SendKeys(`#password`, "admin-password-1"),
		chromedp.Click(`#sign-in`), chromedp.WaitVisible(`#rp`))
	res := rp.result()
	if res.err != nil {
		t.Fatalf("relying party: %v", res.err)
	}
	if amr, _ := res.claims["amr"].([]any); len(amr) != 1 || amr[0] != "pwd" {
		t.Errorf("amr %v", res.claims["amr"])
	}
	if res.claims["preferred_username"] != "admin" {
		t.Errorf("claims %v", res.claims)
	}
}

func TestOIDCBrowserPasskeyPublicClient(t *testing.T) {
	b := newPasskeyBrowser(t)
	b.registerInGuide()
	rp := browserRP(t, b, true)
	b.signInPage(rp)
	b.run("sign in with a passkey", chromedp.Click(`#passkey`), chromedp.WaitVisible(`#rp, body[data-signin="error"]`))
	if msg := b.textNow(`#error`); msg != "" {
		t.Fatalf("the page shows %q", msg)
	}
	res := rp.result()
	if res.err != nil {
		t.Fatalf("relying party: %v", res.err)
	}
	amr, _ := res.claims["amr"].([]any)
	// A passkey sign-in gains mfa; Chrome's virtual authenticator is not
	// backup-eligible: a device-bound key, hwk (API-mfa.md).
	if len(amr) != 3 || amr[0] != "hwk" || amr[1] != "user" || amr[2] != "mfa" {
		t.Errorf("amr %v, want [hwk user mfa]", res.claims["amr"])
	}
	if text := b.textNow(`#rp`); !strings.Contains(text, "signed in as "+res.idToken.Subject) {
		t.Errorf("relying party page %q", text)
	}
}
