package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/latchkey/latchkey/latchkeytest"
)

// FuzzGuideCookies sends arbitrary session and flow cookies, CSRF tokens and
// callback parameters to the guide's routes: every answer is a 2xx, 3xx or
// 4xx, never a 500 or a panic.
func FuzzGuideCookies(f *testing.F) {
	f.Add("abc", "def", "state", "code")
	f.Add("", "", "", "")
	f.Add("%%%", "=;,", "\x00", "ü")
	e := latchkeytest.New(f)
	t := e.NewTenant("Fuzz")
	f.Fuzz(func(tt *testing.T, session, flow, state, code string) {
		for _, v := range []string{session, flow, state} {
			if !headerSafe(v) {
				return // the client refuses such header values; nothing reaches the server
			}
		}
		ft := e.For(tt)
		cookie := "Cookie: latchkey-guide=" + session + "; latchkey-guide-sso=" + flow
		for _, c := range []struct{ method, path string }{
			{"GET", "/guide/session"},
			{"DELETE", "/guide/session"},
			{"POST", "/guide/session/activity"},
			{"GET", "/guide/sso/" + t.Code + "/callback?state=" + state + "&code=" + code},
		} {
			req, err := http.NewRequest(c.method, ft.Server.URL+c.path, nil)
			if err != nil {
				continue // not a URL: nothing reaches the server
			}
			r := ft.DoWith(noRedirect, ft.Server.URL, c.method, req.URL.RequestURI(), []byte(`{"active":true}`), cookie, "X-CSRF-Token: "+state)
			if r.Status >= 500 {
				tt.Fatalf("%s %s with %q: %d %s", c.method, c.path, cookie, r.Status, r.Body)
			}
		}
	})
}

func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}
