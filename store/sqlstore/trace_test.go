package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/tracing"
	"github.com/latchkey/latchkey/store/storetest"
	"github.com/latchkey/latchkey/vault"
)

// TestStoreSpans: under a recording span, each store transaction (a Tx,
// a Pipeline, a batch, a single write) is a client span named after the
// Store method that made it (whatever helper runs the statement), with
// the database and the kind of call, and an error status when it failed;
// single reads outside a transaction are not spans. Without a recording
// span (tracing off, or the request not sampled) there is none. It runs
// on both databases: the tracing lives once, in the shared store.
func TestStoreSpans(t *testing.T) {
	forEach(t, func(t *testing.T, db database) {
		s, _ := db.open(t, nil)
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer tp.Shutdown(context.Background())
		tenant := identity.NewGUID()
		now := storetest.Epoch
		work := func(ctx context.Context) {
			ev := &events.Event{TenantID: tenant, TypeID: "10001", Time: now, ReceivedAt: now, Body: []byte(`{"event_type_id":"10001"}`)}
			rec := &audit.Record{Time: now, TenantID: tenant, Source: audit.SourceEvents, Action: events.ActionPost, Status: audit.StatusSuccess}
			if err := s.AppendEventsAudited(ctx, []*events.Event{ev}, []*audit.Record{rec}); err != nil { // Pipeline
				t.Fatal(err)
			}
			if _, err := s.ListEventsAfter(ctx, tenant, 0, nil, time.Time{}, 10); err != nil { // Read().Query: no span
				t.Fatal(err)
			}
			if _, err := s.DeleteEventsBefore(ctx, tenant, now, 10); err != nil { // Tx
				t.Fatal(err)
			}
			if _, _, err := s.ListKeys(ctx, tenant, vault.ListQuery{Limit: 10}); err != nil { // Read().Batch, through a generic helper
				t.Fatal(err)
			}
			if _, err := s.GetExportJob(ctx, tenant, "nope"); !fault.Is(fault.NotFound, err) { // Read().QueryRow: no span
				t.Fatalf("GetExportJob = %v, want NotFound", err)
			}
			job := storetest.NewExportJob(tenant, 0)
			if err := s.CreateExportJob(ctx, job); err != nil { // Write().Exec, through exec
				t.Fatal(err)
			}
			if err := s.CreateExportJob(ctx, job); !fault.Is(fault.Conflict, err) { // a failed one
				t.Fatalf("second CreateExportJob = %v, want Conflict", err)
			}
			if _, err := s.ClaimExportJob(ctx, "w", now, time.Minute); err != nil { // Write().QueryRow
				t.Fatal(err)
			}
		}

		work(context.Background())
		_, unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("t").Start(context.Background(), "request")
		work(trace.ContextWithSpan(context.Background(), unsampled))
		if n := len(exp.GetSpans()); n != 0 {
			t.Fatalf("%d spans without a recording span, want none", n)
		}

		ctx, parent := tp.Tracer("t").Start(context.Background(), "request")
		work(tracing.WithTracer(ctx, tp.Tracer(tracing.Scope)))
		parent.End()
		system := map[string]string{"sqlite": "sqlite", "postgres": "postgresql"}[db.name]
		var got []string
		for _, sp := range exp.GetSpans() {
			if sp.Name == "request" {
				continue
			}
			a := map[attribute.Key]string{}
			for _, kv := range sp.Attributes {
				a[kv.Key] = kv.Value.Emit()
			}
			if sp.Parent.SpanID() != parent.SpanContext().SpanID() || sp.SpanKind != trace.SpanKindClient || a["db.system.name"] != system {
				t.Errorf("span %s: parent %v, kind %v, db.system.name %q; want a client child of the request on %s", sp.Name, sp.Parent.SpanID(), sp.SpanKind, a["db.system.name"], system)
			}
			got = append(got, fmt.Sprintf("%s %s %s", sp.Name, a["latchkey.store.call"], sp.Status.Code))
		}
		want := []string{
			"store.AppendEventsAudited pipeline Unset",
			"store.DeleteEventsBefore tx Unset",
			"store.ListKeys batch Unset",
			"store.CreateExportJob exec Unset",
			"store.CreateExportJob exec Error",
			"store.ClaimExportJob query Unset",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("store spans (-want +got):\n%s", diff)
		}
	})
}
