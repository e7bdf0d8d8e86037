package oidc_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/fault"
)

// FuzzAuthorize feeds arbitrary query strings to the authorization
// endpoint's rules: the answer is the error page (fault.Invalid, never
// another kind: no 500), a redirect to a registered redirect URI only,
// or the sign-in page; never a panic.
func FuzzAuthorize(f *testing.F) {
	fx := newFx(f)
	base := fx.params(nil)
	f.Add(base.Encode())
	f.Add(fx.params(map[string]string{"redirect_uri": loopback, "prompt": "none"}).Encode())
	f.Add(fx.params(map[string]string{"code_challenge_method": "plain", "max_age": "99999999999999999999"}).Encode())
	f.Add(fx.params(map[string]string{"redirect_uri": "http://127.0.0.1:0/cb", "scope": "openid\x00"}).Encode())
	f.Add("client_id=" + fx.conf.ID + "&redirect_uri=" + url.QueryEscape(redirect) + "&scope=openid&scope=profile")
	f.Add("client_id=%zz&redirect_uri=%")
	f.Add("")
	f.Fuzz(func(t *testing.T, query string) {
		params, err := url.ParseQuery(query)
		if err != nil {
			return // net/http's r.URL.Query() drops what does not parse; this is the same
		}
		if len(params.Get("client_id")) == 0 {
			params.Set("client_id", fx.conf.ID) // reach the rules past the client lookup most of the time
		}
		out, err := fx.svc.Authorize(t.Context(), params, "")
		switch {
		case err != nil:
			if !fault.Is(fault.Invalid, err) {
				t.Fatalf("error of kind %v: %v", fault.KindOf(err), err)
			}
		case out.Redirect != "":
			ok := false
			for _, r := range []string{redirect, "http://127.0.0.1"} {
				ok = ok || strings.HasPrefix(out.Redirect, r)
			}
			if !ok {
				t.Fatalf("redirect to %q, not a registered URI", out.Redirect)
			}
		case out.SignIn == "":
			t.Fatalf("empty outcome for %q", query)
		}
	})
}
