package httpapi_test

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
)

// pageBrowser is a browser without scripts: a cookie jar, redirects not
// followed, so each step of the user-code page is seen.
type pageBrowser struct {
	t    *testing.T
	base string
	c    *http.Client
	addr string // X-Forwarded-For is not trusted: every browser shares 127.0.0.1
}

func newPageBrowser(t *testing.T, e *latchkeytest.Env) *pageBrowser {
	jar, _ := cookiejar.New(nil)
	return &pageBrowser{t: t, base: e.Server.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type pageResp struct {
	status int
	header http.Header
	body   string
}

func (b *pageBrowser) do(method, path string, form url.Values) pageResp {
	b.t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	if strings.HasPrefix(path, b.base) {
		path = strings.TrimPrefix(path, b.base)
	}
	req, _ := http.NewRequestWithContext(b.t.Context(), method, b.base+path, rd)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return pageResp{resp.StatusCode, resp.Header, string(body)}
}

var (
	deviceMessage = regexp.MustCompile(`<p id="message">([^<]*)</p>`)
	deviceError   = regexp.MustCompile(`<p id="error" role="alert">([^<]*)</p>`)
	userCodeValue = regexp.MustCompile(`id="user_code" name="user_code" value="([^"]*)"`)
)

func submatch(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// enterCode opens the page (as verification_uri_complete would) and posts
// the code typed as typed; it returns the answer.
func (b *pageBrowser) enterCode(typed string) pageResp {
	b.t.Helper()
	pg := b.do("GET", "/oauth/v1/device", nil)
	if pg.status != 200 {
		b.t.Fatalf("device page: %d %s", pg.status, pg.body)
	}
	csrf := submatch(csrfInput, pg.body)
	return b.do("POST", "/oauth/v1/device", url.Values{"csrf_token": {csrf}, "user_code": {typed}})
}

// signIn follows a redirect to the sign-in page and signs in there; it
// returns the redirect the sign-in answers.
func (b *pageBrowser) signIn(to, user, password string) string {
	b.t.Helper()
	pg := b.do("GET", to, nil)
	if pg.status != 200 {
		b.t.Fatalf("sign-in page %s: %d %s", to, pg.status, pg.body)
	}
	csrf, request := formValues(b.t, []byte(pg.body))
	r := b.do("POST", "/oauth/v1/sign-in", url.Values{"csrf_token": {csrf}, "request": {request}, "username": {user}, "password": {password}})
	if r.status != http.StatusSeeOther {
		b.t.Fatalf("sign-in: %d %s", r.status, r.body)
	}
	return r.header.Get("Location")
}

// confirm reads the confirmation at to and posts decision.
func (b *pageBrowser) confirm(to, decision string) (question string, answer pageResp) {
	b.t.Helper()
	pg := b.do("GET", to, nil)
	if pg.status != 200 || !strings.Contains(pg.body, `data-device="confirm"`) {
		b.t.Fatalf("confirmation %s: %d %s", to, pg.status, pg.body)
	}
	csrf, request := formValues(b.t, []byte(pg.body))
	return submatch(deviceMessage, pg.body), b.do("POST", "/oauth/v1/device", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {decision}})
}

type deviceClient struct {
	e      *latchkeytest.Env
	id     string
	secret string
}

func (c deviceClient) authorize(scope string) latchkeytest.Response {
	f := url.Values{"client_id": {c.id}, "scope": {scope}}
	if c.secret != "" {
		f.Set("client_secret", c.secret)
	}
	return c.e.Do("POST", "/oauth/v1/device_authorization", f.Encode(), formCT)
}

func (c deviceClient) poll(deviceCode string, headers ...string) latchkeytest.Response {
	f := url.Values{"grant_type": {identity.GrantDeviceCode}, "client_id": {c.id}, "device_code": {deviceCode}}
	if c.secret != "" {
		f.Set("client_secret", c.secret)
	}
	return c.e.Do("POST", "/oauth/v1/token", f.Encode(), append([]string{formCT}, headers...)...)
}

// TestDeviceAuthorizationGrant: RFC 8628 as API-fapi.md has it: the
// device authorization answer; polls pending, slow_down (adding 5 s
// counted from the previous poll), then the tokens once (DPoP-bound by
// the poll's proof, with an ID token and a refresh token), then
// invalid_grant; the user-code page (pre-filled, never skipping the
// sign-in nor the confirmation), deny (access_denied, spent), expiry,
// the page's errors (wrong code 200, no CSRF 403, 5 wrong codes 429),
// unauthorized_client; audited.
func TestDeviceAuthorizationGrant(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	cl := registerClient(t, e, tn, map[string]any{"name": "Living-room TV", "type": "public", "scopes": []string{"openid", "profile", "offline_access"},
		"grant_types": []string{identity.GrantDeviceCode, identity.GrantRefreshToken}})
	tv := deviceClient{e: e, id: cl["client_id"].(string)}
	web := registerClient(t, e, tn, map[string]any{"name": "web", "scopes": []string{"openid"}, "grant_types": []string{"authorization_code"},
		"redirect_uris": []string{"https://app.example/cb"}})
	if tv.authorize("openid admin").JSON()["error"] != "invalid_scope" {
		t.Error("an unknown scope is not invalid_scope")
	}
	r := tv.authorize("openid profile offline_access")
	da := r.JSON()
	userCode, _ := da["user_code"].(string)
	if r.Status != 200 || r.Header.Get("Cache-Control") != "no-store" || !regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`).MatchString(userCode) ||
		!strings.HasSuffix(da["verification_uri"].(string), "/oauth/v1/device") ||
		da["verification_uri_complete"] != da["verification_uri"].(string)+"?user_code="+userCode ||
		da["expires_in"] != float64(600) || da["interval"] != float64(5) || len(da["device_code"].(string)) < 43 {
		t.Fatalf("device authorization: %d %v %s", r.Status, r.Header, r.Body)
	}
	deviceCode := da["device_code"].(string)
	errOf := func(r latchkeytest.Response) string {
		t.Helper()
		if r.Status != 400 {
			t.Errorf("poll: %d %s, want 400", r.Status, r.Body)
		}
		return r.JSON()["error"].(string)
	}
	if got := errOf(tv.poll(deviceCode)); got != "authorization_pending" {
		t.Errorf("first poll: %s", got)
	}
	e.Clock.Advance(2 * time.Second)
	if got := errOf(tv.poll(deviceCode)); got != "slow_down" {
		t.Errorf("a poll 2 s after the previous: %s, want slow_down", got)
	}
	e.Clock.Advance(7 * time.Second) // 9 s since the first poll, 7 since the previous: under the 10 s interval
	if got := errOf(tv.poll(deviceCode)); got != "slow_down" {
		t.Errorf("a poll 7 s after the previous with the interval at 10 s: %s, want slow_down", got)
	}
	e.Clock.Advance(15 * time.Second)
	if got := errOf(tv.poll(deviceCode)); got != "authorization_pending" {
		t.Errorf("a poll after the grown interval: %s", got)
	}

	b := newPageBrowser(t, e)
	pg := b.do("GET", "/oauth/v1/device?user_code="+url.QueryEscape(userCode), nil)
	if pg.status != 200 || submatch(userCodeValue, pg.body) != userCode || !strings.Contains(pg.body, "<h1>Enter the code shown on your device</h1>") ||
		!strings.Contains(pg.body, `<label for="user_code">Code</label>`) || !strings.Contains(pg.body, `>Continue</button>`) ||
		strings.Contains(pg.body, "<script") || pg.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("pre-filled page: %d %s", pg.status, pg.body)
	}
	if r := b.do("POST", "/oauth/v1/device", url.Values{"user_code": {userCode}}); r.status != 403 {
		t.Errorf("no CSRF token: %d", r.status)
	}
	if r := b.enterCode("BCDF-GHJK"); r.status != 200 || submatch(deviceError, r.body) != oidc.MsgDeviceInvalid {
		t.Errorf("a wrong code: %d %s", r.status, r.body)
	}
	// Typed in lower case with a space: read upper-cased, without it.
	r2 := b.enterCode(strings.ToLower(strings.Replace(userCode, "-", " ", 1)))
	if r2.status != http.StatusSeeOther || !strings.Contains(r2.header.Get("Location"), "/oauth/v1/sign-in?request=") {
		t.Fatalf("a good code without a session: %d %v %s", r2.status, r2.header, r2.body)
	}
	back := b.signIn(r2.header.Get("Location"), "tadmin", "tenant-password-1")
	if !strings.HasPrefix(back, "/oauth/v1/device?request=") {
		t.Fatalf("the sign-in returns to %q", back)
	}
	if got := errOf(tv.poll(deviceCode)); got != "slow_down" {
		t.Errorf("signed in, not confirmed, polled at once: %s", got)
	}
	e.Clock.Advance(20 * time.Second) // the interval is 20 s now
	if got := errOf(tv.poll(deviceCode)); got != "authorization_pending" {
		t.Errorf("signed in, not confirmed: %s", got)
	}
	q, done := b.confirm(back, "allow")
	if want := "Living-room TV wants to sign in as tadmin with offline_access, openid, profile. Only continue if you started this on your own device."; q != want {
		t.Errorf("confirmation %q, want %q", q, want)
	}
	if done.status != 200 || submatch(deviceMessage, done.body) != "Device connected." {
		t.Fatalf("allow: %d %s", done.status, done.body)
	}
	e.Clock.Advance(20 * time.Second)
	k := latchkeytest.NewDPoPKey(t, "ES256")
	tok := tv.poll(deviceCode, "DPoP: "+k.Proof("POST", e.Server.URL+"/oauth/v1/token", "", e.Clock.Now()))
	body := tok.JSON()
	if tok.Status != 200 || body["token_type"] != "DPoP" || body["id_token"] == nil || body["refresh_token"] == nil || body["scope"] != "offline_access openid profile" {
		t.Fatalf("tokens: %d %s", tok.Status, tok.Body)
	}
	if cnf, _ := latchkeytest.UnverifiedClaims(t, body["access_token"].(string))["cnf"].(map[string]any); cnf["jkt"] != k.Thumbprint() {
		t.Errorf("access token not bound to the poll's key: %v", cnf)
	}
	if id := latchkeytest.UnverifiedClaims(t, body["id_token"].(string)); id["azp"] != tv.id || id["preferred_username"] != "tadmin" || id["amr"] == nil {
		t.Errorf("ID token %v", id)
	}
	e.Clock.Advance(20 * time.Second)
	if got := errOf(tv.poll(deviceCode)); got != "invalid_grant" {
		t.Errorf("a spent code: %s", got)
	}
	if r := b.enterCode(userCode); r.status != 200 || submatch(deviceError, r.body) != oidc.MsgDeviceInvalid {
		t.Errorf("a used code on the page: %d %s", r.status, r.body)
	}

	t.Run("a session still confirms, deny", func(t *testing.T) {
		code := tv.authorize("openid").JSON()
		// The browser is signed in: a good code goes to the confirmation,
		// never straight to an approval.
		r := b.enterCode(code["user_code"].(string))
		if r.status != 200 || !strings.Contains(r.body, `data-device="confirm"`) {
			t.Fatalf("with a session: %d %s", r.status, r.body)
		}
		csrf, request := formValues(t, []byte(r.body))
		d := b.do("POST", "/oauth/v1/device", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {"deny"}})
		if d.status != 200 || submatch(deviceMessage, d.body) != oidc.MsgDeviceDenied {
			t.Errorf("deny: %d %s", d.status, d.body)
		}
		if d := b.do("POST", "/oauth/v1/device", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {"allow"}}); !strings.Contains(d.body, oidc.MsgDeviceInvalid) {
			t.Errorf("allow after deny: %d %s", d.status, d.body)
		}
		if got := errOf(tv.poll(code["device_code"].(string))); got != "access_denied" {
			t.Errorf("denied: %s", got)
		}
		e.Clock.Advance(10 * time.Second)
		if got := errOf(tv.poll(code["device_code"].(string))); got != "invalid_grant" {
			t.Errorf("denied, again: %s", got)
		}
	})

	t.Run("expired", func(t *testing.T) {
		code := tv.authorize("openid").JSON()
		e.Clock.Advance(601 * time.Second)
		if got := errOf(tv.poll(code["device_code"].(string))); got != "expired_token" {
			t.Errorf("after 600 s: %s", got)
		}
		if r := b.enterCode(code["user_code"].(string)); !strings.Contains(r.body, oidc.MsgDeviceInvalid) {
			t.Errorf("an expired code on the page: %d %s", r.status, r.body)
		}
	})

	t.Run("unauthorized_client", func(t *testing.T) {
		c := deviceClient{e: e, id: web["client_id"].(string), secret: web["client_secret"].(string)}
		if r := c.authorize("openid"); r.Status != 400 || r.JSON()["error"] != "unauthorized_client" {
			t.Errorf("device authorization: %d %s", r.Status, r.Body)
		}
		if r := c.poll(deviceCode); r.Status != 400 || r.JSON()["error"] != "unauthorized_client" {
			t.Errorf("poll: %d %s", r.Status, r.Body)
		}
		if r := (deviceClient{e: e, id: tv.id}).poll(""); r.JSON()["error"] != "invalid_request" {
			t.Errorf("no device_code: %s", r.Body)
		}
	})

	t.Run("throttle", func(t *testing.T) {
		// Wrong codes so far (of every browser of this address) are
		// forgotten after 15 minutes.
		e.Clock.Advance(16 * time.Minute)
		tb := newPageBrowser(t, e)
		for i := range 5 {
			if r := tb.enterCode("ZZZZ-ZZZZ"); r.status != 200 {
				t.Fatalf("wrong code %d: %d", i+1, r.status)
			}
		}
		good := tv.authorize("openid").JSON()["user_code"].(string)
		r := tb.enterCode(good)
		if r.status != 429 || r.header.Get("Retry-After") == "" {
			t.Errorf("after 5 wrong codes: %d %v", r.status, r.header)
		}
		e.Clock.Advance(16 * time.Minute)
		good = tv.authorize("openid").JSON()["user_code"].(string)
		// This browser has no session: the code leads to the sign-in.
		if r := tb.enterCode(good); r.status != http.StatusSeeOther {
			t.Errorf("15 minutes later: %d %s", r.status, r.body)
		}
	})

	t.Run("audited", func(t *testing.T) {
		recs, err := e.Store.ListAuditRecords(t.Context(), tn.ID, 0, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, rec := range recs {
			seen[rec.Action+"/"+rec.Status]++
		}
		for _, want := range []string{oidc.ActionDeviceAuthorization + "/" + audit.StatusSuccess, oidc.ActionDeviceVerify + "/" + audit.StatusSuccess,
			oidc.ActionDeviceToken + "/" + audit.StatusSuccess, oidc.ActionDeviceToken + "/" + audit.StatusFailed} {
			if seen[want] == 0 {
				t.Errorf("no %s in %v", want, seen)
			}
		}
	})
}

// TestDeviceCodeThrottleAcrossProcesses: the user-code page's wrong
// codes are counted in the store, as the login throttle's: two platforms
// on one store (two processes behind a load balancer) count one
// browser's failures together, so 3 wrong codes on one and 2 on the
// other make the next attempt 429 on both.
func TestDeviceCodeThrottleAcrossProcesses(t *testing.T) {
	var cfg latchkey.Config
	e := latchkeytest.New(t, func(c *latchkey.Config) { cfg = *c })
	other, err := latchkey.New(t.Context(), cfg) // the same store, master key and clock
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	srv := httptest.NewServer(httpapi.New(other, httpapi.Defaults()))
	t.Cleanup(srv.Close)
	a := newPageBrowser(t, e)
	b := &pageBrowser{t: t, base: srv.URL, c: a.c} // the same browser (cookies are per host, not port)
	for i, pb := range []*pageBrowser{a, a, a, b, b} {
		if r := pb.enterCode("BCDF-GHJK"); r.status != 200 || submatch(deviceError, r.body) != oidc.MsgDeviceInvalid {
			t.Fatalf("wrong code %d: %d %s", i+1, r.status, r.body)
		}
	}
	for name, pb := range map[string]*pageBrowser{"the first": a, "the second": b} {
		if r := pb.enterCode("BCDF-GHJK"); r.status != 429 || r.header.Get("Retry-After") == "" {
			t.Errorf("the 6th code on %s platform: %d %s, want 429 (the throttle is stored)", name, r.status, r.body)
		}
	}
}
