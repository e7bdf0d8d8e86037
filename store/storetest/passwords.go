package storetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var passwordTests = []test{
	{"UpdatePasswordHashIsCompareAndSwap", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		b := mustCreateTenant(t, ctx, s, "BBBBBBBBBB")
		u := newUser(a.ID, "ann")
		u.PasswordHash, u.PasswordScheme = "$2b$10$old", identity.SchemeBcrypt
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "stale old hash", s.UpdatePasswordHash(ctx, a.ID, u.ID, "$2b$10$other", "$argon2id$new", identity.SchemeArgon2id), fault.Conflict)
		wantKind(t, "another tenant", s.UpdatePasswordHash(ctx, b.ID, u.ID, u.PasswordHash, "$argon2id$new", identity.SchemeArgon2id), fault.NotFound)
		wantKind(t, "unknown user", s.UpdatePasswordHash(ctx, a.ID, identity.NewObjectID(), u.PasswordHash, "$argon2id$new", identity.SchemeArgon2id), fault.NotFound)
		if err := s.UpdatePasswordHash(ctx, a.ID, u.ID, u.PasswordHash, "$argon2id$new", identity.SchemeArgon2id); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetUser(ctx, a.ID, u.ID)
		if err != nil || got.PasswordHash != "$argon2id$new" || got.PasswordScheme != identity.SchemeArgon2id {
			t.Errorf("after the swap: %+v, %v", got, err)
		}
		// The second swap from the same old hash loses.
		wantKind(t, "second swap", s.UpdatePasswordHash(ctx, a.ID, u.ID, u.PasswordHash, "$argon2id$newer", identity.SchemeArgon2id), fault.Conflict)
	}},
	{"PasswordHashKeys", func(t *testing.T, ctx context.Context, s Store) {
		a := mustCreateTenant(t, ctx, s, "AAAAAAAAAA")
		b := mustCreateTenant(t, ctx, s, "BBBBBBBBBB")
		k := identity.PasswordHashKey{TenantID: a.ID, Name: "default", Algorithm: identity.SchemeFirebaseScrypt, SealedSignerKey: []byte("sealed"),
			SaltSeparator: []byte{7}, Rounds: 8, MemCost: 14, CreatedAt: Epoch}
		if err := s.PutPasswordHashKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetPasswordHashKey(ctx, a.ID, "default")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(k, got); d != "" {
			t.Errorf("GetPasswordHashKey (-want +got):\n%s", d)
		}
		_, err = s.GetPasswordHashKey(ctx, b.ID, "default")
		wantKind(t, "another tenant's key", err, fault.NotFound)
		k.Rounds, k.SaltSeparator = 7, nil
		if err := s.PutPasswordHashKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		k2 := k
		k2.Name = "b-second"
		if err := s.PutPasswordHashKey(ctx, k2); err != nil {
			t.Fatal(err)
		}
		list, err := s.ListPasswordHashKeys(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]identity.PasswordHashKey{k2, k}, list); d != "" {
			t.Errorf("ListPasswordHashKeys after replace (-want +got):\n%s", d)
		}
		if list, err := s.ListPasswordHashKeys(ctx, b.ID); err != nil || list == nil || len(list) != 0 {
			t.Errorf("another tenant's list = %#v, %v", list, err)
		}
		wantKind(t, "delete in another tenant", s.DeletePasswordHashKey(ctx, b.ID, "default"), fault.NotFound)
		if err := s.DeletePasswordHashKey(ctx, a.ID, "default"); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetPasswordHashKey(ctx, a.ID, "default")
		wantKind(t, "deleted key", err, fault.NotFound)
	}},
}
