package httpapi_test

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/identity"
)

// TestOIDCGroupsScope: with the groups scope, ID tokens and userinfo
// carry groups, the display names of the user's groups ([] for none);
// without it, no groups claim (API-federation.md).
func TestOIDCGroupsScope(t *testing.T) {
	s := newOIDCServer(t)
	tn := s.api("POST", "/api/v1/admin/tenants", map[string]string{"name": "Acme", "code": "GROUPS0001"})
	tenantID := tn["id"].(string)
	users := "/api/v1/admin/tenants/" + tenantID + "/users"
	alice := s.api("POST", users, map[string]any{"name": "alice", "password": "user-password-1"})["id"].(string)
	s.api("POST", users, map[string]any{"name": "bob", "password": "user-password-2"})
	aliceID, err := identity.ParseObjectID(alice, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Sales-EMEA", "Everyone"} {
		if err := s.st.CreateGroup(t.Context(), identity.Group{ID: identity.NewGUID(), TenantID: tenantID, DisplayName: name, Version: 1,
			CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}, []identity.ObjectID{aliceID}); err != nil {
			t.Fatal(err)
		}
	}
	cl := s.api("POST", "/api/v1/admin/tenants/"+tenantID+"/oauth-clients", map[string]any{"name": "Acme web",
		"scopes": []string{"openid", "profile", "groups"}, "grant_types": []string{"authorization_code"}, "redirect_uris": []string{"http://127.0.0.1/cb"}})
	rp := newRelyingParty(t, s, cl["client_id"].(string), cl["client_secret"].(string))
	signIn := func(t *testing.T, name, password, scope string) rpResult {
		t.Helper()
		b := newBrowser(t, s)
		pageURL, _, page := b.get(rp.srv.URL + "/login?scope=" + scope)
		if _, status, body := b.signIn(pageURL, page, name, password); status != 200 {
			t.Fatalf("sign-in: %d %s", status, body)
		}
		res := rp.result()
		if res.err != nil {
			t.Fatal(res.err)
		}
		return res
	}
	for _, tt := range []struct {
		name, user, password, scope string
		want                        []string // nil: no claim
	}{
		{"member", "alice", "user-password-1", "openid+groups", []string{"Everyone", "Sales-EMEA"}},
		{"no group", "bob", "user-password-2", "openid+groups", []string{}},
		{"without the scope", "alice", "user-password-1", "openid+profile", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := signIn(t, tt.user, tt.password, tt.scope)
			got, has := res.claims["groups"]
			if (tt.want == nil) != !has || tt.want != nil && !slices.Equal(anyStrings(got), tt.want) {
				t.Errorf("ID token groups %v (present %v), want %v", got, has, tt.want)
			}
			info, err := rp.provider.UserInfo(rp.ctx, oauth2.StaticTokenSource(res.token))
			var claims map[string]any
			if err == nil {
				err = info.Claims(&claims)
			}
			got, has = claims["groups"]
			if err != nil || (tt.want == nil) != !has || tt.want != nil && !slices.Equal(anyStrings(got), tt.want) {
				t.Errorf("userinfo groups %v (present %v), want %v: %v", got, has, tt.want, err)
			}
		})
	}
}
