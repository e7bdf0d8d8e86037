package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
)

// NewRecord returns a record of tenant for tests.
func NewRecord(tenantID string, i int) *audit.Record {
	return &audit.Record{
		Time: Epoch.Add(time.Duration(i) * time.Millisecond), TenantID: tenantID, TraceID: fmt.Sprintf("trace-%d", i),
		Source: audit.SourcePlatform, ResourceID: "res-1", ActorID: "actor", Action: "user.create", Status: audit.StatusSuccess,
		Meta: map[string]any{"n": float64(i), "user": map[string]any{"name": "alice"}},
	}
}

// CheckChain verifies that recs are the whole chain of one tenant from seq 1.
func CheckChain(t *testing.T, recs []audit.Record) {
	t.Helper()
	var prev []byte
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
		if !bytes.Equal(r.PrevHash, prev) {
			t.Fatalf("seq %d: prev hash does not link", r.Seq)
		}
		if !bytes.Equal(r.Hash, audit.ChainHash(prev, r)) {
			t.Fatalf("seq %d: hash does not match the record", r.Seq)
		}
		prev = r.Hash
	}
}

// ChainTraces checks that tenantID's records are a whole chain and
// returns their trace ids in order.
func ChainTraces(t *testing.T, ctx context.Context, s audit.LogStore, tenantID string) []string {
	t.Helper()
	recs, err := s.ListAuditRecords(ctx, tenantID, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	CheckChain(t, recs)
	var traces []string
	for _, r := range recs {
		traces = append(traces, r.TraceID)
	}
	return traces
}

// EquateMetaNumbers makes cmp treat numbers in audit meta as equal by
// value whatever their type: a SQL store reads them back as json.Number
// (see audit.LogStore), memstore as they were appended.
func EquateMetaNumbers() cmp.Option {
	num := func(v any) (float64, bool) {
		switch v := v.(type) {
		case json.Number:
			f, err := v.Float64()
			return f, err == nil
		case float64:
			return v, true
		case int:
			return float64(v), true
		case int64:
			return float64(v), true
		}
		return 0, false
	}
	return cmp.FilterValues(func(x, y any) bool {
		_, okx := num(x)
		_, oky := num(y)
		return okx && oky
	}, cmp.Comparer(func(x, y any) bool {
		fx, _ := num(x)
		fy, _ := num(y)
		return fx == fy
	}))
}

var auditTests = []test{
	{"AuditAppendAndList", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		batch := []*audit.Record{NewRecord(a, 1), NewRecord(b, 2), NewRecord(a, 3)}
		batch[1].Status = audit.StatusFailed
		batch[1].Meta["errorMessage"] = "nope"
		if err := s.AppendAuditRecords(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if batch[0].Seq != 1 || batch[1].Seq != 1 || batch[2].Seq != 2 {
			t.Errorf("seqs = %d %d %d, want per-tenant 1 1 2", batch[0].Seq, batch[1].Seq, batch[2].Seq)
		}
		if err := s.AppendAuditRecords(ctx, []*audit.Record{NewRecord(a, 4)}); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListAuditRecords(ctx, a, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("tenant a has %d records, want 3", len(got))
		}
		CheckChain(t, got)
		want := *batch[0]
		if d := cmp.Diff(want, got[0], cmpopts.EquateEmpty(), EquateMetaNumbers()); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
		page, err := s.ListAuditRecords(ctx, a, 1, 1)
		if err != nil || len(page) != 1 || page[0].Seq != 2 {
			t.Errorf("page after 1 = %+v, %v", page, err)
		}
		other, _ := s.ListAuditRecords(ctx, b, 0, 100)
		if len(other) != 1 || other[0].Meta["errorMessage"] != "nope" {
			t.Errorf("tenant b records = %+v", other)
		}
	}},
	{"ServiceInstances", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		first := audit.NewInstance(a, audit.SourcePlatform, Epoch)
		got, err := s.EnsureServiceInstance(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(first, got); d != "" {
			t.Errorf("EnsureServiceInstance (-want +got):\n%s", d)
		}
		again, err := s.EnsureServiceInstance(ctx, audit.NewInstance(a, audit.SourcePlatform, Epoch.Add(time.Hour)))
		if err != nil || again.ID != first.ID {
			t.Errorf("second Ensure = %v, %v; want the first instance", again.ID, err)
		}
		if _, err := s.EnsureServiceInstance(ctx, audit.NewInstance(a, audit.SourceEvents, Epoch.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EnsureServiceInstance(ctx, audit.NewInstance(identity.NewGUID(), audit.SourceEvents, Epoch)); err != nil {
			t.Fatal(err)
		}
		list, total, err := s.ListServiceInstances(ctx, a, 0, 10)
		if err != nil || total != 2 || len(list) != 2 || list[0].Source != audit.SourcePlatform {
			t.Errorf("List = %+v, %d, %v", list, total, err)
		}
		list, total, _ = s.ListServiceInstances(ctx, a, 1, 10)
		if total != 2 || len(list) != 1 || list[0].Source != audit.SourceEvents {
			t.Errorf("List offset 1 = %+v, %d", list, total)
		}
	}},
}
