package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/vault"
)

// NewVaultKey returns a vault key for tests, without generating material.
func NewVaultKey(tenantID, name string, created time.Time) vault.Key {
	return vault.Key{
		ID: identity.NewGUID(), TenantID: tenantID, Name: name, Algorithm: vault.AlgorithmEC, Size: 256, Curve: vault.CurveP256,
		UsageMask: vault.UsageMaskFor(vault.AlgorithmEC), State: vault.StateActive, CreatedAt: created, UpdatedAt: created,
		ObjectType: vault.ObjectTypePrivateKey, Unexportable: true, Material: []byte("sealed " + name),
	}
}

var vaultTests = []test{
	{"VaultKeyRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		k := NewVaultKey(a, "signing", Epoch)
		aes := vault.Key{ID: identity.NewGUID(), TenantID: a, Name: "wrap", Algorithm: vault.AlgorithmAES, Size: 256,
			UsageMask: vault.UsageMaskFor(vault.AlgorithmAES), State: vault.StateActive, Version: 0, CreatedAt: Epoch, UpdatedAt: Epoch.Add(time.Second),
			ObjectType: vault.ObjectTypeSymmetricKey, Material: []byte{0, 1, 2}}
		for _, key := range []vault.Key{k, aes} {
			if err := s.CreateKey(ctx, key); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range []vault.Key{k, aes} {
			got, err := s.GetKey(ctx, a, want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d := gocmp.Diff(want, got); d != "" {
				t.Errorf("GetKey (-want +got):\n%s", d)
			}
		}
		dupName := NewVaultKey(a, "signing", Epoch)
		wantKind(t, "duplicate name", s.CreateKey(ctx, dupName), fault.Conflict)
		dupID := NewVaultKey(a, "other", Epoch)
		dupID.ID = k.ID
		wantKind(t, "duplicate id", s.CreateKey(ctx, dupID), fault.Conflict)
		// Tenant isolation: another tenant sees nothing and may reuse names.
		_, err := s.GetKey(ctx, b, k.ID)
		wantKind(t, "GetKey other tenant", err, fault.NotFound)
		wantKind(t, "DeleteKey other tenant", s.DeleteKey(ctx, b, k.ID), fault.NotFound)
		if keys, total, err := s.ListKeys(ctx, b, vault.ListQuery{Limit: 10}); err != nil || total != 0 || len(keys) != 0 {
			t.Errorf("ListKeys other tenant = %d keys, total %d, %v", len(keys), total, err)
		}
		if err := s.CreateKey(ctx, NewVaultKey(b, "signing", Epoch)); err != nil {
			t.Errorf("same name in another tenant: %v", err)
		}
		if err := s.DeleteKey(ctx, a, k.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetKey(ctx, a, k.ID)
		wantKind(t, "GetKey deleted", err, fault.NotFound)
		wantKind(t, "DeleteKey twice", s.DeleteKey(ctx, a, k.ID), fault.NotFound)
		if err := s.CreateKey(ctx, NewVaultKey(a, "signing", Epoch)); err != nil {
			t.Errorf("name reuse after delete: %v", err)
		}
	}},
	{"VaultKeyPaging", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		var all []vault.Key
		for i := range 7 {
			// Two keys share each creation time, so the id breaks ties.
			k := NewVaultKey(a, fmt.Sprintf("k%d", i), Epoch.Add(time.Duration(i/2)*time.Second))
			if err := s.CreateKey(ctx, k); err != nil {
				t.Fatal(err)
			}
			all = append(all, k)
		}
		sortKeys(all)
		if err := s.CreateKey(ctx, NewVaultKey(identity.NewGUID(), "k0", Epoch)); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name      string
			q         vault.ListQuery
			want      []vault.Key
			wantTotal int
		}{
			{"first page", vault.ListQuery{Limit: 3}, all[:3], 7},
			{"middle page", vault.ListQuery{Skip: 3, Limit: 3}, all[3:6], 7},
			{"last page", vault.ListQuery{Skip: 6, Limit: 3}, all[6:], 7},
			{"past the end", vault.ListQuery{Skip: 10, Limit: 3}, []vault.Key{}, 7},
			{"by name", vault.ListQuery{Limit: 10, Name: "k4"}, []vault.Key{byName(all, "k4")}, 1},
			{"unknown name", vault.ListQuery{Limit: 10, Name: "nope"}, []vault.Key{}, 0},
		}
		for _, tt := range tests {
			got, total, err := s.ListKeys(ctx, a, tt.q)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if total != tt.wantTotal {
				t.Errorf("%s: total = %d, want %d", tt.name, total, tt.wantTotal)
			}
			if d := gocmp.Diff(tt.want, got); d != "" {
				t.Errorf("%s: ListKeys (-want +got):\n%s", tt.name, d)
			}
		}
	}},
}

func sortKeys(ks []vault.Key) {
	slices.SortFunc(ks, func(a, b vault.Key) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
}

func byName(ks []vault.Key, name string) vault.Key {
	for _, k := range ks {
		if k.Name == name {
			return k
		}
	}
	panic("no key " + name)
}
