package storetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/scim"
)

func mustUser(t *testing.T, ctx context.Context, s Store, tenantID, name string) identity.User {
	t.Helper()
	u := identity.User{ID: identity.NewObjectID(), TenantID: tenantID, Name: name, Roles: []string{"user"}, CreatedAt: Epoch}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	return u
}

func newGroup(tenantID, id, name string) identity.Group {
	return identity.Group{ID: id, TenantID: tenantID, DisplayName: name, Version: 1, CreatedAt: Epoch, UpdatedAt: Epoch}
}

func groupFilter(t *testing.T, text string) filter.Expr {
	t.Helper()
	e, err := filter.ParseSCIM(text)
	if err != nil {
		t.Fatal(err)
	}
	r, err := scim.Groups.StoreFilter.Resolve(e)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func groupIDs(gs []identity.Group) []string {
	var ids []string
	for _, g := range gs {
		ids = append(ids, g.ID)
	}
	return ids
}

var groupTests = []test{
	{"GroupRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "GRPS000001")
		alice, bob := mustUser(t, ctx, s, tn.ID, "alice"), mustUser(t, ctx, s, tn.ID, "bob")
		g := newGroup(tn.ID, "g1", "Sales")
		g.ExternalID, g.Roles = "ext-1", []string{"application-owner"}
		if err := s.CreateGroup(ctx, g, []identity.ObjectID{alice.ID, bob.ID, alice.ID}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetGroup(ctx, tn.ID, "g1")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(g, got); d != "" {
			t.Errorf("GetGroup (-want +got):\n%s", d)
		}
		want := []identity.GroupMember{{UserID: alice.ID, UserName: "alice"}, {UserID: bob.ID, UserName: "bob"}}
		slices.SortFunc(want, func(a, b identity.GroupMember) int { return bytes.Compare(a.UserID[:], b.UserID[:]) })
		members, err := s.ListGroupMembers(ctx, tn.ID, "g1", 10)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, members); d != "" {
			t.Errorf("ListGroupMembers (-want +got):\n%s", d)
		}
		if m, _ := s.ListGroupMembers(ctx, tn.ID, "g1", 1); len(m) != 1 {
			t.Errorf("limit 1: %d members", len(m))
		}
		if n, err := s.CountGroupMembers(ctx, tn.ID, "g1"); err != nil || n != 2 {
			t.Errorf("CountGroupMembers = %d, %v", n, err)
		}
		ug, err := s.UserGroups(ctx, tn.ID, alice.ID)
		if err != nil || len(ug) != 1 || ug[0].ID != "g1" || !slices.Equal(ug[0].Roles, []string{"application-owner"}) {
			t.Errorf("UserGroups = %+v, %v", ug, err)
		}
		// Another tenant sees nothing.
		other := mustCreateTenant(t, ctx, s, "GRPS000002")
		_, err = s.GetGroup(ctx, other.ID, "g1")
		wantKind(t, "GetGroup of another tenant", err, fault.NotFound)
		_, err = s.ListGroupMembers(ctx, other.ID, "g1", 10)
		wantKind(t, "ListGroupMembers of another tenant", err, fault.NotFound)
		if ug, _ := s.UserGroups(ctx, other.ID, alice.ID); len(ug) != 0 {
			t.Errorf("UserGroups of another tenant: %+v", ug)
		}
	}},
	{"GroupNamesUniqueIgnoringCase", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "GRPS000001")
		other := mustCreateTenant(t, ctx, s, "GRPS000002")
		if err := s.CreateGroup(ctx, newGroup(tn.ID, "g1", "Sales"), nil); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "same name, other case", s.CreateGroup(ctx, newGroup(tn.ID, "g2", "SALES"), nil), fault.Conflict)
		wantKind(t, "same id", s.CreateGroup(ctx, newGroup(tn.ID, "g1", "Other"), nil), fault.Conflict)
		if err := s.CreateGroup(ctx, newGroup(other.ID, "g3", "Sales"), nil); err != nil {
			t.Errorf("the same name in another tenant: %v", err)
		}
		if err := s.CreateGroup(ctx, newGroup(tn.ID, "g4", "Support"), nil); err != nil {
			t.Fatal(err)
		}
		g := newGroup(tn.ID, "g4", "sales")
		g.Version = 2
		_, _, err := s.UpdateGroup(ctx, identity.GroupUpdate{Group: g})
		wantKind(t, "rename to a taken name", err, fault.Conflict)
	}},
	{"GroupMembersOfTheTenantOnly", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "GRPS000001")
		other := mustCreateTenant(t, ctx, s, "GRPS000002")
		mallory := mustUser(t, ctx, s, other.ID, "mallory")
		err := s.CreateGroup(ctx, newGroup(tn.ID, "g1", "Sales"), []identity.ObjectID{mallory.ID})
		wantKind(t, "a member of another tenant", err, fault.Invalid)
		if _, err := s.GetGroup(ctx, tn.ID, "g1"); !fault.Is(fault.NotFound, err) {
			t.Errorf("a refused create left the group: %v", err)
		}
		err = s.CreateGroup(ctx, newGroup(tn.ID, "g1", "Sales"), []identity.ObjectID{identity.NewObjectID()})
		wantKind(t, "an unknown member", err, fault.Invalid)
	}},
	{"GroupUpdate", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "GRPS000001")
		a, b, c := mustUser(t, ctx, s, tn.ID, "a"), mustUser(t, ctx, s, tn.ID, "b"), mustUser(t, ctx, s, tn.ID, "c")
		if err := s.CreateGroup(ctx, newGroup(tn.ID, "g1", "Sales"), []identity.ObjectID{a.ID, b.ID}); err != nil {
			t.Fatal(err)
		}
		g := newGroup(tn.ID, "g1", "Sales EMEA")
		g.Version, g.UpdatedAt, g.ExternalID = 2, Epoch.Add(time.Minute), "x"
		added, removed, err := s.UpdateGroup(ctx, identity.GroupUpdate{Group: g, Members: []identity.ObjectID{b.ID, c.ID}, SetMembers: true, IfVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]identity.ObjectID{c.ID}, added); d != "" {
			t.Errorf("added (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]identity.ObjectID{a.ID}, removed); d != "" {
			t.Errorf("removed (-want +got):\n%s", d)
		}
		got, _ := s.GetGroup(ctx, tn.ID, "g1")
		if d := cmp.Diff(g, got); d != "" {
			t.Errorf("after update (-want +got):\n%s", d)
		}
		// A stale version changes nothing.
		stale := g
		stale.DisplayName, stale.Version = "Stale", 3
		_, _, err = s.UpdateGroup(ctx, identity.GroupUpdate{Group: stale, IfVersion: 1})
		if !fault.Is(fault.Conflict, err) || !errors.Is(err, identity.ErrVersionMismatch) {
			t.Errorf("stale version: %v", err)
		}
		// Without SetMembers the members stay.
		g.Version = 3
		if _, _, err := s.UpdateGroup(ctx, identity.GroupUpdate{Group: g}); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.CountGroupMembers(ctx, tn.ID, "g1"); n != 2 {
			t.Errorf("%d members after an update without members", n)
		}
		// A refused member refuses the whole update.
		other := mustCreateTenant(t, ctx, s, "GRPS000002")
		m := mustUser(t, ctx, s, other.ID, "m")
		g.Version, g.DisplayName = 4, "Changed"
		_, _, err = s.UpdateGroup(ctx, identity.GroupUpdate{Group: g, Members: []identity.ObjectID{m.ID}, SetMembers: true})
		wantKind(t, "foreign member", err, fault.Invalid)
		if got, _ := s.GetGroup(ctx, tn.ID, "g1"); got.DisplayName != "Sales EMEA" || got.Version != 3 {
			t.Errorf("a refused update changed the group: %+v", got)
		}
		_, _, err = s.UpdateGroup(ctx, identity.GroupUpdate{Group: newGroup(other.ID, "g1", "x")})
		wantKind(t, "update from another tenant", err, fault.NotFound)
	}},
	{"GroupDelete", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "GRPS000001")
		a := mustUser(t, ctx, s, tn.ID, "a")
		if err := s.CreateGroup(ctx, newGroup(tn.ID, "g1", "Sales"), []identity.ObjectID{a.ID}); err != nil {
			t.Fatal(err)
		}
		other := mustCreateTenant(t, ctx, s, "GRPS000002")
		wantKind(t, "delete from another tenant", s.DeleteGroup(ctx, other.ID, "g1", 0), fault.NotFound)
		if err := s.DeleteGroup(ctx, tn.ID, "g1", 7); !errors.Is(err, identity.ErrVersionMismatch) {
			t.Errorf("stale version: %v", err)
		}
		if err := s.DeleteGroup(ctx, tn.ID, "g1", 1); err != nil {
			t.Fatal(err)
		}
		if ug, _ := s.UserGroups(ctx, tn.ID, a.ID); len(ug) != 0 {
			t.Errorf("memberships left: %+v", ug)
		}
		wantKind(t, "delete twice", s.DeleteGroup(ctx, tn.ID, "g1", 0), fault.NotFound)
		// The name is free again.
		if err := s.CreateGroup(ctx, newGroup(tn.ID, "g2", "sales"), nil); err != nil {
			t.Error(err)
		}
	}},
	{"ListGroups", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "GRPS000001")
		other := mustCreateTenant(t, ctx, s, "GRPS000002")
		for i, name := range []string{"Beta", "alpha", "Gamma", "delta"} {
			g := newGroup(tn.ID, "g"+string(rune('1'+i)), name)
			g.CreatedAt = Epoch.Add(time.Duration(3-i) * time.Second)
			if i%2 == 0 {
				g.ExternalID = "ext-" + name
			}
			if err := s.CreateGroup(ctx, g, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateGroup(ctx, newGroup(other.ID, "o1", "Alpha"), nil); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name  string
			q     identity.GroupQuery
			want  []string
			total int
		}{
			{"all by id", identity.GroupQuery{Limit: 10}, []string{"g1", "g2", "g3", "g4"}, 4},
			{"by name, ignoring case", identity.GroupQuery{SortBy: "displayName", Limit: 10}, []string{"g2", "g1", "g4", "g3"}, 4},
			{"descending", identity.GroupQuery{SortBy: "displayName", Descending: true, Limit: 10}, []string{"g3", "g4", "g1", "g2"}, 4},
			{"by externalId, missing first", identity.GroupQuery{SortBy: "externalId", Limit: 10}, []string{"g2", "g4", "g1", "g3"}, 4},
			{"by created", identity.GroupQuery{SortBy: "meta.created", Limit: 10}, []string{"g4", "g3", "g2", "g1"}, 4},
			{"page", identity.GroupQuery{SortBy: "displayName", Offset: 1, Limit: 2}, []string{"g1", "g4"}, 4},
			{"count only", identity.GroupQuery{Limit: 0}, nil, 4},
			{"past the end", identity.GroupQuery{Offset: 9, Limit: 2}, nil, 4},
			{"displayName eq ignores case", identity.GroupQuery{Filter: groupFilter(t, `displayName eq "ALPHA"`), Limit: 10}, []string{"g2"}, 1},
			{"externalId is caseExact", identity.GroupQuery{Filter: groupFilter(t, `externalId eq "EXT-BETA"`), Limit: 10}, nil, 0},
			{"externalId", identity.GroupQuery{Filter: groupFilter(t, `externalId eq "ext-Beta"`), Limit: 10}, []string{"g1"}, 1},
			{"id", identity.GroupQuery{Filter: groupFilter(t, `id eq "g3"`), Limit: 10}, []string{"g3"}, 1},
			{"sw and not", identity.GroupQuery{Filter: groupFilter(t, `displayName sw "G" or not (externalId pr)`), Limit: 10}, []string{"g2", "g3", "g4"}, 3},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tt.q.TenantID = tn.ID
				got, total, err := s.ListGroups(ctx, tt.q)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.want, groupIDs(got)); d != "" || total != tt.total {
					t.Errorf("ids (-want +got):\n%s total %d, want %d", d, total, tt.total)
				}
				if got == nil {
					t.Error("nil page")
				}
			})
		}
		_, _, err := s.ListGroups(ctx, identity.GroupQuery{TenantID: tn.ID, SortBy: "members", Limit: 1})
		wantKind(t, "bad sortBy", err, fault.Invalid)
	}},
}
