package storetest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// newUser returns a user of tenant named name with an argon2id scheme.
func newUser(tenantID, name string) identity.User {
	return identity.User{ID: identity.NewObjectID(), TenantID: tenantID, Name: name, PasswordHash: "$argon2id$x",
		PasswordScheme: identity.SchemeArgon2id, Roles: []string{"user"}, CreatedAt: Epoch}
}

var userTests = []test{
	{"ImportUsersClashes", func(t *testing.T, ctx context.Context, s Store) {
		imp, ok := s.(identity.UserImporter)
		if !ok {
			t.Skip("the store has no bulk import")
		}
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		b := mustCreateTenant(t, ctx, s, "BBBBBBBBBB")
		bob := newUser(a.ID, "bob")
		bob.ExternalID = "ext-bob"
		if err := s.CreateUser(ctx, bob); err != nil {
			t.Fatal(err)
		}
		withExt := func(u identity.User, ext string) identity.User { u.ExternalID = ext; return u }
		for _, tc := range []struct {
			name             string
			creates, updates []identity.User
		}{
			{"name differing in case", []identity.User{newUser(a.ID, "BOB")}, nil},
			{"the same externalId", []identity.User{withExt(newUser(a.ID, "robert"), "ext-bob")}, nil},
			{"two lines of one batch", []identity.User{newUser(a.ID, "carol"), newUser(a.ID, "Carol")}, nil},
			{"an update of a user who is not there", []identity.User{newUser(a.ID, "dave")}, []identity.User{newUser(a.ID, "x")}},
		} {
			err := imp.ImportUsers(ctx, tc.creates, tc.updates, nil)
			if tc.updates != nil {
				// Not found, or (the SQL stores, which cannot tell) a
				// conflict: the line is retried alone either way.
				if !fault.Is(fault.NotFound, err) && !fault.Is(fault.Conflict, err) {
					t.Errorf("%s: err = %v, want not found or conflict", tc.name, err)
				}
			} else {
				wantKind(t, tc.name, err, fault.Conflict)
			}
			// All or nothing: no line of a refused batch was written.
			for _, u := range tc.creates {
				if _, err := s.GetUser(ctx, a.ID, u.ID); !fault.Is(fault.NotFound, err) {
					t.Errorf("%s: %s written by a refused batch (%v)", tc.name, u.Name, err)
				}
			}
		}
		// Renaming bob onto carol's name (carol created first) clashes.
		carol := newUser(a.ID, "carol")
		if err := imp.ImportUsers(ctx, []identity.User{carol}, nil, nil); err != nil {
			t.Fatal(err)
		}
		renamed := bob
		renamed.Name = "CAROL"
		wantKind(t, "an update onto another's name", imp.ImportUsers(ctx, nil, []identity.User{renamed}, nil), fault.Conflict)
		// An update of a user deleted since the lines were read is a
		// conflict too, and the batch writes nothing (the service retries
		// its lines one by one).
		gone := newUser(a.ID, "gone")
		dave := newUser(a.ID, "dave")
		wantKind(t, "an update of a deleted user", imp.ImportUsers(ctx, []identity.User{dave}, []identity.User{gone}, nil), fault.Conflict)
		if _, err := s.GetUserByName(ctx, a.ID, "dave"); !fault.Is(fault.NotFound, err) {
			t.Errorf("the refused batch created dave: %v", err)
		}
		// Keeping one's own name and externalId is no clash, and the same
		// name in another tenant is another user.
		bob.DisplayName = "Bob"
		if err := imp.ImportUsers(ctx, []identity.User{newUser(b.ID, "bob")}, []identity.User{bob}, nil); err != nil {
			t.Errorf("an update keeping its name, a create in another tenant: %v", err)
		}
	}},
	{"LookupImportUsers", func(t *testing.T, ctx context.Context, s Store) {
		look, ok := s.(identity.ImportLookup)
		if !ok {
			t.Skip("the store reads an import line by line")
		}
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		b := mustCreateTenant(t, ctx, s, "BBBBBBBBBB")
		var created []identity.User
		for i, spec := range []struct{ tenant, name, ext string }{
			{a.ID, "ann", "kc-1"}, {a.ID, "bob", ""}, {a.ID, "cid", "kc-3"}, {b.ID, "dee", "kc-1"}, {b.ID, "ann", ""},
		} {
			u := newUser(spec.tenant, spec.name)
			u.ExternalID = spec.ext
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatalf("user %d: %v", i, err)
			}
			created = append(created, u)
		}
		got, err := look.LookupImportUsers(ctx, a.ID, []string{"kc-1", "kc-9"}, []string{"bob", "zed", "ANN"})
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]int{}
		for _, u := range got {
			if u.TenantID != a.ID {
				t.Errorf("a user of another tenant: %+v", u)
			}
			names[u.Name]++
		}
		// ann by her externalId, bob by his name; names are exact (ANN
		// is not ann), and b's users are not a's.
		if len(names) != 2 || names["ann"] == 0 || names["bob"] == 0 {
			t.Errorf("LookupImportUsers found %v, want ann and bob", names)
		}
		if got, err := look.LookupImportUsers(ctx, a.ID, nil, nil); err != nil || len(got) != 0 {
			t.Errorf("empty lookup = %v, %v", got, err)
		}
	}},
	{"UserProfileRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		u := newUser(a.ID, "bob")
		u.Email, u.EmailVerified, u.DisplayName, u.GivenName, u.FamilyName = "bob@example.com", true, "Bob B.", "Bob", "Builder"
		u.ExternalID, u.Inactive = "kc-123", true
		u.PasswordHash, u.PasswordScheme = "$2b$10$abc", identity.SchemeBcrypt
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		for name, get := range map[string]func() (identity.User, error){
			"GetUser":             func() (identity.User, error) { return s.GetUser(ctx, a.ID, u.ID) },
			"GetUserByName":       func() (identity.User, error) { return s.GetUserByName(ctx, a.ID, "bob") },
			"GetUserByExternalID": func() (identity.User, error) { return s.GetUserByExternalID(ctx, a.ID, "kc-123") },
		} {
			got, err := get()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if d := cmp.Diff(u, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", name, d)
			}
		}
		// A user without a password nor an external id round-trips too.
		v := newUser(a.ID, "carol")
		v.PasswordHash, v.PasswordScheme = "", identity.SchemeNone
		if err := s.CreateUser(ctx, v); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetUser(ctx, a.ID, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(v, got); d != "" {
			t.Errorf("GetUser without password (-want +got):\n%s", d)
		}
		if !got.Active() {
			t.Error("a user created without Inactive reads as inactive")
		}
	}},
	{"UserExternalIDUniquePerTenant", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		b := mustCreateTenant(t, ctx, s, "BBBBBBBBBB")
		u := newUser(a.ID, "one")
		u.ExternalID = "ext-1"
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		dup := newUser(a.ID, "two")
		dup.ExternalID = "ext-1"
		wantKind(t, "same externalId in the tenant", s.CreateUser(ctx, dup), fault.Conflict)
		// Case counts: externalId is compared exactly.
		other := newUser(a.ID, "three")
		other.ExternalID = "EXT-1"
		if err := s.CreateUser(ctx, other); err != nil {
			t.Errorf("externalId differing in case: %v", err)
		}
		elsewhere := newUser(b.ID, "one")
		elsewhere.ExternalID = "ext-1"
		if err := s.CreateUser(ctx, elsewhere); err != nil {
			t.Errorf("same externalId in another tenant: %v", err)
		}
		// Many users without an external id.
		for i := range 3 {
			if err := s.CreateUser(ctx, newUser(a.ID, fmt.Sprintf("plain-%d", i))); err != nil {
				t.Errorf("user without externalId %d: %v", i, err)
			}
		}
		_, err := s.GetUserByExternalID(ctx, b.ID, "EXT-1")
		wantKind(t, "externalId of another tenant", err, fault.NotFound)
		_, err = s.GetUserByExternalID(ctx, a.ID, "")
		wantKind(t, "empty externalId", err, fault.NotFound)
	}},
	{"ListUsersAndSchemes", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		b := mustCreateTenant(t, ctx, s, "BBBBBBBBBB")
		var want []identity.User
		for i, name := range []string{"dora", "alice", "carl", "bert", "emma"} {
			u := newUser(a.ID, name)
			u.CreatedAt = Epoch.Add(time.Duration(-i) * time.Minute)
			if i%2 == 1 {
				u.PasswordHash, u.PasswordScheme = "$pbkdf2-sha256$i=27500,l=32$x$y", identity.SchemePBKDF2SHA256
			}
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
			want = append(want, u)
		}
		if err := s.CreateUser(ctx, newUser(b.ID, "zed")); err != nil {
			t.Fatal(err)
		}
		byName := map[string]identity.User{}
		for _, u := range want {
			byName[u.Name] = u
		}
		got, total, err := s.ListUsers(ctx, a.ID, identity.ListQuery{Skip: 1, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if total != 5 {
			t.Errorf("total = %d, want 5", total)
		}
		if d := cmp.Diff([]identity.User{byName["bert"], byName["carl"], byName["dora"]}, got); d != "" {
			t.Errorf("ListUsers page (-want +got):\n%s", d)
		}
		got, total, err = s.ListUsers(ctx, a.ID, identity.ListQuery{Limit: 10, Name: "emma"})
		if err != nil || total != 1 || len(got) != 1 || got[0].Name != "emma" {
			t.Errorf("ListUsers by name = %v, %d, %v", got, total, err)
		}
		got, total, err = s.ListUsers(ctx, a.ID, identity.ListQuery{Skip: 10, Limit: 10})
		if err != nil || total != 5 || got == nil || len(got) != 0 {
			t.Errorf("ListUsers past the end = %#v, %d, %v; want an empty page", got, total, err)
		}
		counts, err := s.CountPasswordSchemes(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(map[string]int{identity.SchemeArgon2id: 3, identity.SchemePBKDF2SHA256: 2}, counts); d != "" {
			t.Errorf("CountPasswordSchemes (-want +got):\n%s", d)
		}
		counts, err = s.CountPasswordSchemes(ctx, identity.NewGUID())
		if err != nil || len(counts) != 0 {
			t.Errorf("CountPasswordSchemes of no tenant = %v, %v", counts, err)
		}
	}},
	{"ListTenants", func(t *testing.T, ctx context.Context, s Store) {
		var want []identity.Tenant
		for i, code := range []string{"CCCCCCCCCC", "AAAAAAAAAA", "BBBBBBBBBB"} {
			tn := NewTenant(code)
			tn.CreatedAt = Epoch.Add(time.Duration(i) * time.Second)
			if err := s.CreateTenant(ctx, tn); err != nil {
				t.Fatal(err)
			}
			want = append(want, tn)
		}
		got, total, err := s.ListTenants(ctx, identity.ListQuery{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if total != 3 {
			t.Errorf("total = %d, want 3", total)
		}
		if d := cmp.Diff(want[:2], got); d != "" {
			t.Errorf("ListTenants (-want +got):\n%s", d)
		}
		got, total, err = s.ListTenants(ctx, identity.ListQuery{Limit: 10, Code: "BBBBBBBBBB"})
		if err != nil || total != 1 || len(got) != 1 || got[0].ID != want[2].ID {
			t.Errorf("ListTenants by code = %v, %d, %v", got, total, err)
		}
		got, total, err = s.ListTenants(ctx, identity.ListQuery{Limit: 10, Name: "Tenant AAAAAAAAAA", Code: "BBBBBBBBBB"})
		if err != nil || total != 0 || len(got) != 0 {
			t.Errorf("ListTenants by name and another's code = %v, %d, %v", got, total, err)
		}
	}},
	{"ListAndDeleteOAuthClients", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		b := mustCreateTenant(t, ctx, s, "BBBBBBBBBB")
		sum := sha256.Sum256([]byte("secret"))
		var want []identity.OAuthClient
		for i := range 3 {
			c := identity.OAuthClient{ID: fmt.Sprintf("lkc_%d", i), TenantID: a.ID, Name: fmt.Sprintf("robot %d", i), SecretHash: sum[:],
				Scopes: []string{"audit:export"}, Role: "tenant-admin", CreatedAt: Epoch.Add(time.Duration(i) * time.Second), Type: identity.ClientConfidential}
			if err := s.CreateOAuthClient(ctx, c); err != nil {
				t.Fatal(err)
			}
			want = append(want, c)
		}
		other := identity.OAuthClient{ID: "lkc_b", TenantID: b.ID, Name: "other", SecretHash: sum[:], Scopes: []string{}, CreatedAt: Epoch, Type: identity.ClientConfidential}
		if err := s.CreateOAuthClient(ctx, other); err != nil {
			t.Fatal(err)
		}
		got, total, err := s.ListOAuthClients(ctx, a.ID, identity.ListQuery{Skip: 1, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if total != 3 {
			t.Errorf("total = %d, want 3", total)
		}
		if d := cmp.Diff(want[1:], got); d != "" {
			t.Errorf("ListOAuthClients (-want +got):\n%s", d)
		}
		wantKind(t, "delete another tenant's client", s.DeleteOAuthClient(ctx, a.ID, "lkc_b"), fault.NotFound)
		if err := s.DeleteOAuthClient(ctx, a.ID, "lkc_1"); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetOAuthClient(ctx, "lkc_1")
		wantKind(t, "deleted client", err, fault.NotFound)
		wantKind(t, "delete twice", s.DeleteOAuthClient(ctx, a.ID, "lkc_1"), fault.NotFound)
		if _, err := s.GetOAuthClient(ctx, "lkc_b"); err != nil {
			t.Errorf("the other tenant's client: %v", err)
		}
	}},
}
