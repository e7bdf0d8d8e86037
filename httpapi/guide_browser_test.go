package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

var writeScreenshot = flag.Bool("screenshot", false, "TestGuideInBrowser: write the screenshot of the logged-in guide to docs/guide.png")

// chromiumPath finds Debian's chromium. Locally the browser test is skipped
// without it; in CI (CI=true), which installs it, its absence fails.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; .ci/run installs it")
	}
	t.Skip("chromium is not installed")
	return ""
}

// TestGuideInBrowser opens the guide in headless Chromium over TLS (so the
// __Host- cookie is the one in use), logs in through the page, calls an
// authenticated route with "try it out", sees its answer, writes a
// screenshot (to docs/guide.png with -screenshot), and then stays idle past a short idle limit
// until the page has logged out, and the server agrees.
func TestGuideInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	browser := chromiumPath(t)
	// short, yet long enough that a loaded CI machine does not idle out
	// between two clicks while Swagger UI renders the document (the
	// vault's operations made it twice as large; 8 s was too short then)
	const idle = 15 * time.Second
	ctx := t.Context()
	st := memstore.New()
	p, err := latchkey.New(ctx, latchkey.Config{
		Store: st, MasterKey: seal.NewKey(),
		PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true,
		GuideIdleTimeout: idle, GuideOpenGrace: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	boot, err := p.Bootstrap(ctx, "admin-password-1")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	opts := httpapi.Defaults()
	opts.PublicURL = srv.URL
	srv.Config.Handler = httpapi.New(p, opts)

	// A key to find in the answer of "try it out".
	admin := loginJWT(t, srv, "admin", "admin-password-1")
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/vault/keys2", strings.NewReader(`{"name":"browser-test-key","algorithm":"AES","size":256}`))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := srv.Client().Do(req); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create vault key: %v %v", resp, err)
	}

	allocOpts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.Flag("ignore-certificate-errors", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(ctx, allocOpts...)
	defer cancel()
	// The first action starts the browser and must run on a context without
	// a deadline (the deadline would stop the browser); later ones are bounded.
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/guide/")); err != nil {
		t.Fatalf("browser: %v", err)
	}
	tctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tctx, steps...); err != nil {
			t.Fatalf("browser, %s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(tctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("browser, text of %s: %v", sel, err)
		}
		return s
	}

	const op = `#operations-vault-listVaultKeys`
	run("log in",
		chromedp.WaitVisible(`#guide-login`),
		chromedp.WaitVisible(op),
		chromedp.SendKeys(`#guide-name`, "admin"),
		chromedp.SendKeys(`#guide-password`, "admin-password-1"),
		chromedp.Click(`#guide-login-button`),
		chromedp.WaitVisible(`#guide-user`),
	)
	if user := text(`#guide-user`); !strings.Contains(user, "Logged in as admin") {
		t.Errorf("user line %q", user)
	}
	run("try it out",
		chromedp.Click(op+` .opblock-summary-control`),
		chromedp.WaitVisible(op+` .try-out__btn`),
		chromedp.Click(op+` .try-out__btn`),
		chromedp.WaitVisible(op+` .execute`),
		chromedp.Click(op+` .execute`),
		chromedp.WaitVisible(op+` .live-responses-table tr.response .response-col_status`),
	)
	status, answer := text(op+` .live-responses-table tr.response .response-col_status`), text(op+` .live-responses-table tr.response .response-col_description`)
	if strings.TrimSpace(status) != "200" || !strings.Contains(answer, "browser-test-key") {
		t.Fatalf("try it out answered %q: %s", status, answer)
	}
	// The bar stays on top (sticky), so the screenshot shows who is logged
	// in together with the answer.
	if _, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.querySelector("`+op+` .live-responses-table tr.response").scrollIntoView({block: "center"}); true`)); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(shot, []byte("\x89PNG\r\n\x1a\n")) || len(shot) < 10_000 {
		t.Errorf("screenshot of %d bytes is not a plausible PNG", len(shot))
	}
	if *writeScreenshot {
		if err := os.WriteFile(filepath.Join("..", "docs", "guide.png"), shot, 0o644); err != nil {
			t.Errorf("writing the screenshot: %v", err)
		}
	}

	// Now nobody touches the page: it logs out once idle, and the server
	// no longer knows the session.
	start := time.Now()
	run("idle", chromedp.WaitVisible(`body[data-guide="logged-out"]`))
	if waited := time.Since(start); waited > 3*idle {
		t.Errorf("logged out after %v, idle limit %v", waited, idle)
	}
	msg := text(`#guide-status`)
	after, err := chromedp.Run(tctx, chromedp.Evaluate[int](`fetch("session", {credentials: "same-origin"}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "without activity") || after != http.StatusUnauthorized {
		t.Errorf("after idling: status line %q, GET /guide/session %d", msg, after)
	}
	recs, err := st.ListAuditRecords(ctx, boot.Tenant.ID, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, r := range recs {
		if strings.HasPrefix(r.Action, "guide.") {
			reason, _ := r.Meta["reason"].(string)
			actions = append(actions, r.Action+" "+r.Status+" "+reason)
		}
	}
	// The page logs out at its first tick past the idle limit; when the
	// server's own limit has passed by then (it counts from the ping that
	// reported the activity), the logout finds the session expired.
	if len(actions) != 2 || actions[0] != "guide.login success " ||
		!strings.HasPrefix(actions[1], "guide.logout success idle") && actions[1] != "guide.session.expire success idle" {
		t.Errorf("audited guide actions %q, want the login and the idle logout", actions)
	}
}

func loginJWT(t *testing.T, srv *httptest.Server, name, password string) string {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/api/v1/auth/tokens/", "application/json",
		strings.NewReader(`{"name":"`+name+`","password":"`+password+`","auth_domain":"root"}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("login: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var tr identity.TokenResponse
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		t.Fatal(err)
	}
	return tr.JWT
}
