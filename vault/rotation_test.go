package vault_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/vault"
)

// auditedVault is a vault service on a memstore whose audit recorder
// (closed at the test's end) writes to the same store.
func auditedVault(t *testing.T) (*memstore.Store, *vault.Service, *audit.Recorder, *clocktest.Fake) {
	t.Helper()
	st := memstore.New()
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktest.New(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	rec := audit.NewRecorder(st, clk, nil)
	t.Cleanup(rec.Close)
	return st, vault.NewService(vault.Config{Store: st, Sealer: sealer, Audit: rec, Clock: clk}), rec, clk
}

// TestSystemChangesAuditedWithTheirWrite: what the platform changes by
// itself (an automatic rotation, a passed activation or deactivation
// date) is audited in the transaction that stores it. The recorder is
// closed before the changes, so a record written after the write, as a
// process killed between the two would leave it, is lost; only the
// records that went with the write reach the log.
func TestSystemChangesAuditedWithTheirWrite(t *testing.T) {
	st, s, rec, clk := auditedVault(t)
	auto, err := s.CreateKey(t.Context(), admin, vault.CreateRequest{Name: "auto", KeySpec: vault.KeySpec{Algorithm: "AES", Size: 256}, AutoRotatePeriodSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	later := clk.Now().Add(30 * time.Minute)
	dated, err := s.CreateKey(t.Context(), admin, vault.CreateRequest{Name: "dated", KeySpec: vault.KeySpec{Algorithm: "AES", Size: 256}, ActivationDate: &later})
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()

	clk.Advance(time.Hour)
	if n, err := s.RotateDue(t.Context()); err != nil || n != 2 {
		t.Fatalf("RotateDue = %d, %v; want both keys handled", n, err)
	}
	if n, err := s.RotateDue(t.Context()); err != nil || n != 0 {
		t.Fatalf("a second pass = %d, %v; want nothing left", n, err)
	}
	recs, err := st.ListAuditRecords(t.Context(), admin.TenantID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.ActorID == vault.ActorSystem {
			key := r.Meta["key"].(map[string]any)["id"]
			got = append(got, fmt.Sprintf("%s %s %v", key, r.Action, r.Meta["reason"]))
		}
	}
	want := []string{
		fmt.Sprintf("%s %s autoRotatePeriodSeconds", auto.ID, vault.ActionRotate),
		fmt.Sprintf("%s %s activationDate", dated.ID, vault.ActionActivate),
	}
	if d := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); d != "" {
		t.Errorf("system records (-want +got):\n%s", d)
	}

	// The platform's signing key is made with its record too.
	if err := s.SetupSigningKeys(t.Context(), nil, 0); err != nil {
		t.Fatal(err)
	}
	recs, err = st.ListAuditRecords(t.Context(), vault.PlatformTenant, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Action != vault.ActionCreate || recs[0].ActorID != vault.ActorSystem {
		t.Errorf("the signing key's records: %+v, want its creation", recs)
	}
}

// TestDateChangeStoredByAUserWrite: a user's write that stores a key's
// date that came (here a rename after the activation date) records the
// activation once, as the platform's (actor "system", no client), in the
// request's trace; the rename is the user's.
func TestDateChangeStoredByAUserWrite(t *testing.T) {
	st, s, _, clk := auditedVault(t)
	later := clk.Now().Add(30 * time.Minute)
	k, err := s.CreateKey(t.Context(), admin, vault.CreateRequest{Name: "dated", KeySpec: vault.KeySpec{Algorithm: "AES", Size: 256}, ActivationDate: &later})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	ctx := audit.WithTraceID(audit.WithActor(t.Context(), admin.UserID, "client-1"), "trace-of-the-rename")
	name := "renamed"
	for range 2 {
		if _, err := s.UpdateKey(ctx, admin, vault.KeyRef{Key: k.ID}, vault.Patch{Name: &name}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := st.ListAuditRecords(t.Context(), admin.TenantID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Action, Actor, Client, Trace string }
	var got []row
	for _, r := range recs {
		if r.TraceID != "trace-of-the-rename" {
			continue
		}
		client, _ := r.Meta["client_id"].(string)
		got = append(got, row{r.Action, r.ActorID, client, r.TraceID})
	}
	want := []row{
		{vault.ActionActivate, vault.ActorSystem, "", "trace-of-the-rename"},
		{vault.ActionUpdate, admin.UserID, "client-1", "trace-of-the-rename"},
		{vault.ActionUpdate, admin.UserID, "client-1", "trace-of-the-rename"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the renames' records (-want +got):\n%s", d)
	}
}
