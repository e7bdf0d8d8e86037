package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/scim"
)

func userFilter(t *testing.T, text string) filter.Expr {
	t.Helper()
	e, err := scim.CompileFilter(scim.Users, text)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func userNames(us []identity.User) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Name)
	}
	return out
}

var directoryTests = []test{
	{"UserNamesUniqueIgnoringCase", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "DIRS000001")
		mustUser(t, ctx, s, tn.ID, "Alice")
		err := s.CreateUser(ctx, identity.User{ID: identity.NewObjectID(), TenantID: tn.ID, Name: "ALICE", Roles: []string{}, CreatedAt: Epoch})
		wantKind(t, "a name that differs only by case", err, fault.Conflict)
		other := mustCreateTenant(t, ctx, s, "DIRS000002")
		mustUser(t, ctx, s, other.ID, "alice")
	}},
	{"UpdateUser", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "DIRS000001")
		u := mustUser(t, ctx, s, tn.ID, "bjensen")
		mustUser(t, ctx, s, tn.ID, "taken")
		next := u
		next.Name, next.Email, next.EmailVerified, next.DisplayName, next.GivenName, next.FamilyName = "Babs", "b@x.org", true, "Babs J", "Barbara", "Jensen"
		next.ExternalID, next.Inactive, next.Version, next.UpdatedAt = "ext-1", true, 2, Epoch.Add(time.Hour)
		next.Profile = json.RawMessage(`{"emails":[{"value":"b@x.org","primary":true}],"title":"Tour Guide"}`)
		next.Roles = []string{"tenant-admin"} // not written
		if err := s.UpdateUser(ctx, next, 0); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetUser(ctx, tn.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		next.Roles = u.Roles
		if d := cmp.Diff(next, got, cmp.Transformer("json", func(r json.RawMessage) string { return compactJSON(r) })); d != "" {
			t.Errorf("after UpdateUser (-want +got):\n%s", d)
		}
		stale := next
		stale.Version = 3
		if err := s.UpdateUser(ctx, stale, 1); !errors.Is(err, identity.ErrVersionMismatch) {
			t.Errorf("stale version: %v", err)
		}
		clash := next
		clash.Name = "TAKEN"
		wantKind(t, "a name of another user, ignoring case", s.UpdateUser(ctx, clash, 0), fault.Conflict)
		other := mustCreateTenant(t, ctx, s, "DIRS000002")
		foreign := next
		foreign.TenantID = other.ID
		wantKind(t, "update through another tenant", s.UpdateUser(ctx, foreign, 0), fault.NotFound)
		// Its own name in another case is fine.
		own := next
		own.Name = "BABS"
		if err := s.UpdateUser(ctx, own, 0); err != nil {
			t.Errorf("own name in another case: %v", err)
		}
	}},
	{"DeleteUserCascades", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "DIRS000001")
		u := mustUser(t, ctx, s, tn.ID, "leaver")
		if err := s.CreateGroup(ctx, newGroup(tn.ID, "g1", "Sales"), []identity.ObjectID{u.ID}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateRefreshToken(ctx, identity.RefreshToken{Hash: []byte("h1"), TenantID: tn.ID, UserID: u.ID, ExpiresAt: Epoch.Add(time.Hour), CreatedAt: Epoch}); err != nil {
			t.Fatal(err)
		}
		other := mustCreateTenant(t, ctx, s, "DIRS000002")
		wantKind(t, "delete through another tenant", s.DeleteUser(ctx, other.ID, u.ID, 0), fault.NotFound)
		if err := s.DeleteUser(ctx, tn.ID, u.ID, 7); !errors.Is(err, identity.ErrVersionMismatch) {
			t.Errorf("stale version: %v", err)
		}
		if err := s.DeleteUser(ctx, tn.ID, u.ID, 0); err != nil {
			t.Fatal(err)
		}
		_, err := s.GetUser(ctx, tn.ID, u.ID)
		wantKind(t, "deleted user", err, fault.NotFound)
		if n, _ := s.CountGroupMembers(ctx, tn.ID, "g1"); n != 0 {
			t.Errorf("%d memberships left", n)
		}
		_, err = s.UseRefreshToken(ctx, []byte("h1"), Epoch)
		wantKind(t, "the deleted user's refresh token", err, fault.NotFound)
		wantKind(t, "delete twice", s.DeleteUser(ctx, tn.ID, u.ID, 0), fault.NotFound)
	}},
	{"QueryUsers", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "DIRS000001")
		other := mustCreateTenant(t, ctx, s, "DIRS000002")
		mustUser(t, ctx, s, other.ID, "Ann")
		for i, u := range []identity.User{
			{Name: "Ann", DisplayName: "Ann A", FamilyName: "Zed", Email: "ann@x.org", ExternalID: "e-ann", Profile: json.RawMessage(`{"emails":[{"value":"ann@x.org","type":"work","primary":true}],"enterprise":{"employeeNumber":"7"}}`)},
			{Name: "bob", FamilyName: "Young", Email: "bob@y.org", Inactive: true, Profile: json.RawMessage(`{"emails":[{"value":"bob@y.org","type":"home"},{"value":"Bob@X.org","type":"work"}]}`)},
			{Name: "Cy", DisplayName: "", Email: ""},
		} {
			u.ID, u.TenantID, u.Roles, u.Version = identity.NewObjectID(), tn.ID, []string{}, 1
			u.CreatedAt = Epoch.Add(time.Duration(3-i) * time.Second)
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			name  string
			q     identity.UserQuery
			want  []string
			total int
		}{
			{"userName eq ignores case", identity.UserQuery{Filter: userFilter(t, `userName eq "ANN"`), Limit: 10}, []string{"Ann"}, 1},
			{"externalId is caseExact", identity.UserQuery{Filter: userFilter(t, `externalId eq "E-ANN"`), Limit: 10}, nil, 0},
			{"active", identity.UserQuery{Filter: userFilter(t, `active eq false`), Limit: 10}, []string{"bob"}, 1},
			{"value path over profile emails", identity.UserQuery{Filter: userFilter(t, `emails[type eq "work" and value ew "@x.org"]`), SortBy: "userName", Limit: 10}, []string{"Ann", "bob"}, 2},
			{"multi-valued emails", identity.UserQuery{Filter: userFilter(t, `emails co "Y.ORG"`), Limit: 10}, []string{"bob"}, 1},
			{"enterprise extension", identity.UserQuery{Filter: userFilter(t, `urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "7"`), Limit: 10}, []string{"Ann"}, 1},
			{"empty displayName is absent", identity.UserQuery{Filter: userFilter(t, `displayName pr`), Limit: 10}, []string{"Ann"}, 1},
			{"absent displayName is not \"\"", identity.UserQuery{Filter: userFilter(t, `displayName eq ""`), Limit: 10}, nil, 0},
			{"id", identity.UserQuery{Filter: userFilter(t, `id eq "AAAAAAAAAAAAAAAAAAAAAA"`), Limit: 10}, nil, 0},
			{"sort by userName ignoring case", identity.UserQuery{SortBy: "userName", Limit: 10}, []string{"Ann", "bob", "Cy"}, 3},
			{"sort by family name descending", identity.UserQuery{SortBy: "name.familyName", Descending: true, Limit: 10}, []string{"Ann", "bob", "Cy"}, 3},
			{"sort by created, paged", identity.UserQuery{SortBy: "meta.created", Offset: 1, Limit: 1}, []string{"bob"}, 3},
			{"sort by last modified", identity.UserQuery{SortBy: "meta.lastModified", Limit: 10}, []string{"Cy", "bob", "Ann"}, 3},
			{"count only", identity.UserQuery{SortBy: "emails"}, nil, 3},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tt.q.TenantID = tn.ID
				got, total, err := s.QueryUsers(ctx, tt.q)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.want, userNames(got)); d != "" || total != tt.total {
					t.Errorf("names (-want +got):\n%s total %d, want %d", d, total, tt.total)
				}
			})
		}
		_, _, err := s.QueryUsers(ctx, identity.UserQuery{TenantID: tn.ID, SortBy: "password", Limit: 1})
		wantKind(t, "bad sortBy", err, fault.Invalid)
		// The unfiltered total follows creates and deletes (SQLite keeps
		// it in a counter), per tenant.
		page, _, err := s.QueryUsers(ctx, identity.UserQuery{TenantID: tn.ID, SortBy: "userName", Limit: 1})
		if err != nil || len(page) != 1 {
			t.Fatalf("first user: %v %v", page, err)
		}
		if err := s.DeleteUser(ctx, tn.ID, page[0].ID, 0); err != nil {
			t.Fatal(err)
		}
		mustUser(t, ctx, s, other.ID, "Dee")
		for id, want := range map[string]int{tn.ID: 2, other.ID: 2} {
			if _, total, err := s.QueryUsers(ctx, identity.UserQuery{TenantID: id, Limit: 0}); err != nil || total != want {
				t.Errorf("tenant %s: total %d, want %d (%v)", id, total, want, err)
			}
		}
	}},
}

func compactJSON(r json.RawMessage) string {
	var v any
	if err := json.Unmarshal(r, &v); err != nil {
		return string(r)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
