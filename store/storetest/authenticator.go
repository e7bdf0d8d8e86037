package storetest

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// NewAuthenticator returns an authenticator record for tests.
func NewAuthenticator(tenantID string, user identity.ObjectID, credID string, created time.Time) authenticator.Authenticator {
	return authenticator.Authenticator{
		ID: base64.RawURLEncoding.EncodeToString([]byte(credID)), TenantID: tenantID, UserID: user, Type: authenticator.TypeFIDO,
		State: authenticator.StatePending, CreatedAt: created, UpdatedAt: created, AAGUID: "00000000-0000-0000-0000-000000000000",
		FriendlyName: "key " + credID, RPID: "example.com", SignCount: 7, COSEAlg: -7, Provenance: authenticator.ProvenanceImported,
		PublicKey: []byte{0xa5, 1, 2}, AttestationFormat: "packed", AttestationType: "self",
	}
}

var authenticatorTests = []test{
	{"AuthenticatorRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		ta, tb := identity.NewGUID(), identity.NewGUID()
		u := identity.NewObjectID()
		a := NewAuthenticator(ta, u, "cred-1", Epoch)
		if err := s.CreateAuthenticator(ctx, a); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetAuthenticator(ctx, ta, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(a, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		// The same credential again in the tenant, even for another user,
		// is a conflict; in another tenant it is a different record.
		dup := NewAuthenticator(ta, identity.NewObjectID(), "cred-1", Epoch)
		if err := s.CreateAuthenticator(ctx, dup); !fault.Is(fault.Conflict, err) {
			t.Errorf("duplicate: got %v, want Conflict", err)
		}
		if err := s.CreateAuthenticator(ctx, NewAuthenticator(tb, u, "cred-1", Epoch)); err != nil {
			t.Errorf("same credential in another tenant: %v", err)
		}
		if _, err := s.GetAuthenticator(ctx, identity.NewGUID(), a.ID); !fault.Is(fault.NotFound, err) {
			t.Errorf("other tenant: got %v, want NotFound", err)
		}
		if _, err := s.GetAuthenticator(ctx, ta, "nope"); !fault.Is(fault.NotFound, err) {
			t.Errorf("unknown id: got %v, want NotFound", err)
		}
	}},
	// Passkeys were stored with provenance "self" before they were stored
	// inline, the specification's value; such an authenticator reads as
	// inline, alone and in a page.
	{"AuthenticatorSelfReadsInline", func(t *testing.T, ctx context.Context, s Store) {
		tenant, user := identity.NewGUID(), identity.NewObjectID()
		a := NewAuthenticator(tenant, user, "passkey", Epoch)
		a.Provenance = authenticator.ProvenanceSelf
		if err := s.CreateAuthenticator(ctx, a); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetAuthenticator(ctx, tenant, a.ID)
		if err != nil || got.Provenance != authenticator.ProvenanceInline {
			t.Errorf("GetAuthenticator: provenance %q (%v), want inline", got.Provenance, err)
		}
		page, _, err := s.ListAuthenticators(ctx, tenant, user, 0, 10)
		if err != nil || len(page) != 1 || page[0].Provenance != authenticator.ProvenanceInline {
			t.Errorf("ListAuthenticators: %+v (%v), want one inline", page, err)
		}
	}},
	{"AuthenticatorListPaging", func(t *testing.T, ctx context.Context, s Store) {
		ta := identity.NewGUID()
		u, other := identity.NewObjectID(), identity.NewObjectID()
		var want []string
		for i := range 5 {
			// Two share a creation time: ID breaks the tie.
			a := NewAuthenticator(ta, u, fmt.Sprintf("c%d", 4-i), Epoch.Add(time.Duration(i/2)*time.Second))
			if err := s.CreateAuthenticator(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateAuthenticator(ctx, NewAuthenticator(ta, other, "other", Epoch)); err != nil {
			t.Fatal(err)
		}
		enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		want = []string{enc("c3"), enc("c4"), enc("c1"), enc("c2"), enc("c0")}
		if enc("c3") > enc("c4") {
			want[0], want[1] = want[1], want[0]
		}
		if enc("c1") > enc("c2") {
			want[2], want[3] = want[3], want[2]
		}
		var got []string
		for off := 0; off < 6; off += 2 {
			page, total, err := s.ListAuthenticators(ctx, ta, u, off, 2)
			if err != nil {
				t.Fatal(err)
			}
			if total != 5 {
				t.Errorf("total %d, want 5", total)
			}
			for _, a := range page {
				got = append(got, a.ID)
			}
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
		page, total, err := s.ListAuthenticators(ctx, ta, u, 10, 2)
		if err != nil || len(page) != 0 || page == nil || total != 5 {
			t.Errorf("past the end: %v %d %v, want an empty page of 5", page, total, err)
		}
		page, total, err = s.ListAuthenticators(ctx, identity.NewGUID(), u, 0, 20)
		if err != nil || len(page) != 0 || total != 0 {
			t.Errorf("other tenant: %v %d %v", page, total, err)
		}
	}},
	{"AuthenticatorUpdateCompareAndSet", func(t *testing.T, ctx context.Context, s Store) {
		ta := identity.NewGUID()
		a := NewAuthenticator(ta, identity.NewObjectID(), "cas", Epoch)
		if err := s.CreateAuthenticator(ctx, a); err != nil {
			t.Fatal(err)
		}
		used, ok := Epoch.Add(time.Minute), Epoch.Add(2*time.Minute)
		b := a
		b.State, b.FriendlyName, b.SignCount, b.LastUsedAt, b.LastSuccessAt, b.UpdatedAt = authenticator.StateActive, "renamed", 9, &used, &ok, Epoch.Add(3*time.Minute)
		b.AAGUID, b.PublicKey = "changed", []byte("not stored") // immutable: not updated
		if err := s.UpdateAuthenticator(ctx, b, a.UpdatedAt); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetAuthenticator(ctx, ta, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := b
		want.AAGUID, want.PublicKey = a.AAGUID, a.PublicKey
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}
		// A writer that read the old version loses.
		stale := a
		stale.State = authenticator.StateSuspended
		stale.UpdatedAt = Epoch.Add(4 * time.Minute)
		if err := s.UpdateAuthenticator(ctx, stale, a.UpdatedAt); !fault.Is(fault.Conflict, err) {
			t.Errorf("stale update: got %v, want Conflict", err)
		}
		missing := NewAuthenticator(ta, a.UserID, "missing", Epoch)
		if err := s.UpdateAuthenticator(ctx, missing, Epoch); !fault.Is(fault.NotFound, err) {
			t.Errorf("missing: got %v, want NotFound", err)
		}
		other := b
		other.TenantID = identity.NewGUID()
		if err := s.UpdateAuthenticator(ctx, other, b.UpdatedAt); !fault.Is(fault.NotFound, err) {
			t.Errorf("other tenant: got %v, want NotFound", err)
		}
	}},
	{"AuthenticatorDelete", func(t *testing.T, ctx context.Context, s Store) {
		ta := identity.NewGUID()
		a := NewAuthenticator(ta, identity.NewObjectID(), "del", Epoch)
		if err := s.CreateAuthenticator(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteAuthenticator(ctx, identity.NewGUID(), a.ID); !fault.Is(fault.NotFound, err) {
			t.Errorf("other tenant: got %v, want NotFound", err)
		}
		if err := s.DeleteAuthenticator(ctx, ta, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteAuthenticator(ctx, ta, a.ID); !fault.Is(fault.NotFound, err) {
			t.Errorf("second delete: got %v, want NotFound", err)
		}
		if err := s.CreateAuthenticator(ctx, a); err != nil {
			t.Errorf("re-create after delete: %v", err)
		}
	}},
	{"AuthenticatorBatchCreate", func(t *testing.T, ctx context.Context, s Store) {
		bs, ok := s.(authenticator.BatchStore)
		if !ok {
			t.Fatal("the store is not an authenticator.BatchStore")
		}
		ta := identity.NewGUID()
		u := identity.NewObjectID()
		old := NewAuthenticator(ta, u, "old", Epoch)
		if err := s.CreateAuthenticator(ctx, old); err != nil {
			t.Fatal(err)
		}
		a, b := NewAuthenticator(ta, u, "a", Epoch), NewAuthenticator(ta, u, "b", Epoch.Add(time.Second))
		errs, err := bs.CreateAuthenticators(ctx, []authenticator.Authenticator{a, NewAuthenticator(ta, u, "old", Epoch), b, b})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, e := range errs {
			kinds = append(kinds, fault.KindOf(e).String())
			if e == nil {
				kinds[len(kinds)-1] = "ok"
			}
		}
		if diff := gocmp.Diff([]string{"ok", fault.Conflict.String(), "ok", fault.Conflict.String()}, kinds); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		for _, want := range []authenticator.Authenticator{old, a, b} {
			got, err := s.GetAuthenticator(ctx, ta, want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
		}
		if _, total, _ := s.ListAuthenticators(ctx, ta, u, 0, 20); total != 3 {
			t.Errorf("%d stored, want 3", total)
		}
	}},
	{"AuthenticatorBatchCreateAudited", func(t *testing.T, ctx context.Context, s Store) {
		as, ok := s.(authenticator.AuditedBatchStore)
		if !ok {
			t.Skip("the store does not write audit records with creations")
		}
		ta := identity.NewGUID()
		u := identity.NewObjectID()
		rec := func(action string) *audit.Record {
			return &audit.Record{Time: Epoch, TenantID: ta, TraceID: "t", Source: audit.SourceAuthenticator, ResourceID: "r", ActorID: "k",
				Action: action, Status: audit.StatusSuccess, Meta: map[string]any{}}
		}
		a := NewAuthenticator(ta, u, "a", Epoch)
		errs, err := as.CreateAuthenticatorsAudited(ctx, []authenticator.Authenticator{a, a},
			[]*audit.Record{rec("ok-1"), rec("ok-2")}, []*audit.Record{rec("conflict-1"), rec("conflict-2")})
		if err != nil || errs[0] != nil || !fault.Is(fault.Conflict, errs[1]) {
			t.Fatalf("outcomes %v %v", errs, err)
		}
		var actions []string
		for r, err := range s.ScanAuditRecords(ctx, ta, audit.ExportRequest{From: Epoch.Add(-time.Hour), To: Epoch.Add(time.Hour)}) {
			if err != nil {
				t.Fatal(err)
			}
			actions = append(actions, r.Action)
		}
		if diff := gocmp.Diff([]string{"ok-1", "conflict-2"}, actions); diff != "" {
			t.Errorf("records (-want +got):\n%s", diff)
		}
	}},
	{"ChallengeSingleUseAndSweep", func(t *testing.T, ctx context.Context, s Store) {
		ta, tb := identity.NewGUID(), identity.NewGUID()
		c := authenticator.Challenge{TenantID: ta, Value: "chal-1", UserID: identity.NewObjectID(), Ceremony: authenticator.CeremonyGet,
			UserVerification: "preferred", CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Minute)}
		if err := s.CreateChallenge(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateChallenge(ctx, c); !fault.Is(fault.Conflict, err) {
			t.Errorf("duplicate: got %v, want Conflict", err)
		}
		if _, err := s.TakeChallenge(ctx, tb, c.Value); !fault.Is(fault.NotFound, err) {
			t.Errorf("other tenant: got %v, want NotFound", err)
		}
		got, err := s.TakeChallenge(ctx, ta, c.Value)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(c, got); diff != "" {
			t.Errorf("taken (-want +got):\n%s", diff)
		}
		if _, err := s.TakeChallenge(ctx, ta, c.Value); !fault.Is(fault.NotFound, err) {
			t.Errorf("second take: got %v, want NotFound", err)
		}
		// A challenge created after another expired sweeps it.
		old := c
		old.Value = "old"
		if err := s.CreateChallenge(ctx, old); err != nil {
			t.Fatal(err)
		}
		later := c
		later.TenantID, later.Value, later.CreatedAt, later.ExpiresAt = tb, "later", Epoch.Add(2*time.Minute), Epoch.Add(3*time.Minute)
		if err := s.CreateChallenge(ctx, later); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TakeChallenge(ctx, ta, "old"); !fault.Is(fault.NotFound, err) {
			t.Errorf("expired challenge not swept: %v", err)
		}
		if _, err := s.TakeChallenge(ctx, tb, "later"); err != nil {
			t.Errorf("live challenge: %v", err)
		}
	}},
}
