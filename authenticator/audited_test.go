package authenticator_test

import (
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/fault"
)

// TestImportAuditedInOneTransaction uses the platform's audit recorder (an
// audit.Builder) on a store that is an AuditedBatchStore: the record of an
// import, success or conflict, is written with the creation.
func TestImportAuditedInOneTransaction(t *testing.T) {
	f := newFixture(t)
	rec := audit.NewRecorder(f.store, f.clock, nil)
	t.Cleanup(rec.Close)
	f.svc = authenticator.NewService(authenticator.Config{Store: f.store, Directory: f.store, Audit: rec, Clock: f.clock, Events: f.events})
	d := authenticatortest.New(rpID, origin)
	cdj, att := d.Register("YXVkaXRlZA", authenticatortest.FormatPackedSelf)
	a, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(cdj, att))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(cdj, att)); !fault.Is(fault.Conflict, err) || fault.MessageOf(err) != authenticator.MsgInUse {
		t.Fatalf("second import: %v", err)
	}
	var got []audit.Record
	for r, err := range f.store.ScanAuditRecords(t.Context(), f.tenant.ID, audit.ExportRequest{From: start.Add(-time.Hour), To: start.Add(time.Hour), Action: authenticator.ActionImport}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 2 {
		t.Fatalf("%d import records, want 2: %+v", len(got), got)
	}
	if got[0].Status != audit.StatusSuccess || got[0].Meta["authenticator"].(map[string]any)["id"] != a.ID || got[0].Source != audit.SourceAuthenticator {
		t.Errorf("success record %+v", got[0])
	}
	if got[1].Status != audit.StatusFailed || got[1].Meta["errorMessage"] != authenticator.MsgInUse {
		t.Errorf("conflict record %+v", got[1])
	}
	if diff := len(f.events.types()); diff != 1 {
		t.Errorf("%d events, want one 301", diff)
	}
}
