package storetest

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

func oidcHash(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// The OpenID Provider's state: relying-party clients, single-use codes
// and refresh tokens (exactly one of concurrent takers wins, and a used
// one stays to be recognised), grants revoked as a whole, sessions.
var oidcTests = []test{
	{"OAuthClientRelyingPartyRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		c := identity.OAuthClient{ID: "lkc_p", TenantID: a.ID, Name: "spa", Scopes: []string{"openid", "profile"}, CreatedAt: Epoch,
			Type: identity.ClientPublic, RedirectURIs: []string{"http://127.0.0.1/cb", "https://app.example.com/cb"},
			PostLogoutRedirectURIs: []string{"https://app.example.com/bye"}, GrantTypes: []string{"authorization_code", "refresh_token"}, IDTokenAlg: "ES256"}
		if err := s.CreateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetOAuthClient(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(c, got); d != "" {
			t.Errorf("GetOAuthClient (-want +got):\n%s", d)
		}
	}},
	{"AuthCodeTakenOnce", func(t *testing.T, ctx context.Context, s Store) {
		c := oidc.AuthCode{Hash: oidcHash("code"), GrantID: "g1", ClientID: "lkc_1", TenantID: "t1", UserID: identity.NewObjectID(),
			RedirectURI: "https://app.example.com/cb", Challenge: "ch", Scope: "openid", Nonce: "n", SID: "sid", AMR: []string{"hwk", "user"}, IDP: "corp",
			AuthTime: Epoch.Add(-time.Minute), CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Minute)}
		if err := s.CreateAuthCode(ctx, c); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "duplicate", s.CreateAuthCode(ctx, c), fault.Conflict)
		_, err := s.TakeAuthCode(ctx, oidcHash("other"), Epoch)
		wantKind(t, "unknown code", err, fault.NotFound)
		got, err := s.TakeAuthCode(ctx, c.Hash, Epoch.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(c, got); d != "" {
			t.Errorf("first TakeAuthCode (-want +got):\n%s", d)
		}
		again, err := s.TakeAuthCode(ctx, c.Hash, Epoch.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if again.UsedAt == nil || !again.UsedAt.Equal(Epoch.Add(time.Second)) {
			t.Errorf("second TakeAuthCode: UsedAt %v, want the first use's time", again.UsedAt)
		}
	}},
	{"AuthCodeConcurrentTakers", func(t *testing.T, ctx context.Context, s Store) {
		c := oidc.AuthCode{Hash: oidcHash("race"), GrantID: "g", ClientID: "c", TenantID: "t", RedirectURI: "https://x/cb", AMR: []string{"pwd"},
			AuthTime: Epoch, CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Minute)}
		if err := s.CreateAuthCode(ctx, c); err != nil {
			t.Fatal(err)
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			first int
		)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := s.TakeAuthCode(ctx, c.Hash, Epoch.Add(time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				if got.UsedAt == nil {
					mu.Lock()
					first++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if first != 1 {
			t.Errorf("%d takers saw the code unused, want exactly 1", first)
		}
	}},
	{"ExpiredAuthCodesSweptAfterRetention", func(t *testing.T, ctx context.Context, s Store) {
		old := oidc.AuthCode{Hash: oidcHash("old"), GrantID: "g", AMR: []string{}, AuthTime: Epoch, CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Minute)}
		if err := s.CreateAuthCode(ctx, old); err != nil {
			t.Fatal(err)
		}
		// Within the retention the used code is still found.
		soon := oidc.AuthCode{Hash: oidcHash("soon"), GrantID: "g2", AMR: []string{}, AuthTime: Epoch, CreatedAt: Epoch.Add(30 * time.Minute), ExpiresAt: Epoch.Add(31 * time.Minute)}
		if err := s.CreateAuthCode(ctx, soon); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TakeAuthCode(ctx, old.Hash, soon.CreatedAt); err != nil {
			t.Errorf("code within retention: %v", err)
		}
		late := oidc.AuthCode{Hash: oidcHash("late"), GrantID: "g3", AMR: []string{}, AuthTime: Epoch, CreatedAt: Epoch.Add(2 * time.Hour), ExpiresAt: Epoch.Add(2*time.Hour + time.Minute)}
		if err := s.CreateAuthCode(ctx, late); err != nil {
			t.Fatal(err)
		}
		_, err := s.TakeAuthCode(ctx, old.Hash, late.CreatedAt)
		wantKind(t, "code past retention", err, fault.NotFound)
	}},
	{"RefreshTokensRotateAndGrantRevokes", func(t *testing.T, ctx context.Context, s Store) {
		uid := identity.NewObjectID()
		rt := func(name string, at time.Duration) oidc.RefreshToken {
			return oidc.RefreshToken{Hash: oidcHash(name), GrantID: "grant", ClientID: "c", TenantID: "t", UserID: uid, Scope: "openid offline_access",
				SID: "sid", AMR: []string{"pwd"}, IDP: "corp", AuthTime: Epoch, AccessJTI: "jti-" + name, CreatedAt: Epoch.Add(at), ExpiresAt: Epoch.Add(at + time.Hour)}
		}
		one, two := rt("one", 0), rt("two", time.Minute)
		other := rt("other", 0)
		other.GrantID = "another"
		for _, r := range []oidc.RefreshToken{one, two, other} {
			if err := s.CreateOIDCRefreshToken(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		wantKind(t, "duplicate", s.CreateOIDCRefreshToken(ctx, one), fault.Conflict)
		for range 2 { // reading changes nothing
			if got, err := s.GetOIDCRefreshToken(ctx, one.Hash); err != nil {
				t.Fatal(err)
			} else if d := gocmp.Diff(one, got); d != "" {
				t.Errorf("GetOIDCRefreshToken (-want +got):\n%s", d)
			}
		}
		_, err := s.GetOIDCRefreshToken(ctx, oidcHash("nope"))
		wantKind(t, "get unknown", err, fault.NotFound)
		got, err := s.TakeOIDCRefreshToken(ctx, one.Hash, Epoch.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(one, got); d != "" {
			t.Errorf("TakeOIDCRefreshToken (-want +got):\n%s", d)
		}
		if again, err := s.TakeOIDCRefreshToken(ctx, one.Hash, Epoch.Add(2*time.Second)); err != nil || again.UsedAt == nil {
			t.Errorf("reuse: %+v %v, want UsedAt set", again, err)
		}
		_, err = s.TakeOIDCRefreshToken(ctx, oidcHash("nope"), Epoch)
		wantKind(t, "unknown", err, fault.NotFound)
		rts, err := s.RevokeOIDCGrant(ctx, "grant", Epoch.Add(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var jtis []string
		for _, r := range rts {
			jtis = append(jtis, r.AccessJTI)
			if r.UsedAt == nil {
				t.Errorf("%s not marked used by the revocation", r.AccessJTI)
			}
		}
		if d := gocmp.Diff([]string{"jti-one", "jti-two"}, jtis); d != "" {
			t.Errorf("revoked grant's tokens (-want +got):\n%s", d)
		}
		if got, _ := s.GetOIDCRefreshToken(ctx, one.Hash); got.UsedAt == nil || !got.UsedAt.Equal(Epoch.Add(time.Second)) {
			t.Errorf("GetOIDCRefreshToken of a used token: UsedAt %v, want the first use", got.UsedAt)
		}
		if got, _ := s.TakeOIDCRefreshToken(ctx, two.Hash, Epoch.Add(4*time.Second)); got.UsedAt == nil || !got.UsedAt.Equal(Epoch.Add(3*time.Second)) {
			t.Errorf("token of a revoked grant: UsedAt %v", got.UsedAt)
		}
		if got, _ := s.TakeOIDCRefreshToken(ctx, other.Hash, Epoch.Add(4*time.Second)); got.UsedAt != nil {
			t.Errorf("another grant's token was revoked too")
		}
	}},
	{"OIDCSessionsRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		o := oidc.Session{IDHash: oidcHash("sess"), SID: "sid", TenantID: "t", UserID: identity.NewObjectID(), UserName: "alice",
			AMR: []string{"hwk", "user"}, AuthTime: Epoch, CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Hour)}
		if err := s.CreateOIDCSession(ctx, o); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "duplicate", s.CreateOIDCSession(ctx, o), fault.Conflict)
		got, err := s.GetOIDCSession(ctx, o.IDHash)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(o, got); d != "" {
			t.Errorf("GetOIDCSession (-want +got):\n%s", d)
		}
		if err := s.DeleteOIDCSession(ctx, o.IDHash); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "deleted", s.DeleteOIDCSession(ctx, o.IDHash), fault.NotFound)
		_, err = s.GetOIDCSession(ctx, o.IDHash)
		wantKind(t, "deleted", err, fault.NotFound)
	}},
}
