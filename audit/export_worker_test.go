package audit_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/store/storetest"
)

// plainSink hides the Recorder's Build, as a test's fake sink would.
type plainSink struct{ audit.Sink }

// TestExportFinalChangesAuditedWithTheirWrite: the worker's changes that
// nothing retries (a job's completion or failure, an expired archive's
// removal) are audited in the transaction that stores them. The recorder
// is closed before the worker runs, so a record written after the store's
// write, as a process killed between the two would leave it, is lost; the
// records must still land, with the job's trace id and the worker as actor.
func TestExportFinalChangesAuditedWithTheirWrite(t *testing.T) {
	runExportWorker(t, func(r *audit.Recorder) audit.Sink { return r }, true)
}

// TestExportFinalChangesRecordedLateByAPlainSink: a sink that cannot build
// records still gets them, after the write.
func TestExportFinalChangesRecordedLateByAPlainSink(t *testing.T) {
	runExportWorker(t, func(r *audit.Recorder) audit.Sink { return plainSink{r} }, false)
}

func runExportWorker(t *testing.T, sink func(*audit.Recorder) audit.Sink, closeFirst bool) {
	ctx := t.Context()
	st := memstore.New()
	clk := clocktest.New(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	rec := audit.NewRecorder(st, clk, nil)
	t.Cleanup(rec.Close)
	signer, _ := mustSigner(t, "k1")
	e, err := audit.NewExporter(audit.ExporterConfig{
		Store: st, Sink: sink(rec), Clock: clk, Owner: "w1", ArchiveDir: t.TempDir(), URLKey: bytes.Repeat([]byte{7}, 32),
		Signer: func() (audit.DigestSigner, error) { return signer, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := rec.Record(ctx, audit.Entry{TenantID: testTenant, Source: audit.SourcePlatform, Action: "user.create"}); err != nil {
			t.Fatal(err)
		}
	}
	now := clk.Now().UTC().Truncate(time.Microsecond)
	req := audit.ExportRequest{From: now.Add(-time.Hour), To: now}
	jobs := []audit.ExportJob{
		{ID: "job-ok", TenantID: testTenant, Request: req, State: audit.JobActive, StartedAt: now, TraceID: "trace-of-ok"},
		// Claimed once more than allowed: the worker fails it at once.
		{ID: "job-bad", TenantID: testTenant, Request: req, State: audit.JobActive, StartedAt: now.Add(time.Second),
			TraceID: "trace-of-bad", Attempts: audit.MaxExportAttempts},
	}
	for _, j := range jobs {
		if err := st.CreateExportJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if closeFirst {
		rec.Close()
	}

	if n, err := e.RunPending(ctx); err != nil || n != 2 {
		t.Fatalf("RunPending = %d, %v; want both jobs ended", n, err)
	}
	clk.Advance(audit.ArchiveTTL)
	if n, err := e.CleanupExpired(ctx); err != nil || n != 1 {
		t.Fatalf("CleanupExpired = %d, %v; want the archive removed", n, err)
	}

	all, err := st.ListAuditRecords(ctx, testTenant, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	storetest.CheckChain(t, all)
	var got []string
	var cleanupTrace string
	for _, r := range all {
		if r.Source != audit.SourceAudit {
			continue
		}
		line := fmt.Sprintf("%s %s %s job=%v attempt=%v count=%v err=%v", r.Action, r.Status, r.ActorID,
			r.Meta["jobId"], r.Meta["attempt"], r.Meta["count"], r.Meta["errorMessage"])
		if r.Action == "export.archive.delete" {
			cleanupTrace = r.TraceID
		} else {
			line += " trace=" + r.TraceID
		}
		got = append(got, line)
	}
	want := []string{
		"export.complete success system:w1 job=job-ok attempt=1 count=3 err=<nil> trace=trace-of-ok",
		fmt.Sprintf("export.fail failed system:w1 job=job-bad attempt=%d count=<nil> err=the export failed %d times trace=trace-of-bad",
			audit.MaxExportAttempts+1, audit.MaxExportAttempts),
		"export.archive.delete success system:w1 job=job-ok attempt=<nil> count=<nil> err=<nil>",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the worker's records (-want +got):\n%s", d)
	}
	if cleanupTrace == "" || cleanupTrace == "trace-of-ok" {
		t.Errorf("export.archive.delete trace id %q, want a fresh one", cleanupTrace)
	}
	for _, j := range jobs {
		got, err := st.GetExportJob(ctx, testTenant, j.ID)
		if err != nil || got.State == audit.JobActive || got.Archive != "" {
			t.Errorf("job %s after the worker = %+v, %v; want it final, with no archive", j.ID, got, err)
		}
	}
}
