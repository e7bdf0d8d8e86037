package storetest

import (
	"context"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/identity"
)

var federationTests = []test{
	{"IdentityProviderRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		p := federation.Provider{TenantID: a, ID: "corp", Type: federation.TypeOIDC, DisplayName: "Corp", Issuer: "https://idp.example", ClientID: "c",
			ClientSecret: []byte{1, 2, 3}, Scopes: []string{"openid"}, Claims: map[string]string{"name": "upn"}, RequiredClaims: map[string]string{"hd": "acme.com"},
			AllowedDomains: []string{"acme.com"}, Linking: federation.LinkingVerifiedEmail, Provisioning: federation.ProvisioningJIT,
			DefaultRoles: []string{"user"}, PassUpstreamAMR: true, Enabled: true, CreatedAt: Epoch, UpdatedAt: Epoch}
		if err := s.CreateIdentityProvider(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateIdentityProvider(ctx, p); !fault.Is(fault.Conflict, err) {
			t.Errorf("duplicate id: %v", err)
		}
		got, err := s.GetIdentityProvider(ctx, a, "corp")
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(p, got); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
		if _, err := s.GetIdentityProvider(ctx, b, "corp"); !fault.Is(fault.NotFound, err) {
			t.Errorf("another tenant's: %v", err)
		}
		p.DisplayName, p.Enabled, p.UpdatedAt = "Corp 2", false, Epoch.Add(1e9)
		if err := s.UpdateIdentityProvider(ctx, p); err != nil {
			t.Fatal(err)
		}
		if l, err := s.ListIdentityProviders(ctx, a); err != nil || len(l) != 1 || l[0].DisplayName != "Corp 2" || l[0].Enabled {
			t.Errorf("list after update: %v %v", l, err)
		}
		if l, err := s.ListIdentityProviders(ctx, b); err != nil || l == nil || len(l) != 0 {
			t.Errorf("another tenant's list: %v %v", l, err)
		}
		u := identity.NewObjectID()
		l := federation.Link{TenantID: a, ProviderID: "corp", Subject: "s1", UserID: u, Email: "x@acme.com", LinkedAt: Epoch}
		if err := s.CreateFederatedIdentity(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateFederatedIdentity(ctx, federation.Link{TenantID: a, ProviderID: "corp", Subject: "s1", UserID: identity.NewObjectID(), LinkedAt: Epoch}); !fault.Is(fault.Conflict, err) {
			t.Errorf("subject linked twice: %v", err)
		}
		if err := s.CreateFederatedIdentity(ctx, federation.Link{TenantID: a, ProviderID: "corp", Subject: "s2", UserID: u, LinkedAt: Epoch}); !fault.Is(fault.Conflict, err) {
			t.Errorf("two links of one provider for a user: %v", err)
		}
		if got, err := s.GetFederatedIdentity(ctx, a, "corp", "s1"); err != nil || gocmp.Diff(l, got) != "" {
			t.Errorf("get link: %v %v", got, err)
		}
		if ls, err := s.ListFederatedIdentities(ctx, a, u); err != nil || len(ls) != 1 {
			t.Errorf("list links: %v %v", ls, err)
		}
		if err := s.DeleteIdentityProvider(ctx, a, "corp"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetFederatedIdentity(ctx, a, "corp", "s1"); !fault.Is(fault.NotFound, err) {
			t.Errorf("a deleted provider's link: %v", err)
		}
		if err := s.DeleteIdentityProvider(ctx, a, "corp"); !fault.Is(fault.NotFound, err) {
			t.Errorf("delete twice: %v", err)
		}
	}},
	{"FederatedIdentitiesOfDeletedUser", func(t *testing.T, ctx context.Context, s Store) {
		tn := identity.Tenant{ID: identity.NewGUID(), Code: "FEDTEST001", Name: "Fed", CreatedAt: Epoch}
		if err := s.CreateTenant(ctx, tn); err != nil {
			t.Fatal(err)
		}
		u := newUser(tn.ID, "alice")
		u.Email, u.EmailVerified = "Alice@Acme.com", true
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if ids, err := s.FindUsersByEmail(ctx, tn.ID, "alice@acme.COM"); err != nil || len(ids) != 1 || ids[0] != u.ID {
			t.Errorf("find by email: %v %v", ids, err)
		}
		if ids, err := s.FindUsersByEmail(ctx, identity.NewGUID(), "alice@acme.com"); err != nil || len(ids) != 0 {
			t.Errorf("another tenant's find: %v %v", ids, err)
		}
		if err := s.CreateFederatedIdentity(ctx, federation.Link{TenantID: tn.ID, ProviderID: "corp", Subject: "s1", UserID: u.ID, LinkedAt: Epoch}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteFederatedIdentity(ctx, tn.ID, u.ID, "other"); !fault.Is(fault.NotFound, err) {
			t.Errorf("unlink an absent link: %v", err)
		}
		if err := s.DeleteUser(ctx, tn.ID, u.ID, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetFederatedIdentity(ctx, tn.ID, "corp", "s1"); !fault.Is(fault.NotFound, err) {
			t.Errorf("a deleted user's link: %v", err)
		}
	}},
}
