package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// passkeyBrowser is the guide open in headless Chromium on
// https://localhost:<port> (a secure context whose host is a domain, as
// an RP ID must be), with a virtual platform authenticator (the DevTools
// WebAuthn domain: CTAP2, internal transport, resident keys, user
// verification that succeeds) in place of a real one.
type passkeyBrowser struct {
	t     *testing.T
	ctx   context.Context
	url   string // https://localhost:<port>
	p     *latchkey.Platform
	st    *memstore.Store
	root  identity.Tenant
	admin string // the admin's platform JWT
	srv   *httptest.Server
}

func newPasskeyBrowser(t *testing.T) *passkeyBrowser {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	ctx := t.Context()
	st := memstore.New()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	p, err := latchkey.New(ctx, latchkey.Config{
		Store: st, MasterKey: seal.NewKey(), Issuer: url,
		PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	boot, err := p.Bootstrap(ctx, "admin-password-1")
	if err != nil {
		t.Fatal(err)
	}
	opts := httpapi.Defaults()
	opts.PublicURL = url
	srv.Config.Handler = httpapi.New(p, opts)
	b := &passkeyBrowser{t: t, url: url, p: p, st: st, root: boot.Tenant, srv: srv}
	b.admin = loginJWT(t, srv, "admin", "admin-password-1")
	// The root tenant's relying party is this page's origin.
	req, _ := http.NewRequest("PATCH", srv.URL+"/api/v1/admin/tenants/"+boot.Tenant.ID+"/settings",
		strings.NewReader(`{"webauthn":{"rpId":"localhost","origins":["`+url+`"]}}`))
	req.Header.Set("Authorization", "Bearer "+b.admin)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := srv.Client().Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("settings: %v %v", resp, err)
	}

	bctx := chromiumTab(t)
	// The first action starts the browser: no deadline on it.
	if err := chromedp.Do(bctx, chromedp.Navigate(url+"/guide/")); err != nil {
		t.Fatalf("browser: %v", err)
	}
	tctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(cancel)
	b.ctx = tctx
	b.run("virtual authenticator", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
		}})
		return err
	}))
	return b
}

func (b *passkeyBrowser) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser, %s: %v (status line %q)", what, err, b.textNow(`#guide-status`))
	}
}

// textNow reads an element's text without waiting for it.
func (b *passkeyBrowser) textNow(sel string) string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("`+sel+`")||{}).textContent||""`))
	return s
}

// registerInGuide logs in with the password and adds a passkey through the
// page's "Add a passkey", then logs out; it returns the passkey's id.
func (b *passkeyBrowser) registerInGuide() string {
	b.t.Helper()
	b.run("password login",
		chromedp.WaitVisible(`#guide-login`),
		chromedp.SendKeys(`#guide-name`, "admin"),
		chromedp.SendKeys(`#guide-password`, "admin-password-1"),
		chromedp.Click(`#guide-login-button`),
		chromedp.WaitVisible(`#guide-add-passkey`),
	)
	b.run("add a passkey", chromedp.Click(`#guide-add-passkey`), chromedp.WaitVisible(`body[data-passkey]`))
	if s := b.textNow(`#guide-status`); s != "Passkey added." {
		b.t.Errorf("status after adding %q", s)
	}
	id, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.dataset.passkey`))
	if err != nil {
		b.t.Fatal(err)
	}
	b.run("log out", chromedp.Click(`#guide-logout`), chromedp.WaitVisible(`body[data-guide="logged-out"]`))
	return id
}

// signIn clicks "Sign in with a passkey" with the login form empty
// (usernameless, root tenant) and waits for the page to settle.
func (b *passkeyBrowser) signIn() (loggedIn bool) {
	b.t.Helper()
	b.run("sign in with a passkey",
		chromedp.WaitVisible(`#guide-passkey-button`),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("guide-status").textContent = ""; delete document.body.dataset.guide; undefined`),
		chromedp.Click(`#guide-passkey-button`),
		chromedp.WaitVisible(`body[data-guide]`),
	)
	state, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.dataset.guide`))
	if err != nil {
		b.t.Fatal(err)
	}
	return state == "logged-in"
}

// TestGuidePasskeyInBrowser registers a passkey in the guide with
// Chrome's virtual authenticator, logs out, and signs in with it
// (usernameless: the browser picks the discoverable credential); the
// server holds it as an area C authenticator of provenance self, and the
// sign-in is audited as a guide login by passkey.
func TestGuidePasskeyInBrowser(t *testing.T) {
	b := newPasskeyBrowser(t)
	id := b.registerInGuide()
	admin, err := b.st.GetUserByName(t.Context(), b.root.ID, "admin")
	if err != nil {
		t.Fatal(err)
	}
	a, err := b.st.GetAuthenticator(t.Context(), b.root.ID, id)
	if err != nil || a.Provenance != authenticator.ProvenanceInline || a.State != authenticator.StateActive || a.UserID != admin.ID {
		t.Fatalf("stored passkey %+v %v", a, err)
	}
	if !b.signIn() {
		t.Fatalf("passkey sign-in did not log in: %q", b.textNow(`#guide-status`))
	}
	if user := b.textNow(`#guide-user`); !strings.Contains(user, "Logged in as admin") {
		t.Errorf("user line %q", user)
	}
	method, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`fetch("session", {credentials: "same-origin"}).then(r => r.json()).then(s => s.method)`, chromedp.EvalAwaitPromise))
	if err != nil || method != "passkey" {
		t.Errorf("session method %q %v", method, err)
	}
	recs, err := b.st.ListAuditRecords(t.Context(), b.root.ID, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var logins []string
	for _, r := range recs {
		if r.Action == "guide.login" {
			logins = append(logins, r.Status+" "+r.Meta["method"].(string))
		}
	}
	if len(logins) != 2 || logins[1] != "success passkey" {
		t.Errorf("guide logins %q, want the password login then the passkey one", logins)
	}
	if a, _ := b.st.GetAuthenticator(t.Context(), b.root.ID, id); a.LastSuccessAt == nil {
		t.Errorf("the sign-in did not use the stored passkey: %+v", a)
	}
}

// TestGuideRemovedPasskeyInBrowser removes the passkey on the server
// (DELETE /api/v1/me/passkeys/{id}) while the browser's authenticator still
// holds it: signing in with it is then refused, and the page stays logged
// out. The user has no passkey left, so the sign-in options name a decoy
// credential, as for a name no user has, and the browser finds none of its
// own to offer: the refusal is the browser's.
func TestGuideRemovedPasskeyInBrowser(t *testing.T) {
	b := newPasskeyBrowser(t)
	id := b.registerInGuide()
	req, _ := http.NewRequest("DELETE", b.srv.URL+"/api/v1/me/passkeys/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+b.admin)
	if resp, err := b.srv.Client().Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %v %v", resp, err)
	}
	if b.signIn() {
		t.Fatal("a removed passkey signed in")
	}
	if s := b.textNow(`#guide-status`); !strings.Contains(s, "Passkey sign-in failed") {
		t.Errorf("status line %q", s)
	}
	after, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`fetch("session", {credentials: "same-origin"}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || after != http.StatusUnauthorized {
		t.Errorf("GET /guide/session after the refused sign-in: %d %v", after, err)
	}
}
