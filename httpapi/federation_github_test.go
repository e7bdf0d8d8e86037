package httpapi_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/federation"
)

// fakeGitHub stands in for GitHub's OAuth app endpoints and REST API as
// documented (docs.github.com: "Authorizing OAuth apps", "Get the
// authenticated user", "List email addresses for the authenticated
// user"): the authorize page approves at once, the token endpoint checks
// the secret and the PKCE verifier, /user and /user/emails answer for the
// access token.
type fakeGitHub struct {
	*httptest.Server
	t *testing.T

	mu        sync.Mutex
	user      map[string]any
	emails    []map[string]any
	challenge map[string]string // code -> code_challenge
}

func newFakeGitHub(t *testing.T) *fakeGitHub {
	g := &fakeGitHub{t: t, challenge: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "gh-client" || q.Get("code_challenge_method") != "S256" || q.Get("scope") != "read:user user:email" {
			http.Error(w, "bad authorize request "+q.Encode(), 400)
			return
		}
		code := "gh-code-" + q.Get("state")[:8]
		g.mu.Lock()
		g.challenge[code] = q.Get("code_challenge")
		g.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		g.mu.Lock()
		ch, ok := g.challenge[r.PostForm.Get("code")]
		delete(g.challenge, r.PostForm.Get("code"))
		g.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || r.PostForm.Get("client_id") != "gh-client" || r.PostForm.Get("client_secret") != "gh-secret" || base64.RawURLEncoding.EncodeToString(sum[:]) != ch {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"error":"bad_verification_code"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"gho_upstream","token_type":"bearer","scope":"read:user,user:email"}`))
	})
	api := func(get func() any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer gho_upstream" {
				http.Error(w, `{"message":"Requires authentication"}`, 401)
				return
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			json.NewEncoder(w).Encode(get())
		}
	}
	mux.HandleFunc("GET /user", api(func() any { return g.user }))
	mux.HandleFunc("GET /user/emails", api(func() any { return g.emails }))
	g.Server = httptest.NewServer(mux)
	t.Cleanup(g.Close)
	return g
}

func (g *fakeGitHub) signIn(user map[string]any, emails ...map[string]any) {
	g.mu.Lock()
	g.user, g.emails = user, emails
	g.mu.Unlock()
}

func email(addr string, primary, verified bool) map[string]any {
	return map[string]any{"email": addr, "primary": primary, "verified": verified, "visibility": nil}
}

// TestFederationGitHub signs in through a "github" provider against a
// stand-in of GitHub: the subject is the numeric id, never the renamable
// login; only the primary address counts, vouched only when verified.
func TestFederationGitHub(t *testing.T) {
	gh := newFakeGitHub(t)
	s := newOIDCServer(t, allowPrivate, func(c *latchkey.Config) {
		c.GitHubEndpoints = federation.GitHubEndpoints{AuthURL: gh.URL + "/login/oauth/authorize", TokenURL: gh.URL + "/login/oauth/access_token", APIURL: gh.URL}
	})
	tn := s.api("POST", "/api/v1/admin/tenants", map[string]string{"name": "Acme", "code": "GITHUB0001"})
	tenantID := tn["id"].(string)
	users := "/api/v1/admin/tenants/" + tenantID + "/users"
	alice := s.api("POST", users, map[string]any{"name": "alice", "password": "user-password-1", "email": "alice@acme.example", "emailVerified": true})["id"].(string)
	p := s.api("POST", "/api/v1/admin/tenants/"+tenantID+"/identity-providers", map[string]any{"id": "gh", "displayName": "GitHub", "type": "github",
		"clientId": "gh-client", "clientSecret": "gh-secret", "allowedDomains": []string{"acme.example"}, "linking": "verifiedEmail", "provisioning": "jit"})
	if p["redirectUri"] != s.url+"/oauth/v1/federation/GITHUB0001/gh/callback" {
		t.Fatalf("provider %v", p)
	}
	cl := s.api("POST", "/api/v1/admin/tenants/"+tenantID+"/oauth-clients", map[string]any{"name": "Acme web",
		"scopes": []string{"openid", "profile", "email"}, "grant_types": []string{"authorization_code"}, "redirect_uris": []string{"http://127.0.0.1/cb"}})
	rp := newRelyingParty(t, s, cl["client_id"].(string), cl["client_secret"].(string))
	rp.conf.Scopes = []string{"openid", "profile", "email"}
	identities := func(userID string) []any {
		return s.api("GET", users+"/"+userID+"/identities", nil)["resources"].([]any)
	}
	userNamed := func(t *testing.T, name string) map[string]any {
		t.Helper()
		l := s.api("GET", users+"?name="+url.QueryEscape(name), nil)["resources"].([]any)
		if len(l) != 1 {
			t.Fatalf("users named %s: %v", name, l)
		}
		return l[0].(map[string]any)
	}

	t.Run("jit by the numeric id", func(t *testing.T) {
		gh.signIn(map[string]any{"id": 4242, "login": "octo", "name": "Octo Cat"},
			email("octo@users.noreply.github.com", false, true), email("octo@acme.example", true, true))
		_, status, body := newBrowser(t, s).upstream(rp.srv.URL, "gh")
		res := rp.result()
		if status != 200 || res.err != nil {
			t.Fatalf("sign-in: %d %s %v", status, body, res.err)
		}
		octo := userNamed(t, "octo@acme.example")
		if octo["id"] != res.idToken.Subject || octo["email"] != "octo@acme.example" || octo["emailVerified"] != true || octo["displayName"] != "Octo Cat" {
			t.Errorf("JIT user %v", octo)
		}
		if l := identities(octo["id"].(string)); len(l) != 1 || l[0].(map[string]any)["subject"] != "4242" {
			t.Errorf("link %v, want subject 4242", l)
		}
		if res.claims["idp"] != "gh" || !slices.Equal(anyStrings(res.claims["amr"]), []string{"fed"}) {
			t.Errorf("claims %v", res.claims)
		}
		// Renamed on GitHub: the same account.
		gh.signIn(map[string]any{"id": 4242, "login": "octo-renamed"}, email("octo@acme.example", true, true))
		newBrowser(t, s).upstream(rp.srv.URL, "gh")
		if again := rp.result(); again.err != nil || again.idToken.Subject != octo["id"] {
			t.Errorf("after the rename: %v %v", again.err, again.claims)
		}
	})

	t.Run("a verified secondary address is not the account's", func(t *testing.T) {
		gh.signIn(map[string]any{"id": 5151, "login": "mallory"}, email("alice@acme.example", false, true), email("mallory@acme.example", true, false))
		_, status, body := newBrowser(t, s).upstream(rp.srv.URL, "gh")
		res := rp.result()
		if status != 200 || res.err != nil || res.idToken.Subject == alice {
			t.Fatalf("sign-in: %d %s %v", status, body, res.err)
		}
		if m := userNamed(t, "mallory@acme.example"); m["emailVerified"] != false {
			t.Errorf("an unverified primary address vouched for: %v", m)
		}
		if l := identities(alice); len(l) != 0 {
			t.Errorf("alice's identities %v", l)
		}
	})

	t.Run("an unverified primary address does not link", func(t *testing.T) {
		gh.signIn(map[string]any{"id": 6161, "login": "eve"}, email("alice@acme.example", true, false))
		_, status, body := newBrowser(t, s).upstream(rp.srv.URL, "gh")
		if status != 200 || !strings.Contains(body, "An account with this e-mail exists. Sign in to connect GitHub.") {
			t.Fatalf("sign-in: %d %s", status, body)
		}
		select {
		case r := <-rp.results:
			t.Errorf("the relying party got a callback: %v", r.claims)
		default:
		}
		if l := identities(alice); len(l) != 0 {
			t.Errorf("alice's identities %v", l)
		}
	})

	t.Run("a verified primary address links", func(t *testing.T) {
		gh.signIn(map[string]any{"id": 7171, "login": "alice-gh"}, email("alice@acme.example", true, true))
		_, status, body := newBrowser(t, s).upstream(rp.srv.URL, "gh")
		if res := rp.result(); status != 200 || res.err != nil || res.idToken.Subject != alice {
			t.Fatalf("sign-in: %d %s %v", status, body, res.err)
		}
		if l := identities(alice); len(l) != 1 || l[0].(map[string]any)["subject"] != "7171" {
			t.Errorf("alice's identities %v", l)
		}
	})
}
