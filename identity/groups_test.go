package identity_test

import (
	"slices"
	"testing"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// TestEffectiveRoles: a group grants nothing until an administrator maps
// it to roles; then every member's next platform JWT carries them, and
// only an administrator of the group's tenant can map them.
func TestEffectiveRoles(t *testing.T) {
	e := newEnv(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := identity.NewService(identity.Config{Store: e.st, Keys: mustKeys(t, e), Hasher: identity.NewHasher(fast, 2), Clock: e.clk, Audit: discard{}})
	ctx := t.Context()
	tn, _, _ := e.client(t, s, "ACME000001")
	admin := identity.Principal{Kind: identity.KindUser, TenantID: tn.ID, TenantCode: tn.Code, Roles: []string{identity.RoleTenantAdmin}}
	u, err := s.CreateUser(ctx, admin, tn.ID, "alice", "correct horse", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.CreateGroup(ctx, identity.Group{ID: "g1", TenantID: tn.ID, DisplayName: "Owners", Version: 1, CreatedAt: e.clk.Now(), UpdatedAt: e.clk.Now()}, []identity.ObjectID{u.ID}); err != nil {
		t.Fatal(err)
	}
	roles := func() []string {
		t.Helper()
		tok, err := s.Login(ctx, identity.LoginRequest{Name: "alice", Password: "correct horse", AuthDomain: tn.Code})
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Authenticate(ctx, tok.JWT, identity.PlatformToken)
		if err != nil {
			t.Fatal(err)
		}
		return p.Roles
	}
	if got := roles(); !slices.Equal(got, []string{identity.RoleUser}) {
		t.Fatalf("before the mapping: roles %v", got)
	}
	other, _, _ := e.client(t, s, "ACME000002")
	otherAdmin := identity.Principal{Kind: identity.KindUser, TenantID: other.ID, TenantCode: other.Code, Roles: []string{identity.RoleTenantAdmin}}
	if _, err := s.SetGroupRoles(ctx, otherAdmin, tn.ID, "g1", []string{identity.RoleApplicationOwner}); !fault.Is(fault.NotFound, err) {
		t.Fatalf("another tenant's admin: %v", err)
	}
	plain := identity.Principal{Kind: identity.KindUser, TenantID: tn.ID, TenantCode: tn.Code, Roles: []string{identity.RoleUser}}
	if _, err := s.SetGroupRoles(ctx, plain, tn.ID, "g1", []string{identity.RoleTenantAdmin}); !fault.Is(fault.Forbidden, err) {
		t.Fatalf("a user: %v", err)
	}
	if _, err := s.SetGroupRoles(ctx, admin, tn.ID, "g1", []string{"root"}); !fault.Is(fault.Invalid, err) {
		t.Fatalf("an unknown role: %v", err)
	}
	if _, err := s.SetGroupRoles(ctx, admin, tn.ID, "nope", []string{identity.RoleUser}); !fault.Is(fault.NotFound, err) {
		t.Fatalf("an unknown group: %v", err)
	}
	g, err := s.SetGroupRoles(ctx, admin, tn.ID, "g1", []string{identity.RoleApplicationOwner, identity.RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != 2 {
		t.Errorf("version %d after the mapping", g.Version)
	}
	if got := roles(); !slices.Equal(got, []string{identity.RoleApplicationOwner, identity.RoleUser}) {
		t.Fatalf("after the mapping: roles %v", got)
	}
	if _, err := s.SetGroupRoles(ctx, admin, tn.ID, "g1", []string{}); err != nil {
		t.Fatal(err)
	}
	if got := roles(); !slices.Equal(got, []string{identity.RoleUser}) {
		t.Fatalf("after unmapping: roles %v", got)
	}
}

func mustKeys(t *testing.T, e *env) *identity.KeySet {
	t.Helper()
	keys, err := identity.LoadKeySet(t.Context(), e.st, e.seal, e.clk, "https://issuer.example")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
