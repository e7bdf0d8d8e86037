package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/vault"
)

// NewVaultKey returns a vault key for tests, without generating material.
func NewVaultKey(tenantID, name string, created time.Time) vault.Key {
	return vault.Key{
		ID: identity.NewGUID(), TenantID: tenantID, Name: name, Algorithm: vault.AlgorithmEC, Size: 256, Curve: vault.CurveP256,
		UsageMask: vault.UsageMaskFor(vault.AlgorithmEC), State: vault.StateActive, CreatedAt: created, UpdatedAt: created,
		ObjectType: vault.ObjectTypePrivateKey, Unexportable: true, Origin: vault.OriginGenerated, ActivationDate: &created,
	}
}

// NewVaultVersion returns version n of k for tests, with fake sealed
// material and public key.
func NewVaultVersion(k vault.Key, n int, created time.Time) vault.Version {
	return vault.Version{TenantID: k.TenantID, KeyID: k.ID, Version: n, CreatedAt: created, ActivationDate: created,
		Material: []byte(fmt.Sprintf("sealed %s v%d", k.Name, n)), Public: []byte(fmt.Sprintf("spki %s v%d", k.Name, n)), KID: fmt.Sprintf("kid%d", n)}
}

func at(t time.Time) *time.Time { return &t }

var vaultTests = []test{
	{"VaultKeyRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		k := NewVaultKey(a, "signing", Epoch)
		// Every field a store keeps, set.
		full := vault.Key{ID: identity.NewGUID(), TenantID: a, Name: "wrap", Algorithm: vault.AlgorithmHMAC, Size: 512, Hash: vault.HashSHA512,
			UsageMask: vault.UsageMACGenerate, State: vault.StatePreActive, Version: 2, LatestVersion: 3, MinDecryptionVersion: 1,
			MinEncryptionVersion: 2, MinAvailableVersion: 1, CreatedAt: Epoch, UpdatedAt: Epoch.Add(time.Second),
			ObjectType: vault.ObjectTypeSymmetricKey, Undeletable: true, Origin: vault.OriginImported,
			ActivationDate: at(Epoch.Add(time.Hour)), DeactivationDate: at(Epoch.Add(2 * time.Hour)), CompromiseDate: at(Epoch.Add(3 * time.Hour)),
			DestroyDate: at(Epoch.Add(4 * time.Hour)), AutoRotatePeriodSeconds: 3600, NextRotationAt: at(Epoch.Add(5 * time.Hour)),
			NextEventAt: at(Epoch.Add(time.Hour)), Grants: []vault.Grant{{Principal: "client:c1", Operations: []string{"encrypt", "decrypt"}}},
			Pending: []vault.PendingVersion{{Version: 3, At: Epoch.Add(6 * time.Hour)}}, Revision: 0}
		for _, key := range []vault.Key{k, full} {
			if err := s.CreateKey(ctx, vault.KeyCreate{Key: key, Versions: []vault.Version{NewVaultVersion(key, 0, Epoch)}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range []vault.Key{k, full} {
			got, err := s.GetKey(ctx, a, want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d := gocmp.Diff(want, got); d != "" {
				t.Errorf("GetKey (-want +got):\n%s", d)
			}
			got, err = s.GetKeyByName(ctx, a, want.Name)
			if err != nil || got.ID != want.ID {
				t.Errorf("GetKeyByName(%q) = %v, %v", want.Name, got.ID, err)
			}
		}
		dupName := NewVaultKey(a, "signing", Epoch)
		wantKind(t, "duplicate name", s.CreateKey(ctx, vault.KeyCreate{Key: dupName, Versions: []vault.Version{NewVaultVersion(dupName, 0, Epoch)}}), fault.Conflict)
		dupID := NewVaultKey(a, "other", Epoch)
		dupID.ID = k.ID
		wantKind(t, "duplicate id", s.CreateKey(ctx, vault.KeyCreate{Key: dupID, Versions: []vault.Version{NewVaultVersion(dupID, 0, Epoch)}}), fault.Conflict)
		if _, err := s.GetKey(ctx, a, dupID.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetKeyByName(ctx, a, "other"); !fault.Is(fault.NotFound, err) {
			t.Errorf("a refused create left its key: %v", err)
		}
		// Tenant isolation: another tenant sees nothing and may reuse names.
		_, err := s.GetKey(ctx, b, k.ID)
		wantKind(t, "GetKey other tenant", err, fault.NotFound)
		_, err = s.GetKeyByName(ctx, b, "signing")
		wantKind(t, "GetKeyByName other tenant", err, fault.NotFound)
		_, err = s.ListKeyVersions(ctx, b, k.ID)
		wantKind(t, "ListKeyVersions other tenant", err, fault.NotFound)
		_, err = s.GetKeyVersion(ctx, b, k.ID, 0)
		wantKind(t, "GetKeyVersion other tenant", err, fault.NotFound)
		wantKind(t, "DeleteKey other tenant", s.DeleteKey(ctx, b, k.ID), fault.NotFound)
		if keys, total, err := s.ListKeys(ctx, b, vault.ListQuery{Limit: 10}); err != nil || total != 0 || len(keys) != 0 {
			t.Errorf("ListKeys other tenant = %d keys, total %d, %v", len(keys), total, err)
		}
		kb := NewVaultKey(b, "signing", Epoch)
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: kb, Versions: []vault.Version{NewVaultVersion(kb, 0, Epoch)}}); err != nil {
			t.Errorf("same name in another tenant: %v", err)
		}
		if err := s.DeleteKey(ctx, a, k.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetKey(ctx, a, k.ID)
		wantKind(t, "GetKey deleted", err, fault.NotFound)
		_, err = s.GetKeyVersion(ctx, a, k.ID, 0)
		wantKind(t, "GetKeyVersion of a deleted key", err, fault.NotFound)
		wantKind(t, "DeleteKey twice", s.DeleteKey(ctx, a, k.ID), fault.NotFound)
		again := NewVaultKey(a, "signing", Epoch)
		again.ID = k.ID // the id too: the deleted key's versions are gone
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: again, Versions: []vault.Version{NewVaultVersion(again, 0, Epoch)}}); err != nil {
			t.Errorf("name and id reuse after delete: %v", err)
		}
		if vs, err := s.ListKeyVersions(ctx, a, k.ID); err != nil || len(vs) != 1 {
			t.Errorf("versions of the key made again: %d, %v", len(vs), err)
		}
	}},
	{"VaultKeyPaging", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		var all []vault.Key
		for i := range 7 {
			// Two keys share each creation time, so the id breaks ties.
			k := NewVaultKey(a, fmt.Sprintf("k%d", i), Epoch.Add(time.Duration(i/2)*time.Second))
			if i%3 == 0 {
				k.Algorithm, k.State = vault.AlgorithmAES, vault.StateDeactivated
			}
			if err := s.CreateKey(ctx, vault.KeyCreate{Key: k, Versions: []vault.Version{NewVaultVersion(k, 0, Epoch)}}); err != nil {
				t.Fatal(err)
			}
			all = append(all, k)
		}
		sortKeys(all)
		other := NewVaultKey(identity.NewGUID(), "k0", Epoch)
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: other, Versions: []vault.Version{NewVaultVersion(other, 0, Epoch)}}); err != nil {
			t.Fatal(err)
		}
		// A key of the platform's own purpose is never listed.
		wrapping := NewVaultKey(a, "", Epoch)
		wrapping.Purpose = vault.PurposeWrapping
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: wrapping, Versions: []vault.Version{NewVaultVersion(wrapping, 0, Epoch)}}); err != nil {
			t.Fatal(err)
		}
		var aes, deactivated []vault.Key
		for _, k := range all {
			if k.Algorithm == vault.AlgorithmAES {
				aes = append(aes, k)
			}
			if k.State == vault.StateDeactivated {
				deactivated = append(deactivated, k)
			}
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
			{"by algorithm", vault.ListQuery{Limit: 10, Algorithm: vault.AlgorithmAES}, aes, 3},
			{"by state", vault.ListQuery{Limit: 10, State: vault.StateDeactivated}, deactivated, 3},
			{"by algorithm and state", vault.ListQuery{Limit: 10, Algorithm: vault.AlgorithmEC, State: vault.StateDeactivated}, []vault.Key{}, 0},
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
	{"VaultKeyUpdateCompareAndSet", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		k := NewVaultKey(a, "rotating", Epoch)
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: k, Versions: []vault.Version{NewVaultVersion(k, 0, Epoch)}}); err != nil {
			t.Fatal(err)
		}
		clash := NewVaultKey(a, "taken", Epoch)
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: clash, Versions: []vault.Version{NewVaultVersion(clash, 0, Epoch)}}); err != nil {
			t.Fatal(err)
		}
		// Rotate: version 1 added, latest moved, in one write.
		k.LatestVersion, k.Version, k.UpdatedAt = 1, 1, Epoch.Add(time.Minute)
		k.MinDecryptionVersion, k.Grants = 1, []vault.Grant{{Principal: "role:tenant-admin", Operations: []string{"sign"}}}
		k.NextEventAt = at(Epoch.Add(time.Hour))
		v1 := NewVaultVersion(k, 1, Epoch.Add(time.Minute))
		if err := s.UpdateKey(ctx, vault.KeyUpdate{Key: k, Add: &v1}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetKey(ctx, a, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := k
		want.Revision = 1
		if d := gocmp.Diff(want, got); d != "" {
			t.Errorf("after UpdateKey (-want +got):\n%s", d)
		}
		// A writer that read revision 0 is refused: the compare-and-set.
		stale := k
		stale.Name = "lost"
		v1again := NewVaultVersion(k, 1, Epoch)
		err = s.UpdateKey(ctx, vault.KeyUpdate{Key: stale, Add: &v1again})
		if !fault.Is(fault.Conflict, err) || !errors.Is(err, vault.ErrChanged) {
			t.Errorf("stale UpdateKey = %v, want Conflict matching ErrChanged", err)
		}
		if got, _ := s.GetKey(ctx, a, k.ID); got.Name != "rotating" || got.Revision != 1 {
			t.Errorf("a refused update changed the key: %+v", got)
		}
		// A rename onto another key's name is a Conflict, not ErrChanged.
		rename := got
		rename.Name = "taken"
		if err := s.UpdateKey(ctx, vault.KeyUpdate{Key: rename}); !fault.Is(fault.Conflict, err) || errors.Is(err, vault.ErrChanged) {
			t.Errorf("rename onto a taken name = %v", err)
		}
		gone := NewVaultKey(a, "gone", Epoch)
		wantKind(t, "UpdateKey of a missing key", s.UpdateKey(ctx, vault.KeyUpdate{Key: gone}), fault.NotFound)
		// Add versions 2 and 3, then trim below 2 and destroy.
		cur := got
		for n := 2; n <= 3; n++ {
			cur.LatestVersion = n
			v := NewVaultVersion(cur, n, Epoch.Add(time.Duration(n)*time.Minute))
			if err := s.UpdateKey(ctx, vault.KeyUpdate{Key: cur, Add: &v}); err != nil {
				t.Fatal(err)
			}
			cur.Revision++
		}
		cur.MinAvailableVersion = 2
		if err := s.UpdateKey(ctx, vault.KeyUpdate{Key: cur, EraseBelow: 2}); err != nil {
			t.Fatal(err)
		}
		cur.Revision++
		vs, err := s.ListKeyVersions(ctx, a, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		var erased []int
		for i, v := range vs {
			if v.Version != i {
				t.Fatalf("versions out of order: %v", vs)
			}
			if v.Material == nil {
				erased = append(erased, v.Version)
			}
			if v.Public == nil || v.KID == "" {
				t.Errorf("version %d lost its public key or kid", v.Version)
			}
		}
		if d := gocmp.Diff([]int{0, 1}, erased); d != "" {
			t.Errorf("erased after trim (-want +got):\n%s", d)
		}
		if err := s.UpdateKey(ctx, vault.KeyUpdate{Key: cur, EraseAll: true}); err != nil {
			t.Fatal(err)
		}
		vs, _ = s.ListKeyVersions(ctx, a, k.ID)
		for _, v := range vs {
			if v.Material != nil {
				t.Errorf("version %d kept material after destroy", v.Version)
			}
		}
		// The lease is the claim's, never UpdateKey's.
		if _, err := s.ClaimKeys(ctx, "owner-1", Epoch.Add(2*time.Hour), time.Minute, 10); err != nil {
			t.Fatal(err)
		}
		cur.Revision++
		if err := s.UpdateKey(ctx, vault.KeyUpdate{Key: cur}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetKey(ctx, a, k.ID); got.LeaseOwner != "owner-1" {
			t.Errorf("UpdateKey changed the lease: %q", got.LeaseOwner)
		}
	}},
	{"VaultKeyUpdateAudited", func(t *testing.T, ctx context.Context, s Store) {
		// An update's records are appended with it, or not at all when the
		// compare-and-set refuses it: a rotation is never stored without
		// its record, nor its record without it.
		a, auditTenant := identity.NewGUID(), identity.NewGUID()
		k := NewVaultKey(a, "auto", Epoch)
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: k, Versions: []vault.Version{NewVaultVersion(k, 0, Epoch)}}); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendAuditRecords(ctx, []*audit.Record{NewRecord(a, 1)}); err != nil {
			t.Fatal(err)
		}
		stale := k
		k.LatestVersion, k.Version = 1, 1
		v1 := NewVaultVersion(k, 1, Epoch.Add(time.Minute))
		recs := []*audit.Record{NewRecord(a, 2), NewRecord(auditTenant, 3)}
		if err := s.UpdateKey(ctx, vault.KeyUpdate{Key: k, Add: &v1, Audit: recs}); err != nil {
			t.Fatal(err)
		}
		stale.Name = "lost"
		err := s.UpdateKey(ctx, vault.KeyUpdate{Key: stale, Audit: []*audit.Record{NewRecord(a, 4), NewRecord(auditTenant, 5)}})
		if !errors.Is(err, vault.ErrChanged) {
			t.Fatalf("stale UpdateKey = %v, want ErrChanged", err)
		}
		for tenant, want := range map[string][]string{a: {"trace-1", "trace-2"}, auditTenant: {"trace-3"}} {
			if d := gocmp.Diff(want, ChainTraces(t, ctx, s, tenant)); d != "" {
				t.Errorf("tenant %s's records (-want +got):\n%s", tenant, d)
			}
		}
		if vs, _ := s.ListKeyVersions(ctx, a, k.ID); len(vs) != 2 {
			t.Errorf("versions after the audited rotation: %d, want 2", len(vs))
		}
	}},
	{"VaultKeyCreateAudited", func(t *testing.T, ctx context.Context, s Store) {
		// A key is created with all its versions and its records, or, on
		// a duplicate, with none of them.
		a := identity.NewGUID()
		k := NewVaultKey(a, "migrated", Epoch)
		k.Version, k.LatestVersion = 2, 2
		var vs []vault.Version
		for n := range 3 {
			vs = append(vs, NewVaultVersion(k, n, Epoch.Add(time.Duration(n)*time.Hour)))
		}
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: k, Versions: vs, Audit: []*audit.Record{NewRecord(a, 1)}}); err != nil {
			t.Fatal(err)
		}
		dup := NewVaultKey(a, "migrated", Epoch)
		err := s.CreateKey(ctx, vault.KeyCreate{Key: dup, Versions: []vault.Version{NewVaultVersion(dup, 0, Epoch)}, Audit: []*audit.Record{NewRecord(a, 2)}})
		wantKind(t, "duplicate name", err, fault.Conflict)
		got, err := s.ListKeyVersions(ctx, a, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		var ns []int
		for _, v := range got {
			ns = append(ns, v.Version)
		}
		if d := gocmp.Diff([]int{0, 1, 2}, ns); d != "" {
			t.Errorf("versions (-want +got):\n%s", d)
		}
		if _, err := s.ListKeyVersions(ctx, a, dup.ID); !fault.Is(fault.NotFound, err) {
			t.Errorf("the refused key's versions: %v, want NotFound", err)
		}
		recs, err := s.ListAuditRecords(ctx, a, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		CheckChain(t, recs)
		if len(recs) != 1 || recs[0].TraceID != "trace-1" {
			t.Errorf("records: %+v, want only the created key's", recs)
		}
	}},
	{"VaultKeyVersions", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		k := NewVaultKey(a, "versions", Epoch)
		v0 := NewVaultVersion(k, 0, Epoch)
		v0.Public, v0.KID = nil, "" // a version stored before versions had public keys
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: k, Versions: []vault.Version{v0}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetKeyVersion(ctx, a, k.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(v0, got); d != "" {
			t.Errorf("GetKeyVersion (-want +got):\n%s", d)
		}
		_, err = s.GetKeyVersion(ctx, a, k.ID, 1)
		wantKind(t, "GetKeyVersion of a missing version", err, fault.NotFound)
		if err := s.SetKeyVersionPublic(ctx, a, k.ID, 0, []byte("spki"), "abcd"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetKeyVersionPublic(ctx, a, k.ID, 0, []byte("other"), "ffff"); err != nil {
			t.Fatal(err)
		}
		got, _ = s.GetKeyVersion(ctx, a, k.ID, 0)
		if string(got.Public) != "spki" || got.KID != "abcd" {
			t.Errorf("public key after two SetKeyVersionPublic = %q %q, want the first", got.Public, got.KID)
		}
		for i, want := range []int64{5, 12} {
			n, err := s.AddKeyEncryptions(ctx, a, k.ID, 0, int64(5+2*i))
			if err != nil || n != want {
				t.Errorf("AddKeyEncryptions = %d, %v; want %d", n, err, want)
			}
		}
		_, err = s.AddKeyEncryptions(ctx, a, k.ID, 7, 1)
		wantKind(t, "AddKeyEncryptions of a missing version", err, fault.NotFound)
		if got, _ := s.GetKeyVersion(ctx, a, k.ID, 0); got.Encryptions != 12 {
			t.Errorf("Encryptions = %d", got.Encryptions)
		}
	}},
	{"VaultKeyClaims", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		mk := func(name string, next *time.Time) vault.Key {
			k := NewVaultKey(a, name, Epoch)
			k.NextEventAt = next
			if err := s.CreateKey(ctx, vault.KeyCreate{Key: k, Versions: []vault.Version{NewVaultVersion(k, 0, Epoch)}}); err != nil {
				t.Fatal(err)
			}
			return k
		}
		due1 := mk("due1", at(Epoch.Add(-time.Minute)))
		due2 := mk("due2", at(Epoch))
		mk("later", at(Epoch.Add(time.Hour)))
		mk("never", nil)
		names := func(ks []vault.Key) []string {
			var out []string
			for _, k := range ks {
				out = append(out, k.Name)
			}
			slices.Sort(out)
			return out
		}
		got, err := s.ClaimKeys(ctx, "A", Epoch, 2*time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff([]string{"due1", "due2"}, names(got)); d != "" {
			t.Errorf("A's claim (-want +got):\n%s", d)
		}
		for _, k := range got {
			if k.LeaseOwner != "A" || !k.LeaseUntil.Equal(Epoch.Add(2*time.Minute)) {
				t.Errorf("claimed key %s: lease %q until %v", k.Name, k.LeaseOwner, k.LeaseUntil)
			}
		}
		// Held by A: B gets nothing until the lease lapses; A renews its own.
		if got, _ := s.ClaimKeys(ctx, "B", Epoch.Add(time.Minute), 2*time.Minute, 10); len(got) != 0 {
			t.Errorf("B claimed %v while A held them", names(got))
		}
		if got, _ := s.ClaimKeys(ctx, "A", Epoch.Add(time.Minute), 2*time.Minute, 1); len(got) != 1 {
			t.Errorf("A's renewal (limit 1) = %v", names(got))
		}
		if err := s.ReleaseKey(ctx, a, due1.ID, "B"); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseKey(ctx, a, due2.ID, "A"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ClaimKeys(ctx, "B", Epoch.Add(time.Minute), 2*time.Minute, 10); fmt.Sprint(names(got)) != "[due2]" {
			t.Errorf("B's claim after A released due2 (B's release of due1 does nothing) = %v", names(got))
		}
		// due1's lease lapses at Epoch+3m (renewed at +1m).
		if got, _ := s.ClaimKeys(ctx, "B", Epoch.Add(3*time.Minute), 2*time.Minute, 10); fmt.Sprint(names(got)) != "[due1 due2]" {
			t.Errorf("B's claim once A's lease lapsed = %v", names(got))
		}
		if got, _ := s.ClaimKeys(ctx, "C", Epoch.Add(4*time.Minute), time.Minute, 10); len(got) != 0 {
			t.Errorf("C's claim at +4m = %v (due1 and due2 are B's until +5m, later is not due)", names(got))
		}
		if got, _ := s.ClaimKeys(ctx, "C", Epoch.Add(2*time.Hour), time.Minute, 10); fmt.Sprint(names(got)) != "[due1 due2 later]" {
			t.Errorf("C's claim at +2h = %v", names(got))
		}
	}},
	{"VaultConcurrentRotationsEachAddOneVersion", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		k := NewVaultKey(a, "contended", Epoch)
		if err := s.CreateKey(ctx, vault.KeyCreate{Key: k, Versions: []vault.Version{NewVaultVersion(k, 0, Epoch)}}); err != nil {
			t.Fatal(err)
		}
		// Each writer does what vault.Service.rotate does: read, add
		// latest+1 over the revision read with its audit record, and again
		// on ErrChanged; meanwhile other appends go to the same chain, as
		// requests' records do.
		const writers, each, appends = 4, 5, 20
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range appends {
				if err := s.AppendAuditRecords(ctx, []*audit.Record{NewRecord(a, 1000+i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					for {
						cur, err := s.GetKey(ctx, a, k.ID)
						if err != nil {
							t.Error(err)
							return
						}
						cur.LatestVersion++
						cur.Version = cur.LatestVersion
						v := NewVaultVersion(cur, cur.LatestVersion, Epoch)
						rec := NewRecord(a, w*each+i)
						err = s.UpdateKey(ctx, vault.KeyUpdate{Key: cur, Add: &v, Audit: []*audit.Record{rec}})
						if errors.Is(err, vault.ErrChanged) {
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						break
					}
				}
			})
		}
		wg.Wait()
		got, err := s.GetKey(ctx, a, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := s.ListKeyVersions(ctx, a, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.LatestVersion != writers*each || len(vs) != writers*each+1 || got.Revision != writers*each {
			t.Errorf("after %d rotations: latest %d, %d versions, revision %d", writers*each, got.LatestVersion, len(vs), got.Revision)
		}
		recs, err := s.ListAuditRecords(ctx, a, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		CheckChain(t, recs)
		seen := map[string]int{}
		for _, r := range recs {
			seen[r.TraceID]++
		}
		if len(recs) != writers*each+appends || len(seen) != len(recs) {
			t.Errorf("%d records (%d distinct), want one per rotation and append: %d", len(recs), len(seen), writers*each+appends)
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
