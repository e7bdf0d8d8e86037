package httpapi_test

import (
	"flag"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/latchkeytest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// signInEnv is a platform with a relying party of tenant Acme and the
// first view of its sign-in page: the browser cookie, the page, and the
// form's hidden values.
type signInEnv struct {
	e                     *latchkeytest.Env
	cookie, csrf, request string
	page                  latchkeytest.Response
}

func newSignInEnv(tb testing.TB) *signInEnv {
	tb.Helper()
	e := latchkeytest.New(tb)
	acme := e.NewTenant("Acme")
	r := e.Do("POST", "/api/v1/admin/tenants/"+acme.ID+"/oauth-clients", map[string]any{"name": "Acme <web>", "scopes": []string{"openid"},
		"grant_types": []string{"authorization_code"}, "redirect_uris": []string{"https://app.example/cb"}}, "Authorization: Bearer "+acme.AdminToken)
	if r.Status != http.StatusCreated {
		tb.Fatalf("client: %d %s", r.Status, r.Body)
	}
	_, challenge := pkce("page")
	q := url.Values{"response_type": {"code"}, "client_id": {r.JSON()["client_id"].(string)}, "redirect_uri": {"https://app.example/cb"},
		"scope": {"openid"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}, "login_hint": {`"al"ice`}}
	resp, err := noRedirect.Get(e.Server.URL + "/oauth/v1/authorize?" + q.Encode())
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	page := e.Do("GET", resp.Header.Get("Location"), nil)
	if page.Status != http.StatusOK {
		tb.Fatalf("sign-in page: %d %s", page.Status, page.Body)
	}
	s := &signInEnv{e: e, page: page}
	s.cookie = "Cookie: " + strings.Split(page.Header.Get("Set-Cookie"), ";")[0]
	s.csrf, s.request = formValues(tb, page.Body)
	return s
}

// TestSignInPageGolden: the hosted page's markup (labels, input names,
// the hidden CSRF input, the passkey button, escaping of the client's
// name and the login hint) as testdata/oidc_signin.golden holds it, with
// the per-request values masked; and its security headers.
func TestSignInPageGolden(t *testing.T) {
	s := newSignInEnv(t)
	got := string(s.page.Body)
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`nonce="[^"]+"`), regexp.MustCompile(`name="csrf_token" value="[^"]+"`), regexp.MustCompile(`name="request" value="[^"]+"`),
		regexp.MustCompile(`auth_domain: "[A-Z0-9]+"`),
	} {
		got = re.ReplaceAllStringFunc(got, func(m string) string {
			k, _, _ := strings.Cut(m, "=")
			if strings.HasPrefix(m, "auth_domain") {
				return `auth_domain: "<tenant>"`
			}
			if strings.HasPrefix(m, "name=") {
				k = m[:strings.Index(m, `value=`)+len("value")]
			}
			return k + `="<masked>"`
		})
	}
	golden := filepath.Join("testdata", "oidc_signin.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("sign-in page (-want +got):\n%s", d)
	}
	h := s.page.Header
	if h.Get("Cache-Control") != "no-store" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
		h.Get("X-Frame-Options") != "DENY" || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Errorf("headers %v", h)
	}
	if c := h.Get("Set-Cookie"); !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Lax") {
		t.Errorf("cookie %q", c)
	}
}

// FuzzSignInForm posts arbitrary form bodies to the sign-in page with the
// browser's cookie: every answer is a page (never 5xx), and only the
// right password signs in.
func FuzzSignInForm(f *testing.F) {
	s := newSignInEnv(f)
	valid := url.Values{"csrf_token": {s.csrf}, "request": {s.request}, "username": {"tadmin"}, "password": {"wrong-password"}}.Encode()
	for _, seed := range []string{valid, "", "csrf_token=" + s.csrf, "request=" + url.QueryEscape(s.request) + "&csrf_token=" + s.csrf + "&flowId=x&credential=%7B%7D",
		"request=%zz", "csrf_token=a&csrf_token=b", valid + "&credential=null", valid + "&flowId=ROOT000000.abc"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := s.e.For(t).Do("POST", "/oauth/v1/sign-in", body, s.cookie, "Content-Type: application/x-www-form-urlencoded")
		if r.Status >= 500 || r.Status == http.StatusSeeOther {
			t.Fatalf("%q: %d %s", body, r.Status, r.Body)
		}
	})
}
