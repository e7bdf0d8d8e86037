package eventstream_test

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
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

const tenantA, tenantB = "tenant-a", "tenant-b"

var start = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// sink keeps audit entries in memory.
type sink struct {
	mu      sync.Mutex
	entries []audit.Entry
}

func (s *sink) Record(ctx context.Context, e audit.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, e)
	return nil
}

func (s *sink) actions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.entries {
		out = append(out, e.Action)
	}
	return out
}

type fixture struct {
	t      *testing.T
	store  *memstore.Store
	clock  *clocktest.Fake
	sink   *sink
	events *events.Service
	svc    *eventstream.Service
}

func newFixture(t *testing.T, guard eventstream.Guard) *fixture {
	t.Helper()
	return newFixtureAudited(t, guard, nil)
}

// newFixtureAudited is newFixture whose event-stream service records to
// the audit sink sinkOf makes on the fixture's store and clock (the
// in-memory sink when sinkOf is nil).
func newFixtureAudited(t *testing.T, guard eventstream.Guard, sinkOf func(*memstore.Store, *clocktest.Fake) audit.Sink) *fixture {
	t.Helper()
	f := &fixture{t: t, store: memstore.New(), clock: clocktest.New(start), sink: &sink{}}
	var as audit.Sink = f.sink
	if sinkOf != nil {
		as = sinkOf(f.store, f.clock)
	}
	f.events = events.NewService(events.Config{Store: f.store, Audit: f.sink, Clock: f.clock})
	t.Cleanup(f.events.Close)
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	f.svc = eventstream.NewService(eventstream.Config{Store: f.store, Events: f.store, Sealer: sealer, Audit: as, Clock: f.clock, Guard: guard})
	return f
}

// local allows the httptest receivers on 127.0.0.1.
var local = eventstream.Guard{AllowPrivate: true}

func admin(tenant string) identity.Principal {
	return identity.Principal{Kind: identity.KindClient, TenantID: tenant, ClientID: "c-" + tenant, Scopes: []string{identity.ScopeEventStreamAdmin, identity.ScopeEventProducer}}
}

// engine runs an engine until the test ends.
func (f *fixture) engine(cfg eventstream.EngineConfig) *eventstream.Engine {
	f.t.Helper()
	cfg.Service = f.svc
	if cfg.Waker == nil {
		cfg.Waker = f.events
	}
	if cfg.Rand == nil {
		cfg.Rand = func() float64 { return 0.5 }
	}
	e := eventstream.NewEngine(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx)
	}()
	f.t.Cleanup(func() {
		cancel()
		<-done
	})
	return e
}

// post appends n external events of type typeID to tenant's log, in order.
func (f *fixture) post(tenant, typeID string, n int) []string {
	f.t.Helper()
	var ids []string
	for range n {
		res, err := f.events.PostExternal(context.Background(), admin(tenant), []byte(`{"e":{"event_type_id":"`+typeID+`"}}`))
		if err != nil || res["e"].Status != events.StatusAccepted {
			f.t.Fatalf("post: %v %+v", err, res)
		}
		ids = append(ids, res["e"].ID)
	}
	return ids
}

// drive advances the fake clock by step each time the engine's goroutines
// are all blocked on timers (timers of them), until done reports true.
func (f *fixture) drive(timers int, step time.Duration, done func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			f.t.Fatal("drive: condition not reached")
		}
		f.clock.WaitForTimers(timers)
		if done() {
			return
		}
		f.clock.Advance(step)
	}
}

// delivery is one request a receiver got.
type delivery struct {
	At      time.Time // fake clock time
	Header  http.Header
	Body    []byte
	Event   map[string]any
	Answer  int
	EventID string
}

// receiver is an httptest endpoint that records every request and answers
// with answer(n) for the n-th request (from 0).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []delivery
	answer func(n int, w http.ResponseWriter) int
}

func newReceiver(t *testing.T, clk *clocktest.Fake, answer func(n int, w http.ResponseWriter) int) *receiver {
	r := &receiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ev map[string]any
		json.Unmarshal(body, &ev)
		r.mu.Lock()
		n := len(r.got)
		status := http.StatusNoContent
		if r.answer != nil {
			status = r.answer(n, w)
		}
		id, _ := ev["id"].(string)
		r.got = append(r.got, delivery{At: clk.Now(), Header: req.Header.Clone(), Body: body, Event: ev, Answer: status, EventID: id})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) all() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// succeeded returns the event ids answered with a 2xx, in order.
func (r *receiver) succeeded() []string {
	var out []string
	for _, d := range r.all() {
		if d.Answer < 300 {
			out = append(out, d.EventID)
		}
	}
	return out
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func ptr[T any](v T) *T { return &v }

func (f *fixture) subscribe(tenant string, in eventstream.Input) eventstream.View {
	f.t.Helper()
	v, err := f.svc.Create(context.Background(), admin(tenant), in)
	if err != nil {
		f.t.Fatalf("Create: %v", err)
	}
	return v
}

var _ = fmt.Sprint
