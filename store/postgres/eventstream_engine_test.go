package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/postgres"
)

type nopSink struct{}

func (nopSink) Record(context.Context, audit.Entry) error { return nil }

// TestEventStreamTwoProcesses runs two delivery engines on two Stores (two
// pools, as two server processes) sharing one schema: each subscription is
// delivered by one of them, every event reaches its receiver once and in
// order; after both stop, a third continues every subscription from its
// cursor: the events appended meanwhile arrive once, in order.
func TestEventStreamTwoProcesses(t *testing.T) {
	schema := freshSchema(t)
	st1, st2 := open(t, schema), open(t, schema)
	defer st1.Close()
	defer st2.Close()
	ctx := context.Background()
	clk := clock.System{}
	key := seal.NewKey()
	sealer, _ := seal.New(key)
	evs := events.NewService(events.Config{Store: st1, Audit: nopSink{}, Clock: clk})
	defer evs.Close()

	var mu sync.Mutex
	got := map[string][]string{} // receiver path -> event ids in arrival order
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ce struct{ ID string }
		json.Unmarshal(b, &ce)
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], ce.ID)
		mu.Unlock()
	}))
	defer rcv.Close()

	tenant := identity.Principal{TenantID: "tenant-pg", Scopes: []string{identity.ScopeEventStreamAdmin, identity.ScopeEventProducer}}
	svc1 := eventstream.NewService(eventstream.Config{Store: st1, Events: st1, Sealer: sealer, Audit: nopSink{}, Clock: clk, Guard: eventstream.Guard{AllowPrivate: true}})
	svc2 := eventstream.NewService(eventstream.Config{Store: st2, Events: st2, Sealer: sealer, Audit: nopSink{}, Clock: clk, Guard: eventstream.Guard{AllowPrivate: true}})
	const subs = 4
	for i := range subs {
		ep := fmt.Sprintf("%s/r%d", rcv.URL, i)
		if _, err := svc1.Create(ctx, tenant, eventstream.Input{Endpoint: &ep, EventTypes: []string{"10001"}}); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	post := func(n int) {
		for range n {
			res, err := evs.PostExternal(ctx, tenant, []byte(`{"e":{"event_type_id":"10001"}}`))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, res["e"].ID)
		}
	}
	post(10)
	run := func(svc *eventstream.Service, owner string, maxWorkers int) (stop func()) {
		e := eventstream.NewEngine(eventstream.EngineConfig{Service: svc, Owner: owner, LeaseFor: 2 * time.Second, PollEvery: 100 * time.Millisecond, MaxWorkers: maxWorkers})
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); e.Run(rctx) }()
		return func() { cancel(); <-done }
	}
	stop1 := run(svc1, "p1", subs/2)
	stop2 := run(svc2, "p2", subs/2)
	wait := func(n int) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			ok := len(got) == subs
			for _, ids := range got {
				ok = ok && len(ids) >= n
			}
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("deliveries after 30 s: %v", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait(10)
	leases, err := st1.ListSubscriptions(ctx, tenant.TenantID, eventstream.KindStream, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]int{}
	for _, s := range leases {
		owners[s.LeaseOwner]++
	}
	if owners["p1"] != subs/2 || owners["p2"] != subs/2 {
		t.Errorf("leases %v, want %d each", owners, subs/2)
	}
	// Both stop (releasing their leases); a third process with room for
	// every subscription continues each from its cursor.
	stop1()
	stop2()
	stop3 := run(svc2, "p3", subs)
	defer stop3()
	post(5)
	wait(15)
	mu.Lock()
	defer mu.Unlock()
	for path, ids := range got {
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Errorf("%s got %d events %v, want %d in order", path, len(ids), ids, len(want))
		}
	}
}

// streamReads is the event log as the event-stream service reads it: it
// keeps the arguments of every read after a cursor, and closes reached at
// the first read after seq until or later.
type streamReads struct {
	eventstream.EventLog
	until   int64
	reached chan struct{}

	mu    sync.Mutex
	reads []streamRead
	once  sync.Once
}

type streamRead struct {
	afterSeq  int64
	types     []string
	notBefore time.Time
	limit     int
}

func (l *streamReads) ListEventsAfter(ctx context.Context, tenantID string, afterSeq int64, typeIDs []string, notBefore time.Time, limit int) ([]events.Event, error) {
	l.mu.Lock()
	l.reads = append(l.reads, streamRead{afterSeq, typeIDs, notBefore, limit})
	l.mu.Unlock()
	if afterSeq >= l.until {
		l.once.Do(func() { close(l.reached) })
	}
	return l.EventLog.ListEventsAfter(ctx, tenantID, afterSeq, typeIDs, notBefore, limit)
}

func (l *streamReads) last() streamRead {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads[len(l.reads)-1]
}

// TestEventStreamReadsPruneOlderPartitions runs a delivery engine on a log
// whose first events lie in partitions days before the later ones. Once
// the subscription's cursor has moved into the newest partition, the
// reads the service makes after it (the engine's next batch, and the
// queued count of a GET) run no scan of a partition older than the
// cursor's, by EXPLAIN ANALYZE of those very reads; the same read without
// the cursor's bound scans them all.
func TestEventStreamReadsPruneOlderPartitions(t *testing.T) {
	schema := freshSchema(t)
	s := openWith(t, schema, postgres.Options{PartitionInterval: 24 * time.Hour})
	ctx := t.Context()
	c := connect(t, schema)
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	day := parts[len(parts)-1].Upper.Add(-24 * time.Hour) // the last partition's start
	var old []string
	for _, p := range parts {
		if p.Table == "events" && !p.Upper.After(day) {
			old = append(old, p.Name)
		}
	}
	if !slices.Contains(old, "events_legacy") || len(old) < 2 {
		t.Fatalf("events partitions before day's: %v", old)
	}
	const tenant = "t1"
	appendAt := func(at time.Time, n int) {
		t.Helper()
		evs := make([]*events.Event, n)
		for i := range evs {
			evs[i] = event(t, tenant, "10001", "alice", at.Add(time.Duration(i)*time.Second))
		}
		if err := s.AppendEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	appendAt(day.Add(-72*time.Hour), 20) // the legacy partition
	appendAt(day.Add(-30*time.Hour), 10) // a day or more before day

	var (
		mu  sync.Mutex
		got []string
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ce struct{ Sequence string }
		json.NewDecoder(r.Body).Decode(&ce)
		mu.Lock()
		got = append(got, ce.Sequence)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	reads := &streamReads{EventLog: s, until: 50, reached: make(chan struct{})}
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	svc := eventstream.NewService(eventstream.Config{Store: s, Events: reads, Sealer: sealer, Audit: nopSink{}, Clock: clocktest.New(day.Add(2 * time.Hour)),
		Guard: eventstream.Guard{AllowPrivate: true}})
	admin := identity.Principal{TenantID: tenant, Scopes: []string{identity.ScopeEventStreamAdmin}}
	endpoint, rate := rcv.URL, 1000 // a burst of 100: no wait on the fake clock
	sub, err := svc.Create(ctx, admin, eventstream.Input{Endpoint: &endpoint, EventTypes: []string{"10001"}, MaxPerSecond: &rate})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Cursor != 30 || !sub.CursorAt.Equal(day.Add(-30*time.Hour+9*time.Second)) {
		t.Fatalf("created at cursor %d received %v, want 30 and the tail's received_at", sub.Cursor, sub.CursorAt)
	}
	appendAt(day.Add(time.Hour), 20) // seqs 31..50, in day's partition

	ectx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		eventstream.NewEngine(eventstream.EngineConfig{Service: svc, Owner: "p1"}).Run(ectx)
	}()
	select {
	case <-reads.reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the engine did not read after seq 50 within 30 s")
	}
	cancel()
	<-done
	mu.Lock()
	if len(got) != 20 || got[0] != "31" || got[19] != "50" {
		t.Errorf("delivered sequences %v, want 31..50", got)
	}
	mu.Unlock()

	check := func(name string, r streamRead) {
		t.Helper()
		if r.afterSeq != 50 || !r.notBefore.Equal(day.Add(time.Hour+19*time.Second)) {
			t.Errorf("%s: read after %d with notBefore %v, want after 50 with seq 50's received_at", name, r.afterSeq, r.notBefore)
		}
		query, args := s.EventsAfterQuery(tenant, r.afterSeq, r.types, r.notBefore, r.limit)
		if plan := explainAnalyze(t, c, query, args...); scanned(plan, old) {
			t.Errorf("%s scans a partition of %v:\n%s", name, old, plan)
		}
		// The check can fail: the same read with no bound scans them.
		query, args = s.EventsAfterQuery(tenant, r.afterSeq, r.types, time.Time{}, r.limit)
		if plan := explainAnalyze(t, c, query, args...); !scanned(plan, old) {
			t.Errorf("%s without notBefore scans none of %v:\n%s", name, old, plan)
		}
	}
	check("the engine's read", reads.last())
	if _, err := svc.Get(ctx, admin, sub.ID); err != nil {
		t.Fatal(err)
	}
	check("the queued count", reads.last())
}
