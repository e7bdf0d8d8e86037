package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/sqlite"
)

// AppendEventsAudited stores the events and the records together, each
// with its own numbering, or, when any part fails, neither.
func TestAppendEventsAuditedIsAtomic(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "test.db"), sqlite.Options{Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tenant := identity.NewGUID()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	event := func() *events.Event {
		return &events.Event{TenantID: tenant, TypeID: "10001", Time: now, ReceivedAt: now, Body: []byte(`{"event_type_id":"10001"}`)}
	}
	record := func(meta map[string]any) *audit.Record {
		return &audit.Record{Time: now, TenantID: tenant, Source: audit.SourceEvents, Action: events.ActionPost, Status: audit.StatusSuccess, Meta: meta}
	}
	evs := []*events.Event{event(), event()}
	if err := s.AppendEventsAudited(t.Context(), evs, []*audit.Record{record(nil), record(nil)}); err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq != 1 || evs[1].Seq != 2 || evs[1].ID == "" {
		t.Fatalf("events not numbered: %+v", evs)
	}
	// A record whose meta cannot be encoded fails the whole transaction.
	bad := record(map[string]any{"x": make(chan int)})
	if err := s.AppendEventsAudited(t.Context(), []*events.Event{event()}, []*audit.Record{bad}); err == nil {
		t.Fatal("a failing record did not fail the append")
	}
	got, err := s.ListEventsAfter(t.Context(), tenant, 0, nil, time.Time{}, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("%d events after a failed append, want 2 (%v)", len(got), err)
	}
	recs, err := s.ListAuditRecords(t.Context(), tenant, 0, 10)
	if err != nil || len(recs) != 2 || recs[1].Seq != 2 || string(recs[1].PrevHash) != string(recs[0].Hash) {
		t.Fatalf("audit records after a failed append = %+v, %v", recs, err)
	}
	// The next append continues both numberings without a gap.
	next := []*events.Event{event()}
	if err := s.AppendEventsAudited(t.Context(), next, []*audit.Record{record(nil)}); err != nil || next[0].Seq != 3 {
		t.Fatalf("next append: seq %d, %v", next[0].Seq, err)
	}
}
