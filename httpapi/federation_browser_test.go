package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"golang.org/x/text/language"

	"github.com/latchkey/latchkey/federation"
)

// Upstream sign-in against an OpenID Provider that is not ours: zitadel/oidc's
// example OP (its op package, its example storage and login form), started
// in-process on a loopback port, with headless Chromium pressing "Sign in
// with Zitadel" on the hosted page, filling the OP's own login form and
// coming back through the provider's callback.

// zitadelUsers is the example storage's user store with the people of
// these tests.
type zitadelUsers map[string]*storage.User

func (u zitadelUsers) GetUserByID(id string) *storage.User { return u[id] }
func (u zitadelUsers) GetUserByUsername(name string) *storage.User {
	for _, x := range u {
		if x.Username == name {
			return x
		}
	}
	return nil
}
func (zitadelUsers) ExampleClientID() string { return storage.ServiceUserID }

// zitadelOP is zitadel/oidc's example OpenID Provider on http://127.0.0.1:<port>
// with one web client whose redirect URI is redirectURI.
type zitadelOP struct {
	issuer       string
	clientID     string
	clientSecret string
}

func startZitadelOP(t *testing.T, redirectURI string, users zitadelUsers) *zitadelOP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	op := &zitadelOP{issuer: "http://" + ln.Addr().String(), clientID: "latchkey", clientSecret: "zitadel-client-secret"}
	st := storage.NewStorageWithClients(users, map[string]*storage.Client{op.clientID: storage.WebClient(op.clientID, op.clientSecret, redirectURI)})
	srv := &http.Server{Handler: exampleop.SetupServer(op.issuer, st, nil, false), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return op
}

// chromium is a headless Chromium for a test; the first action starts it.
type chromium struct {
	t   *testing.T
	ctx context.Context
}

func newChromium(t *testing.T) *chromium {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	bctx := chromiumTab(t)
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("browser: %v", err)
	}
	tctx, cancel := context.WithTimeout(bctx, 120*time.Second)
	t.Cleanup(cancel)
	return &chromium{t: t, ctx: tctx}
}

// chromiumTab is a tab of a headless Chromium of its own (a fresh
// profile, certificate errors ignored for httptest's TLS); its first
// action starts the browser.
func chromiumTab(t *testing.T) context.Context {
	t.Helper()
	actx, cancel := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(chromiumPath(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.Flag("ignore-certificate-errors", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	return bctx
}

func (c *chromium) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	if err := chromedp.Do(c.ctx, steps...); err != nil {
		c.t.Fatalf("browser, %s: %v (page %q)", what, err, c.text("body"))
	}
}

// text reads an element's text without waiting for it.
func (c *chromium) text(sel string) string {
	ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("`+sel+`")||{}).innerText||""`))
	return s
}

// forget clears every cookie: the next step is another browser's.
func (c *chromium) forget() {
	c.t.Helper()
	c.run("clear the cookies", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{})
		return err
	}))
}

const zitadelForm = `form[action="/login/username"]`

// zitadelLogin fills the zitadel OP's own login form.
func (c *chromium) zitadelLogin(user, password, then string) {
	c.t.Helper()
	c.run("the OP's login form as "+user,
		chromedp.WaitVisible(zitadelForm), chromedp.SendKeys(`#username`, user), chromedp.SendKeys(`#password`, password),
		chromedp.Click(zitadelForm+` button[type="submit"]`), chromedp.WaitVisible(then))
}

// pressUpstream opens the relying party's login and presses "Sign in with Zitadel".
func (c *chromium) pressUpstream(rp *relyingParty) {
	c.t.Helper()
	c.run("open the sign-in page", chromedp.Navigate(rp.srv.URL+"/login"), chromedp.WaitVisible(`#provider-zitadel`))
	if label := c.text(`#provider-zitadel`); label != "Sign in with Zitadel" {
		c.t.Errorf("button %q", label)
	}
	c.run("press Sign in with Zitadel", chromedp.Click(`#provider-zitadel`), chromedp.WaitVisible(zitadelForm))
}

func TestFederationBrowserZitadelOP(t *testing.T) {
	c := newChromium(t)
	s := newOIDCServer(t, allowPrivate)
	tn := s.api("POST", "/api/v1/admin/tenants", map[string]string{"name": "Acme", "code": "ZITADEL001"})
	tenantID := tn["id"].(string)
	users := "/api/v1/admin/tenants/" + tenantID + "/users"
	alice := s.api("POST", users, map[string]any{"name": "alice", "password": "user-password-1", "email": "alice@acme.example", "emailVerified": true})["id"].(string)
	carol := s.api("POST", users, map[string]any{"name": "carol", "password": "user-password-3"})["id"].(string)

	op := startZitadelOP(t, s.url+"/oauth/v1/federation/ZITADEL001/zitadel/callback", zitadelUsers{
		"z-bob": {ID: "z-bob", Username: "bob", Password: "bob-upstream-1", FirstName: "Bob", LastName: "Builder",
			Email: "bob@acme.example", EmailVerified: true, PreferredLanguage: language.English},
		// Mallory's OP lets her set any address without verifying it.
		"z-mallory": {ID: "z-mallory", Username: "mallory", Password: "mallory-upstream-1", FirstName: "Mal", LastName: "Lory",
			Email: "alice@acme.example", EmailVerified: false, PreferredLanguage: language.English},
		"z-carol": {ID: "z-carol", Username: "carol.z", Password: "carol-upstream-1", FirstName: "Carol", LastName: "Zed",
			Email: "carol@acme.example", EmailVerified: true, PreferredLanguage: language.English},
	})
	p := s.api("POST", "/api/v1/admin/tenants/"+tenantID+"/identity-providers", map[string]any{"id": "zitadel", "displayName": "Zitadel",
		"type": "oidc", "issuer": op.issuer, "clientId": op.clientID, "clientSecret": op.clientSecret, "allowedDomains": []string{"acme.example"},
		"linking": "verifiedEmail", "provisioning": "jit", "passUpstreamAmr": true})
	if p["id"] != "zitadel" {
		t.Fatalf("provider: %v", p)
	}
	cl := s.api("POST", "/api/v1/admin/tenants/"+tenantID+"/oauth-clients", map[string]any{"name": "Acme web",
		"scopes": []string{"openid", "profile", "email"}, "grant_types": []string{"authorization_code"}, "redirect_uris": []string{"http://127.0.0.1/cb"}})
	rp := newRelyingParty(t, s, cl["client_id"].(string), cl["client_secret"].(string))
	rp.conf.Scopes = []string{"openid", "profile", "email"}
	noCallback := func(t *testing.T) {
		t.Helper()
		select {
		case r := <-rp.results:
			t.Errorf("the relying party got a callback: %+v", r)
		default:
		}
	}
	identitiesOf := func(userID string) string {
		l := s.api("GET", users+"/"+userID+"/identities", nil)
		var out []string
		for _, x := range l["resources"].([]any) {
			m := x.(map[string]any)
			out = append(out, fmt.Sprintf("%s/%s/%s", m["providerId"], m["subject"], m["email"]))
		}
		return strings.Join(out, " ")
	}

	t.Run("jit", func(t *testing.T) {
		c.forget()
		c.pressUpstream(rp)
		c.zitadelLogin("bob", "bob-upstream-1", `#rp`)
		res := rp.result()
		if res.err != nil {
			t.Fatalf("relying party: %v", res.err)
		}
		// The example OP's ID token carries no e-mail (its clients do not
		// assert userinfo claims in it): they came from its userinfo.
		l := s.api("GET", users+"?name=bob@acme.example", nil)["resources"].([]any)
		if len(l) != 1 {
			t.Fatalf("the JIT user: %v", l)
		}
		bob := l[0].(map[string]any)
		if bob["id"] != res.idToken.Subject || bob["email"] != "bob@acme.example" || bob["emailVerified"] != true ||
			bob["givenName"] != "Bob" || bob["familyName"] != "Builder" || !slices.Equal(anyStrings(bob["roles"]), []string{"user"}) {
			t.Errorf("JIT user %v (ID token sub %s)", bob, res.idToken.Subject)
		}
		// passUpstreamAmr: the OP's pwd follows Latchkey's fed.
		if amr := anyStrings(res.claims["amr"]); !slices.Equal(amr, []string{"fed", "pwd"}) {
			t.Errorf("amr %v, want [fed pwd]", amr)
		}
		if res.claims["idp"] != "zitadel" {
			t.Errorf("idp %v, want zitadel", res.claims["idp"])
		}
		if got := identitiesOf(bob["id"].(string)); got != "zitadel/z-bob/bob@acme.example" {
			t.Errorf("bob's identities %q", got)
		}
	})

	t.Run("unverified email refused", func(t *testing.T) {
		c.forget()
		c.pressUpstream(rp)
		c.zitadelLogin("mallory", "mallory-upstream-1", `#error, body[data-signin]`)
		if msg := c.text("body"); !strings.Contains(msg, "An account with this e-mail exists. Sign in to connect Zitadel.") {
			t.Errorf("page %q", msg)
		}
		noCallback(t)
		if got := identitiesOf(alice); got != "" {
			t.Errorf("alice's identities %q after an unverified address", got)
		}
	})

	t.Run("state from another browser", func(t *testing.T) {
		// The attacker runs a flow of its own up to the OP's redirect back...
		attacker := newBrowser(t, s)
		cb := zitadelCallbackOf(t, attacker, rp, "bob", "bob-upstream-1")
		// ...and the victim's Chromium, in the middle of its own flow, is
		// sent to it.
		c.forget()
		c.pressUpstream(rp)
		c.run("the attacker's callback", chromedp.Evaluate[chromedp.Void](`location.assign(`+strconv.Quote(cb.String())+`); undefined`),
			chromedp.WaitVisible(`body[data-page="error"]`))
		if msg := c.text("#message"); !strings.Contains(msg, federation.MsgExpired) {
			t.Errorf("page %q", msg)
		}
		noCallback(t)
	})

	t.Run("explicit link on the account page", func(t *testing.T) {
		c.forget()
		c.run("password sign-in", chromedp.Navigate(rp.srv.URL+"/login"), chromedp.WaitVisible(`#username`),
			chromedp.SendKeys(`#username`, "carol"), chromedp.SendKeys(`#password`, "user-password-3"), chromedp.Click(`#sign-in`), chromedp.WaitVisible(`#rp`))
		if res := rp.result(); res.err != nil || res.idToken.Subject != carol {
			t.Fatalf("carol's sign-in: %v", res.err)
		}
		c.run("the account page", chromedp.Navigate(s.url+"/oauth/v1/account/identities"), chromedp.WaitVisible(`#connect-zitadel`))
		c.run("connect", chromedp.Click(`#connect-zitadel`), chromedp.WaitVisible(zitadelForm))
		c.zitadelLogin("carol.z", "carol-upstream-1", `body[data-page="identities"]`)
		if links := c.text(`#links`); !strings.Contains(links, "Zitadel (carol@acme.example)") {
			t.Errorf("links %q (page %q)", links, c.text("body"))
		}
		if got := identitiesOf(carol); got != "zitadel/z-carol/carol@acme.example" {
			t.Errorf("carol's identities %q", got)
		}
		// Another browser: Zitadel now signs carol in.
		c.forget()
		c.pressUpstream(rp)
		c.zitadelLogin("carol.z", "carol-upstream-1", `#rp`)
		if res := rp.result(); res.err != nil || res.idToken.Subject != carol || !slices.Contains(anyStrings(res.claims["amr"]), "fed") {
			t.Errorf("carol through Zitadel: %v %v", res.err, res.claims)
		}
	})
}

// zitadelCallbackOf runs browser b (a Go client) through a whole flow up to
// the zitadel OP's redirect back to Latchkey and returns that callback URL
// without following it.
func zitadelCallbackOf(t *testing.T, b *browser, rp *relyingParty, user, password string) *url.URL {
	t.Helper()
	pageURL, _, page := b.get(rp.srv.URL + "/login")
	csrf, request := formValues(t, []byte(page))
	c := b.stopping()
	next := func(resp *http.Response, err error) *url.URL {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode/100 != 3 {
			t.Fatalf("%s: %d %v", resp.Request.URL, resp.StatusCode, err)
		}
		return loc
	}
	authz := next(c.PostForm(pageURL.Scheme+"://"+pageURL.Host+pageURL.Path, url.Values{"csrf_token": {csrf}, "request": {request}, "provider": {"zitadel"}}))
	login := next(c.Get(authz.String()))
	id := login.Query().Get("authRequestID")
	done := next(c.PostForm(login.Scheme+"://"+login.Host+"/login/username", url.Values{"id": {id}, "username": {user}, "password": {password}}))
	cb := next(c.Get(done.String()))
	if !strings.HasSuffix(cb.Path, "/zitadel/callback") || cb.Query().Get("code") == "" {
		t.Fatalf("the OP's redirect back: %s", cb)
	}
	return cb
}
