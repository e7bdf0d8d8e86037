package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// NewTenant returns a tenant for tests with the given code.
func NewTenant(code string) identity.Tenant {
	return identity.Tenant{ID: identity.NewGUID(), Code: code, Name: "Tenant " + code, Settings: identity.DefaultSettings(), CreatedAt: Epoch}
}

func mustCreateTenant(t *testing.T, ctx context.Context, s Store, code string) identity.Tenant {
	t.Helper()
	tn := NewTenant(code)
	if err := s.CreateTenant(ctx, tn); err != nil {
		t.Fatalf("CreateTenant: %v", err)
	}
	return tn
}

func wantKind(t *testing.T, what string, err error, k fault.Kind) {
	t.Helper()
	if !fault.Is(k, err) {
		t.Errorf("%s: err = %v, want kind %v", what, err, k)
	}
}

var identityTests = []test{
	{"TenantRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		tn := NewTenant("ACME000001")
		if err := s.CreateTenant(ctx, tn); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetTenant(ctx, tn.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tn, got); d != "" {
			t.Errorf("GetTenant (-want +got):\n%s", d)
		}
		got, err = s.GetTenantByCode(ctx, tn.Code)
		if err != nil || got.ID != tn.ID {
			t.Errorf("GetTenantByCode = %v, %v", got.ID, err)
		}
		st := tn.Settings
		st.FIDOImportEnabled = false
		st.PlanFeatures = []string{}
		st.NotificationRetentionSeconds = 60
		if err := s.UpdateTenantSettings(ctx, tn.ID, st); err != nil {
			t.Fatal(err)
		}
		got, _ = s.GetTenant(ctx, tn.ID)
		if got.Settings.FIDOImportEnabled || got.Settings.NotificationRetentionSeconds != 60 || len(got.Settings.PlanFeatures) != 0 {
			t.Errorf("settings not updated: %+v", got.Settings)
		}
	}},
	{"TenantErrors", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "ACME000001")
		dup := NewTenant("ACME000001")
		wantKind(t, "duplicate code", s.CreateTenant(ctx, dup), fault.Conflict)
		same := NewTenant("ACME000002")
		same.ID = tn.ID
		wantKind(t, "duplicate id", s.CreateTenant(ctx, same), fault.Conflict)
		_, err := s.GetTenant(ctx, identity.NewGUID())
		wantKind(t, "GetTenant missing", err, fault.NotFound)
		_, err = s.GetTenantByCode(ctx, "NOPE000000")
		wantKind(t, "GetTenantByCode missing", err, fault.NotFound)
		wantKind(t, "UpdateTenantSettings missing", s.UpdateTenantSettings(ctx, identity.NewGUID(), identity.Settings{}), fault.NotFound)
	}},
	{"Users", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		b := mustCreateTenant(t, ctx, s, "BBBBBBBBBB")
		u := identity.User{ID: identity.NewObjectID(), TenantID: a.ID, Name: "alice", PasswordHash: "$argon2id$x", Roles: []string{"tenant-admin", "user"}, CreatedAt: Epoch}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetUser(ctx, a.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(u, got); d != "" {
			t.Errorf("GetUser (-want +got):\n%s", d)
		}
		got, err = s.GetUserByName(ctx, a.ID, "alice")
		if err != nil || got.ID != u.ID {
			t.Errorf("GetUserByName = %v, %v", got.ID, err)
		}
		// Tenant isolation: the same id or name seen from another tenant does not exist.
		_, err = s.GetUser(ctx, b.ID, u.ID)
		wantKind(t, "GetUser other tenant", err, fault.NotFound)
		_, err = s.GetUserByName(ctx, b.ID, "alice")
		wantKind(t, "GetUserByName other tenant", err, fault.NotFound)
		dup := u
		dup.ID = identity.NewObjectID()
		wantKind(t, "duplicate name", s.CreateUser(ctx, dup), fault.Conflict)
		dup.TenantID = b.ID // the same name in another tenant is fine
		if err := s.CreateUser(ctx, dup); err != nil {
			t.Errorf("same name in other tenant: %v", err)
		}
	}},
	{"OAuthClientsAndAPIKeys", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		sum := sha256.Sum256([]byte("secret"))
		c := identity.OAuthClient{ID: "lkc_1", TenantID: a.ID, Name: "robot", SecretHash: sum[:], Scopes: []string{"audit:export"}, Role: "tenant-admin", CreatedAt: Epoch,
			Type: identity.ClientConfidential}
		if err := s.CreateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetOAuthClient(ctx, "lkc_1")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(c, got); d != "" {
			t.Errorf("GetOAuthClient (-want +got):\n%s", d)
		}
		wantKind(t, "duplicate client", s.CreateOAuthClient(ctx, c), fault.Conflict)
		_, err = s.GetOAuthClient(ctx, "lkc_2")
		wantKind(t, "missing client", err, fault.NotFound)

		uid := identity.NewObjectID()
		k := identity.APIKey{ID: identity.NewGUID(), TenantID: a.ID, Name: "key", Hash: sum[:], UserID: &uid, Areas: []string{"authenticator"}, CreatedAt: Epoch}
		if err := s.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		gk, err := s.GetAPIKeyByHash(ctx, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(k, gk); d != "" {
			t.Errorf("GetAPIKeyByHash (-want +got):\n%s", d)
		}
		other := sha256.Sum256([]byte("other"))
		_, err = s.GetAPIKeyByHash(ctx, other[:])
		wantKind(t, "missing key", err, fault.NotFound)
		k2 := k
		k2.ID = identity.NewGUID()
		wantKind(t, "duplicate key hash", s.CreateAPIKey(ctx, k2), fault.Conflict)
		k3 := k
		k3.ID, k3.Hash, k3.UserID = identity.NewGUID(), other[:], nil
		if err := s.CreateAPIKey(ctx, k3); err != nil {
			t.Fatal(err)
		}
		if g, _ := s.GetAPIKeyByHash(ctx, other[:]); g.UserID != nil {
			t.Errorf("unbound key came back bound to %v", g.UserID)
		}
	}},
	{"SigningKeys", func(t *testing.T, ctx context.Context, s Store) {
		keys, err := s.ListSigningKeys(ctx)
		if err != nil || len(keys) != 0 {
			t.Fatalf("empty store lists %d keys, %v", len(keys), err)
		}
		k1 := identity.SigningKey{ID: "k1", Algorithm: "ES256", Private: []byte("sealed1"), Public: []byte("pub1"), CreatedAt: Epoch}
		k2 := identity.SigningKey{ID: "k2", Algorithm: "ES256", Private: []byte("sealed2"), Public: []byte("pub2"), CreatedAt: Epoch.Add(time.Hour)}
		for _, k := range []identity.SigningKey{k1, k2} {
			if err := s.CreateSigningKey(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		wantKind(t, "duplicate kid", s.CreateSigningKey(ctx, k1), fault.Conflict)
		keys, err = s.ListSigningKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]identity.SigningKey{k1, k2}, keys); d != "" {
			t.Errorf("ListSigningKeys (-want +got):\n%s", d)
		}
	}},
	{"RefreshTokensAreSingleUse", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		sum := sha256.Sum256([]byte("refresh"))
		rt := identity.RefreshToken{Hash: sum[:], TenantID: a.ID, UserID: identity.NewObjectID(), ExpiresAt: Epoch.Add(time.Hour), CreatedAt: Epoch}
		if err := s.CreateRefreshToken(ctx, rt); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "duplicate", s.CreateRefreshToken(ctx, rt), fault.Conflict)
		got, err := s.UseRefreshToken(ctx, sum[:], Epoch)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(rt, got); d != "" {
			t.Errorf("UseRefreshToken (-want +got):\n%s", d)
		}
		_, err = s.UseRefreshToken(ctx, sum[:], Epoch)
		wantKind(t, "second use", err, fault.NotFound)

		exp := sha256.Sum256([]byte("expired"))
		rt.Hash = exp[:]
		if err := s.CreateRefreshToken(ctx, rt); err != nil {
			t.Fatal(err)
		}
		_, err = s.UseRefreshToken(ctx, exp[:], rt.ExpiresAt)
		wantKind(t, "expired", err, fault.NotFound)
		if bytes.Equal(exp[:], sum[:]) {
			t.Fatal("test hashes collide")
		}
	}},
}
