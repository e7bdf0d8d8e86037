package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/identity"
)

var revocationTests = []test{
	{"RevocationsListSinceInAtOrder", func(t *testing.T, ctx context.Context, s Store) {
		rev := func(tenant, sub string, at time.Duration) identity.Revocation {
			return identity.Revocation{TenantID: tenant, Subject: sub, At: Epoch.Add(at), Until: Epoch.Add(at + time.Hour)}
		}
		if got, err := s.ListRevocations(ctx, time.Time{}); err != nil || len(got) != 0 {
			t.Fatalf("ListRevocations on empty store = %v, %v; want none", got, err)
		}
		// Stored out of At order; listed in At order.
		b := rev("t1", "client-b", 2*time.Second)
		a := rev("t1", "user-a", time.Second)
		c := rev("t2", "user-a", 3*time.Second)
		for _, r := range []identity.Revocation{b, a, c} {
			if err := s.RevokeSubject(ctx, r); err != nil {
				t.Fatalf("RevokeSubject(%+v): %v", r, err)
			}
		}
		// The same revocation again is not an error and not a second row.
		if err := s.RevokeSubject(ctx, a); err != nil {
			t.Fatalf("RevokeSubject again: %v", err)
		}
		got, err := s.ListRevocations(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]identity.Revocation{a, b, c}, got); d != "" {
			t.Fatalf("ListRevocations(zero) (-want +got):\n%s", d)
		}
		// since is exclusive: a row at exactly since is not listed.
		got, err = s.ListRevocations(ctx, a.At)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]identity.Revocation{b, c}, got); d != "" {
			t.Fatalf("ListRevocations(a.At) (-want +got):\n%s", d)
		}
		if got, err := s.ListRevocations(ctx, c.At); err != nil || len(got) != 0 {
			t.Fatalf("ListRevocations(last At) = %v, %v; want none", got, err)
		}
		// Another revocation of the same subject later is its own row.
		a2 := rev("t1", "user-a", 4*time.Second)
		if err := s.RevokeSubject(ctx, a2); err != nil {
			t.Fatal(err)
		}
		got, err = s.ListRevocations(ctx, c.At)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]identity.Revocation{a2}, got); d != "" {
			t.Fatalf("ListRevocations after a second revocation (-want +got):\n%s", d)
		}
	}},
	{"RevocationsPastUntilMayBeDropped", func(t *testing.T, ctx context.Context, s Store) {
		old := identity.Revocation{TenantID: "t1", Subject: "old", At: Epoch, Until: Epoch.Add(time.Minute)}
		live := identity.Revocation{TenantID: "t1", Subject: "live", At: Epoch.Add(30 * time.Second), Until: Epoch.Add(2 * time.Hour)}
		for _, r := range []identity.Revocation{old, live} {
			if err := s.RevokeSubject(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		// A revocation after old.Until: old may be gone, live must stay.
		later := identity.Revocation{TenantID: "t1", Subject: "later", At: Epoch.Add(time.Hour), Until: Epoch.Add(2 * time.Hour)}
		if err := s.RevokeSubject(ctx, later); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListRevocations(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 && got[0].Subject == "old" {
			got = got[1:]
		}
		if d := cmp.Diff([]identity.Revocation{live, later}, got); d != "" {
			t.Fatalf("ListRevocations (-want +got):\n%s", d)
		}
	}},
}
