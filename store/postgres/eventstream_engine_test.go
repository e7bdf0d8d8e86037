package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
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
