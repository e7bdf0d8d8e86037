package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

func guideLoginBody() map[string]string {
	return map[string]string{"name": identity.AdminName, "password": latchkeytest.AdminPassword, "tenant": "root"}
}

func TestGuideCookieAttributes(t *testing.T) {
	e := latchkeytest.New(t)
	tls := httptest.NewTLSServer(e.Handler)
	t.Cleanup(tls.Close)
	for _, tc := range []struct {
		name   string
		do     func(method, path string, body any, headers ...string) latchkeytest.Response
		cookie string
		secure bool
	}{
		{"TLS", func(m, p string, b any, h ...string) latchkeytest.Response {
			return e.DoWith(tls.Client(), tls.URL, m, p, b, h...)
		}, "__Host-latchkey-guide", true},
		{"plain HTTP", e.Do, "latchkey-guide", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.do("POST", "/guide/session", guideLoginBody())
			if r.Status != 200 {
				t.Fatalf("login: %d %s", r.Status, r.Body)
			}
			cookies := (&http.Response{Header: r.Header}).Cookies()
			if len(cookies) != 1 {
				t.Fatalf("cookies %v", r.Header["Set-Cookie"])
			}
			c := cookies[0]
			if c.Name != tc.cookie || c.Secure != tc.secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Domain != "" || c.MaxAge != 0 {
				t.Errorf("cookie %q: %+v", r.Header.Get("Set-Cookie"), c)
			}
			if r := tc.do("GET", "/guide/session", nil, "Cookie: "+c.Name+"="+c.Value); r.Status != 200 {
				t.Errorf("session with its cookie: %d %s", r.Status, r.Body)
			}
			// The other transport's cookie name is not accepted.
			other := map[string]string{"__Host-latchkey-guide": "latchkey-guide", "latchkey-guide": "__Host-latchkey-guide"}[c.Name]
			if r := tc.do("GET", "/guide/session", nil, "Cookie: "+other+"="+c.Value); r.Status != 401 {
				t.Errorf("session under cookie %s: %d", other, r.Status)
			}
			// A login with the cookie of a live session rotates the id.
			r2 := tc.do("POST", "/guide/session", guideLoginBody(), "Cookie: "+c.Name+"="+c.Value)
			c2 := (&http.Response{Header: r2.Header}).Cookies()[0]
			if r2.Status != 200 || c2.Value == c.Value {
				t.Fatalf("second login: %d, same id %v", r2.Status, c2.Value == c.Value)
			}
			if r := tc.do("GET", "/guide/session", nil, "Cookie: "+c.Name+"="+c.Value); r.Status != 401 {
				t.Errorf("replaced session: %d", r.Status)
			}
		})
	}
}

// TestGuideIdleOverHTTP drives the idle limit through the page's own calls
// with the fake clock: pings without activity do not keep the session.
func TestGuideIdleOverHTTP(t *testing.T) {
	e := latchkeytest.New(t)
	r := e.Do("POST", "/guide/session", guideLoginBody())
	if r.Status != 200 {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	cookie := "Cookie: " + strings.Split(r.Header.Get("Set-Cookie"), ";")[0]
	csrf := "X-CSRF-Token: " + r.JSON()["csrfToken"].(string)
	ping := func(active bool) int {
		return e.Do("POST", "/guide/session/activity", map[string]bool{"active": active}, cookie, csrf).Status
	}
	// Pings every 15 s, active only at +5m: the session ends at +15m.
	for range 59 {
		e.Clock.Advance(15 * time.Second)
		if s := ping(e.Clock.Now().Equal(latchkeytest.Start.Add(5 * time.Minute))); s != 204 {
			t.Fatalf("ping at %v: %d", e.Clock.Now().Sub(latchkeytest.Start), s)
		}
	}
	e.Clock.Advance(15 * time.Second)
	if s := ping(false); s != 401 {
		t.Fatalf("ping 10 minutes after the last activity: %d", s)
	}
	if r := e.Do("GET", "/guide/session", nil, cookie); r.Status != 401 {
		t.Errorf("session after the idle limit: %d", r.Status)
	}
}
