package eventstream_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/seal"
)

// read is one ListEventsAfter call.
type read struct {
	afterSeq  int64
	notBefore time.Time
}

// recordingLog is the event log as the service reads it, keeping the
// cursor and notBefore of every read after a cursor.
type recordingLog struct {
	eventstream.EventLog
	mu    sync.Mutex
	reads []read
}

func (l *recordingLog) ListEventsAfter(ctx context.Context, tenantID string, afterSeq int64, typeIDs []string, notBefore time.Time, limit int) ([]events.Event, error) {
	l.mu.Lock()
	l.reads = append(l.reads, read{afterSeq, notBefore})
	l.mu.Unlock()
	return l.EventLog.ListEventsAfter(ctx, tenantID, afterSeq, typeIDs, notBefore, limit)
}

func (l *recordingLog) all() []read {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reads)
}

// TestReadsAfterTheCursorAreBoundedByItsReceivedAt: every read of the log
// after a subscription's cursor, the engine's and the queued count's,
// passes as notBefore the ReceivedAt of the event at the cursor (at
// creation, of the tenant's newest event), which the subscription keeps
// with the cursor through deliveries and dead letters.
func TestReadsAfterTheCursorAreBoundedByItsReceivedAt(t *testing.T) {
	f := newFixture(t, local)
	log := &recordingLog{EventLog: f.store}
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	f.svc = eventstream.NewService(eventstream.Config{Store: f.store, Events: log, Sealer: sealer, Audit: f.sink, Clock: f.clock, Guard: local})
	var mu rcvMu
	failing := false
	rcv := newReceiver(t, f.clock, func(int, http.ResponseWriter) int {
		if mu.get(&failing) {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	ctx := context.Background()

	f.post(tenantA, "10001", 2) // before the subscription, received at start
	f.clock.Advance(time.Minute)
	sub := f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL), EventTypes: []string{"10001"}, NumberOfRetries: ptr(0), MaxPerSecond: ptr(1000)})
	if sub.Cursor != 2 || !sub.CursorAt.Equal(start) {
		t.Fatalf("created at cursor %d received %v, want 2 and %v (the tail's)", sub.Cursor, sub.CursorAt, start)
	}
	f.engine(eventstream.EngineConfig{})
	// One event at a time, each a minute later; the second fails its only
	// attempt and becomes a dead letter, which moves the cursor too.
	for i, fail := range []bool{false, true, false} {
		mu.set(&failing, fail)
		f.clock.Advance(time.Minute)
		f.post(tenantA, "10001", 1)
		seq := int64(3 + i)
		f.drive(2, 10*time.Millisecond, func() bool {
			return slices.ContainsFunc(log.all(), func(r read) bool { return r.afterSeq == seq })
		})
	}
	if _, err := f.svc.Get(ctx, admin(tenantA), sub.ID); err != nil {
		t.Fatal(err)
	}

	evs, err := f.store.ListEventsAfter(ctx, tenantA, 0, nil, time.Time{}, 10)
	if err != nil || len(evs) != 5 {
		t.Fatalf("log: %d events, %v", len(evs), err)
	}
	receivedAt := map[int64]time.Time{}
	for _, e := range evs {
		receivedAt[e.Seq] = e.ReceivedAt
	}
	stored, err := f.store.GetSubscription(ctx, tenantA, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Cursor != 5 || !stored.CursorAt.Equal(receivedAt[5]) || !receivedAt[5].After(receivedAt[4]) {
		t.Errorf("stored cursor %d received %v, want 5 and %v (after %v)", stored.Cursor, stored.CursorAt, receivedAt[5], receivedAt[4])
	}
	seen := map[int64]bool{}
	for _, r := range log.all() {
		seen[r.afterSeq] = true
		if !r.notBefore.Equal(receivedAt[r.afterSeq]) {
			t.Errorf("a read after seq %d with notBefore %v, want %v (its event's ReceivedAt)", r.afterSeq, r.notBefore, receivedAt[r.afterSeq])
		}
	}
	// After the tail, each delivered event, and the dead letter (seq 4).
	for seq := int64(2); seq <= 5; seq++ {
		if !seen[seq] {
			t.Errorf("no read after seq %d: %v", seq, log.all())
		}
	}
	if page, err := f.svc.ListDeadLetters(ctx, admin(tenantA), sub.ID, "", 10); err != nil || len(page.Items) != 1 || page.Items[0].EventSeq != 4 {
		t.Errorf("dead letters: %+v, %v; want the event of seq 4", page.Items, err)
	}
}
