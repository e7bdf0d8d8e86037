package identity_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/oidc"
)

// putUser stores a user of tenantID with a foreign hash, as an import does.
func putUser(t *testing.T, st identity.Store, tenantID, name, hash string) identity.User {
	t.Helper()
	u := identity.User{ID: identity.NewObjectID(), TenantID: tenantID, Name: name, PasswordHash: hash,
		PasswordScheme: identity.PasswordSchemeOf(hash), Roles: []string{identity.RoleUser}, CreatedAt: latchkeytest.Start}
	if err := st.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// rehashRecords returns the user.password.rehash records of a tenant.
func rehashRecords(t *testing.T, e *latchkeytest.Env, tenantID string) []map[string]any {
	t.Helper()
	recs, err := e.Store.ListAuditRecords(t.Context(), tenantID, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range recs {
		if r.Action == identity.ActionPasswordRehash {
			out = append(out, r.Meta)
		}
	}
	return out
}

const (
	kratosBcrypt = "$2a$12$o6hx.Wog/wvFSkT/Bp/6DOxCtLRTDj7lm9on9suF/WaCGNVHbkfL6"                                                         // "test"
	kratosPBKDF2 = "$pbkdf2-sha256$i=100000,l=32$1jP+5Zxpxgtee/iPxGgOz0RfE9/KJuDElP1ley4VxXc$QJxzfvdbHYBpydCbHoFg3GJEqMFULwskiuqiJctoYpI" // "test"
)

// TestImportedHashIsRehashedOnEveryLoginPath: a user with a foreign hash
// logs in through the API, the hosted sign-in page and the guide; the
// first success replaces the hash by argon2id (audited once with its
// schemes), later logins keep it, and a wrong password changes nothing.
func TestImportedHashIsRehashedOnEveryLoginPath(t *testing.T) {
	if testing.Short() {
		// Seconds of bcrypt, scrypt and PBKDF2 on one goroutine: the race
		// detector (CI's -short run) multiplies them and finds nothing;
		// go test ./... runs it.
		t.Skip("password hashing on one goroutine; skipped in -short")
	}
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	ctx := t.Context()
	logins := map[string]func(name, password string) error{
		"api": func(name, password string) error {
			_, err := e.Platform.Identity.Login(ctx, identity.LoginRequest{Name: name, Password: password, AuthDomain: tn.Code})
			return err
		},
		"guide": func(name, password string) error {
			_, _, err := e.Platform.Guide.Login(ctx, identity.LoginRequest{Name: name, Password: password, AuthDomain: tn.Code}, "")
			return err
		},
		"sign-in page": func(name, password string) error {
			admin := identity.Principal{Kind: identity.KindUser, TenantID: e.Root.ID, TenantCode: e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
			c, _, err := e.Platform.Identity.RegisterOAuthClient(ctx, admin, tn.ID, identity.NewOAuthClient{Name: "web-" + name, Scopes: []string{"openid"},
				GrantTypes: []string{"authorization_code"}, RedirectURIs: []string{"https://app.example/cb"}})
			if err != nil {
				return err
			}
			out, err := e.Platform.OIDC.Authorize(ctx, url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {"https://app.example/cb"},
				"scope": {"openid"}, "code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}, "")
			if err != nil {
				return err
			}
			_, err = e.Platform.OIDC.SignIn(ctx, oidc.SignInRequest{Request: out.SignIn, BrowserID: "b-" + name, CSRFToken: e.Platform.OIDC.CSRFToken("b-" + name),
				Username: name, Password: password})
			return err
		},
	}
	for path, login := range logins {
		t.Run(path, func(t *testing.T) {
			for _, hash := range []string{kratosBcrypt, kratosPBKDF2} {
				name := strings.ReplaceAll(path, " ", "-") + "-" + identity.PasswordSchemeOf(hash)
				u := putUser(t, e.Store, tn.ID, name, hash)
				if err := login(name, "wrong"); err == nil {
					t.Fatal("a wrong password logged in")
				}
				if got, _ := e.Store.GetUser(ctx, tn.ID, u.ID); got.PasswordHash != hash {
					t.Fatal("a failed login changed the hash")
				}
				for range 2 {
					if err := login(name, "test"); err != nil {
						t.Fatalf("login with the imported hash: %v", err)
					}
				}
				got, err := e.Store.GetUser(ctx, tn.ID, u.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.PasswordScheme != identity.SchemeArgon2id || !strings.HasPrefix(got.PasswordHash, "$argon2id$") {
					t.Errorf("after the first login: scheme %q hash %.12s", got.PasswordScheme, got.PasswordHash)
				}
				if err := login(name, "test"); err != nil {
					t.Errorf("login after the rehash: %v", err)
				}
			}
		})
	}
	var got []string
	for _, m := range rehashRecords(t, e, tn.ID) {
		got = append(got, m["user"].(map[string]any)["name"].(string)+" "+m["from"].(string)+">"+m["to"].(string))
	}
	want := []string{"api-bcrypt bcrypt>argon2id", "api-pbkdf2-sha256 pbkdf2-sha256>argon2id", "guide-bcrypt bcrypt>argon2id",
		"guide-pbkdf2-sha256 pbkdf2-sha256>argon2id", "sign-in-page-bcrypt bcrypt>argon2id", "sign-in-page-pbkdf2-sha256 pbkdf2-sha256>argon2id"}
	if d := cmp.Diff(want, got, cmpSorted); d != "" {
		t.Errorf("rehash records (-want +got):\n%s", d)
	}
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// swapStore changes a user's hash just before the rehash's
// compare-and-swap (as a concurrent password change would), or fails it.
type swapStore struct {
	latchkey.Store
	before func(ctx context.Context, tenantID string, id identity.ObjectID) error
	calls  atomic.Int32
}

func (s *swapStore) UpdatePasswordHash(ctx context.Context, tenantID string, id identity.ObjectID, old, newHash, scheme string) error {
	s.calls.Add(1)
	if err := s.before(ctx, tenantID, id); err != nil {
		return err
	}
	return s.Store.UpdatePasswordHash(ctx, tenantID, id, old, newHash, scheme)
}

// TestRehashKeepsAConcurrentChange: the rehash is a compare-and-swap, so
// a hash changed between the check and the store survives; a rehash that
// fails leaves the login successful and the next login tries again.
func TestRehashKeepsAConcurrentChange(t *testing.T) {
	var ss *swapStore
	e := latchkeytest.New(t, func(c *latchkey.Config) {
		ss = &swapStore{Store: c.Store}
		c.Store = ss
	})
	tn := e.NewTenant("Acme")
	ctx := t.Context()
	login := func(name, password string) error {
		_, err := e.Platform.Identity.Login(ctx, identity.LoginRequest{Name: name, Password: password, AuthDomain: tn.Code})
		return err
	}

	u := putUser(t, ss, tn.ID, "raced", kratosBcrypt)
	const changed = "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA"
	ss.before = func(ctx context.Context, tenantID string, id identity.ObjectID) error {
		return ss.Store.UpdatePasswordHash(ctx, tenantID, id, kratosBcrypt, changed, identity.SchemeArgon2id)
	}
	if err := login("raced", "test"); err != nil {
		t.Fatalf("login: %v", err)
	}
	if got, _ := ss.GetUser(ctx, tn.ID, u.ID); got.PasswordHash != changed {
		t.Errorf("the concurrent change was overwritten: %.20s", got.PasswordHash)
	}

	v := putUser(t, ss, tn.ID, "unlucky", kratosPBKDF2)
	ss.before = func(context.Context, string, identity.ObjectID) error {
		return fault.E(fault.Unavailable, "database down", errors.New("boom"))
	}
	if err := login("unlucky", "test"); err != nil {
		t.Fatalf("a failed rehash failed the login: %v", err)
	}
	if got, _ := ss.GetUser(ctx, tn.ID, v.ID); got.PasswordHash != kratosPBKDF2 {
		t.Error("the hash changed though its update failed")
	}
	ss.before = func(context.Context, string, identity.ObjectID) error { return nil }
	if err := login("unlucky", "test"); err != nil {
		t.Fatal(err)
	}
	if got, _ := ss.GetUser(ctx, tn.ID, v.ID); got.PasswordScheme != identity.SchemeArgon2id {
		t.Errorf("the next login did not rehash: %q", got.PasswordScheme)
	}
	if n := len(rehashRecords(t, e, tn.ID)); n != 1 {
		t.Errorf("%d rehash records, want 1 (only the stored rehash is audited)", n)
	}
}
