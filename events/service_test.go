package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/memstore"
)

// sink keeps audit entries in memory.
type sink struct {
	mu      sync.Mutex
	entries []audit.Entry
	err     error
}

func (s *sink) Record(ctx context.Context, e audit.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, e)
	return s.err
}

func (s *sink) all() []audit.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audit.Entry(nil), s.entries...)
}

var start = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	svc   *events.Service
	store *memstore.Store
	sink  *sink
	clock *clocktest.Fake
}

func newService(t *testing.T) fixture {
	t.Helper()
	f := fixture{store: memstore.New(), sink: &sink{}, clock: clocktest.New(start)}
	f.svc = events.NewService(events.Config{Store: f.store, Audit: f.sink, Clock: f.clock, Retention: 24 * time.Hour, CleanupEvery: time.Hour})
	t.Cleanup(f.svc.Close)
	return f
}

func caller(tenant string, scopes ...string) identity.Principal {
	return identity.Principal{Kind: identity.KindClient, TenantID: tenant, ClientID: "c-" + tenant, Scopes: scopes}
}

var (
	tenantA  = identity.NewGUID()
	tenantB  = identity.NewGUID()
	producer = caller(tenantA, identity.ScopeEventProducer, identity.ScopeEventConsumer)
)

// TestPostRules checks each posting rule of the specification on one event
// of a post; every case is posted together with a valid event, which must
// be accepted whatever happens to the other (rule: each event on its own).
func TestPostRules(t *testing.T) {
	for _, tc := range []struct {
		name     string
		event    string
		accepted bool
		pointers []string // of the errors, when rejected
		stored   string   // the stored body, when accepted
	}{
		{"type required", `{"username":"a"}`, false, []string{"/event_type_id"}, ""},
		{"type null", `{"event_type_id":null}`, false, []string{"/event_type_id"}, ""},
		{"type not digits", `{"event_type_id":"abc"}`, false, []string{"/event_type_id"}, ""},
		{"native id below 10000", `{"event_type_id":"507"}`, false, []string{"/event_type_id"}, ""},
		{"9999", `{"event_type_id":9999}`, false, []string{"/event_type_id"}, ""},
		{"10000 is the lowest", `{"event_type_id":10000}`, true, nil, `{"event_type_id":"10000","timestamp":"2026-06-01T12:00:00.000000Z"}`},
		{"native category", `{"event_type_id":"10001","event_type_details":{"category":"Communication"}}`, false, []string{"/event_type_details/category"}, ""},
		{"own category", `{"event_type_id":"10001","event_type_details":{"category":"SHOP","name":"Cart"}}`, true, nil, `{"event_type_details":{"category":"SHOP","name":"Cart"},"event_type_id":"10001","timestamp":"2026-06-01T12:00:00.000000Z"}`},
		{"known attribute validated", `{"event_type_id":"10001","count":"three"}`, false, []string{"/count"}, ""},
		{"known date-time validated", `{"event_type_id":"10001","timestamp":"yesterday"}`, false, []string{"/timestamp"}, ""},
		{"nested known attribute validated", `{"event_type_id":"10001","end_user":{"id":7}}`, false, []string{"/end_user/id"}, ""},
		{"unknown attributes dropped", `{"event_type_id":"10001","colour":"red","end_user":{"id":"u1","shoe":42}}`, true, nil, `{"end_user":{"id":"u1"},"event_type_id":"10001","timestamp":"2026-06-01T12:00:00.000000Z"}`},
		{"timestamp normalised", `{"event_type_id":"10001","timestamp":"2026-05-01T02:00:00+02:00"}`, true, nil, `{"event_type_id":"10001","timestamp":"2026-05-01T00:00:00.000000Z"}`},
		{"not an object", `[1,2]`, false, []string{""}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newService(t)
			body := `{"case":` + tc.event + `,"good":{"event_type_id":"10001"}}`
			res, err := f.svc.PostExternal(t.Context(), producer, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if res["good"].Status != events.StatusAccepted {
				t.Errorf("the valid event was not accepted: %+v", res["good"])
			}
			got := res["case"]
			if tc.accepted != (got.Status == events.StatusAccepted) {
				t.Fatalf("status %+v, want accepted=%v", got, tc.accepted)
			}
			if !tc.accepted {
				var ptrs []string
				for _, e := range got.Errors {
					ptrs = append(ptrs, e.Pointer)
				}
				if diff := cmp.Diff(tc.pointers, ptrs); diff != "" {
					t.Errorf("error pointers (-want +got):\n%s", diff)
				}
				return
			}
			page, err := f.svc.Query(t.Context(), producer, events.QueryRequest{Filter: `event_type_id ne "10001" or timestamp lt "2026-06-01T00:00:00Z" or end_user pr or event_type_details pr`, Page: 1, Size: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Results) != 1 || page.Results[0].ID != got.ID {
				t.Fatalf("stored events %+v, want the case's event %s", page.Results, got.ID)
			}
			if diff := cmp.Diff(tc.stored, string(page.Results[0].Body)); diff != "" {
				t.Errorf("stored body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPostLimits(t *testing.T) {
	many := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"e%d":{"event_type_id":"10001"}`, i)
		}
		return b.String() + "}"
	}
	for _, tc := range []struct {
		name  string
		by    identity.Principal
		body  string
		kind  fault.Kind
		field string
	}{
		{"empty object", producer, `{}`, fault.Invalid, "body"},
		{"null", producer, `null`, fault.Invalid, "body"},
		{"array", producer, `[{"event_type_id":"10001"}]`, fault.Invalid, "body"},
		{"malformed", producer, `{"a":`, fault.Invalid, "body"},
		{"too many events", producer, many(events.MaxPostEvents + 1), fault.Invalid, "body"},
		{"too large", producer, `{"a":{"event_type_id":"10001","username":"` + strings.Repeat("x", events.MaxPostBytes) + `"}}`, fault.TooLarge, "body"},
		{"no producer scope", caller(tenantA, identity.ScopeEventConsumer), `{"a":{"event_type_id":"10001"}}`, fault.Forbidden, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newService(t)
			_, err := f.svc.PostExternal(t.Context(), tc.by, []byte(tc.body))
			if !fault.Is(tc.kind, err) || fault.FieldOf(err) != tc.field {
				t.Fatalf("err = %v (field %q), want %v for field %q", err, fault.FieldOf(err), tc.kind, tc.field)
			}
			if e := f.sink.all(); len(e) != 1 || e[0].Err == nil || e[0].Action != events.ActionPost {
				t.Errorf("audit entries %+v, want one failed post", e)
			}
		})
	}
	t.Run("most events accepted", func(t *testing.T) {
		f := newService(t)
		res, err := f.svc.PostExternal(t.Context(), producer, []byte(many(events.MaxPostEvents)))
		if err != nil || len(res) != events.MaxPostEvents {
			t.Fatalf("%d results, %v", len(res), err)
		}
	})
}

// TestPostAuditsOncePerRequest: one record per post with the counts, not
// one per event.
func TestPostAuditsOncePerRequest(t *testing.T) {
	f := newService(t)
	if _, err := f.svc.PostExternal(t.Context(), producer, []byte(`{"a":{"event_type_id":"10001"},"b":{"event_type_id":"10002"},"c":{"event_type_id":"1"}}`)); err != nil {
		t.Fatal(err)
	}
	want := []audit.Entry{{TenantID: tenantA, Source: audit.SourceEvents, Action: events.ActionPost, Meta: map[string]any{"accepted": 2, "rejected": 1}}}
	if diff := cmp.Diff(want, f.sink.all()); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

func TestPostFailsWhenAuditFails(t *testing.T) {
	f := newService(t)
	f.sink.err = errors.New("disk full")
	_, err := f.svc.PostExternal(t.Context(), producer, []byte(`{"a":{"event_type_id":"10001"}}`))
	if !fault.Is(fault.Unavailable, err) {
		t.Errorf("err = %v, want fault.Unavailable", err)
	}
}

func TestQueryLimits(t *testing.T) {
	f := newService(t)
	consumer := caller(tenantA, identity.ScopeEventConsumer)
	for _, tc := range []struct {
		name  string
		by    identity.Principal
		q     events.QueryRequest
		kind  fault.Kind
		field string
	}{
		{"page 0", consumer, events.QueryRequest{Page: 0, Size: 20}, fault.Invalid, "page"},
		{"page too large", consumer, events.QueryRequest{Page: events.MaxPage + 1, Size: 20}, fault.Invalid, "page"},
		{"size 0", consumer, events.QueryRequest{Page: 1, Size: 0}, fault.Invalid, "size"},
		{"size 101", consumer, events.QueryRequest{Page: 1, Size: 101}, fault.Invalid, "size"},
		{"user id too long", consumer, events.QueryRequest{Page: 1, Size: 1, UserID: strings.Repeat("u", 257)}, fault.Invalid, "user_id"},
		{"bad filter", consumer, events.QueryRequest{Page: 1, Size: 1, Filter: `a eq`}, fault.Invalid, "filter"},
		{"no consumer scope", caller(tenantA, identity.ScopeEventProducer), events.QueryRequest{Page: 1, Size: 20}, fault.Forbidden, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.svc.Query(t.Context(), tc.by, tc.q)
			if !fault.Is(tc.kind, err) || fault.FieldOf(err) != tc.field {
				t.Errorf("err = %v (field %q), want %v for field %q", err, fault.FieldOf(err), tc.kind, tc.field)
			}
		})
	}
	for _, size := range []int{1, 100} {
		if _, err := f.svc.Query(t.Context(), consumer, events.QueryRequest{Page: 1, Size: size}); err != nil {
			t.Errorf("size %d: %v", size, err)
		}
	}
}

// TestQueryIsolationAndUsers: a consumer of tenant B never sees tenant A's
// events; a consumer sees every user's events of its own tenant.
func TestQueryIsolationAndUsers(t *testing.T) {
	f := newService(t)
	body := `{"a":{"event_type_id":"10001","end_user":{"id":"alice"}},"b":{"event_type_id":"10001","end_user":{"id":"bob"},"authenticated_user":{"id":"admin"}}}`
	if _, err := f.svc.PostExternal(t.Context(), producer, []byte(body)); err != nil {
		t.Fatal(err)
	}
	count := func(by identity.Principal, user string) int {
		t.Helper()
		p, err := f.svc.Query(t.Context(), by, events.QueryRequest{UserID: user, Page: 1, Size: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Results)
	}
	b := caller(tenantB, identity.ScopeEventConsumer, identity.ScopeEventProducer)
	for _, tc := range []struct {
		by   identity.Principal
		user string
		want int
	}{{producer, "", 2}, {producer, "alice", 1}, {producer, "admin", 1}, {producer, "carol", 0}, {b, "", 0}, {b, "alice", 0}} {
		if got := count(tc.by, tc.user); got != tc.want {
			t.Errorf("tenant %s user %q: %d events, want %d", tc.by.TenantID, tc.user, got, tc.want)
		}
	}
}

func TestEmitNative(t *testing.T) {
	f := newService(t)
	ev, err := f.svc.EmitNative(t.Context(), tenantA, json.RawMessage(`{"event_type_id":"507","phone_number":"+15550100","username":"dropped"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event_type_details":{"category":"COMMUNICATION","name":"OTP SMS sent"},"event_type_id":"507","phone_number":"+15550100","timestamp":"2026-06-01T12:00:00.000000Z"}`
	if diff := cmp.Diff(want, string(ev.Body)); diff != "" || ev.Seq != 1 || ev.ID == "" {
		t.Errorf("event %+v; body (-want +got):\n%s", ev, diff)
	}
	_, err = f.svc.EmitNative(t.Context(), tenantA, json.RawMessage(`{"event_type_id":"10001"}`))
	var fe events.FieldErrors
	if !fault.Is(fault.Invalid, err) || !errors.As(err, &fe) {
		t.Errorf("external type emitted as native: %v", err)
	}
}

// TestRetention drives Run with the fake clock: events older than the
// retention are deleted by the background pass, younger ones are kept.
func TestRetention(t *testing.T) {
	f := newService(t)
	post := func(name string) {
		t.Helper()
		if _, err := f.svc.PostExternal(t.Context(), producer, []byte(`{"`+name+`":{"event_type_id":"10001","username":"`+name+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	f.clock.WaitForTimers(1) // the first pass ran and Run sleeps
	post("old")
	f.clock.Advance(23 * time.Hour)
	f.clock.WaitForTimers(1)
	post("young")
	f.clock.Advance(2 * time.Hour) // "old" is 25h old, "young" 2h
	f.clock.WaitForTimers(1)       // the pass after the advance has run

	p, err := f.svc.Query(t.Context(), producer, events.QueryRequest{Page: 1, Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range p.Results {
		var m map[string]any
		json.Unmarshal(e.Body, &m)
		names = append(names, m["username"].(string))
	}
	if diff := cmp.Diff([]string{"young"}, names); diff != "" {
		t.Errorf("events after retention (-want +got):\n%s", diff)
	}
}

// TestConcurrentPostsGroupCommit: concurrent single-event posts all land,
// with a gap-free sequence.
func TestConcurrentPostsGroupCommit(t *testing.T) {
	f := newService(t)
	const posters = 64
	var wg sync.WaitGroup
	for i := range posters {
		wg.Go(func() {
			res, err := f.svc.PostExternal(context.Background(), producer, []byte(fmt.Sprintf(`{"e":{"event_type_id":"10001","count":%d}}`, i)))
			if err != nil || res["e"].Status != events.StatusAccepted {
				t.Errorf("post %d: %+v %v", i, res, err)
			}
		})
	}
	wg.Wait()
	got, err := f.store.ListEventsAfter(t.Context(), tenantA, 0, nil, time.Time{}, 1000)
	if err != nil || len(got) != posters {
		t.Fatalf("%d events stored, %v", len(got), err)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Fatalf("seq %d at %d", e.Seq, i)
		}
	}
}

func TestClosedServiceRefusesPosts(t *testing.T) {
	f := newService(t)
	f.svc.Close()
	_, err := f.svc.PostExternal(t.Context(), producer, []byte(`{"a":{"event_type_id":"10001"}}`))
	if !fault.Is(fault.Unavailable, err) || !errors.Is(err, events.ErrClosed) {
		t.Errorf("err = %v, want Unavailable wrapping ErrClosed", err)
	}
}

// auditedFixture is a service on the memory store with a real audit
// recorder: records of successful posts go in the events' transaction.
type auditedFixture struct {
	svc   *events.Service
	store *memstore.Store
	rec   *audit.Recorder
}

// failingInstances is an audit log store that cannot create service
// instances, so the recorder can neither build nor store a record.
type failingInstances struct{ *memstore.Store }

func (failingInstances) EnsureServiceInstance(context.Context, audit.ServiceInstance) (audit.ServiceInstance, error) {
	return audit.ServiceInstance{}, errors.New("disk full")
}

// failingAppend is an events store whose combined appends fail.
type failingAppend struct{ *memstore.Store }

func (failingAppend) AppendEventsAudited(context.Context, []*events.Event, []*audit.Record) error {
	return fault.E(fault.Internal, "disk full")
}

func newAudited(t *testing.T, evStore events.Store, logStore audit.LogStore, st *memstore.Store) auditedFixture {
	t.Helper()
	c := clocktest.New(start)
	rec := audit.NewRecorder(logStore, c, nil)
	t.Cleanup(rec.Close)
	svc := events.NewService(events.Config{Store: evStore, Audit: rec, Clock: c})
	t.Cleanup(svc.Close)
	return auditedFixture{svc: svc, store: st, rec: rec}
}

func auditLog(t *testing.T, st *memstore.Store, tenant string) []audit.Record {
	t.Helper()
	recs, err := st.ListAuditRecords(t.Context(), tenant, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// Concurrent posts on an audited store: every post has exactly one success
// record and its events, with gap-free sequences in both logs.
func TestAuditedPostsRecordInEventsTransaction(t *testing.T) {
	st := memstore.New()
	f := newAudited(t, st, st, st)
	const posters = 32
	var wg sync.WaitGroup
	for i := range posters {
		wg.Go(func() {
			res, err := f.svc.PostExternal(context.Background(), producer, []byte(fmt.Sprintf(`{"e":{"event_type_id":"10001","count":%d},"x":{"event_type_id":"1"}}`, i)))
			if err != nil || res["e"].Status != events.StatusAccepted {
				t.Errorf("post %d: %+v %v", i, res, err)
			}
		})
	}
	wg.Wait()
	evs, err := st.ListEventsAfter(t.Context(), tenantA, 0, nil, time.Time{}, 1000)
	if err != nil || len(evs) != posters {
		t.Fatalf("%d events stored, %v", len(evs), err)
	}
	recs := auditLog(t, st, tenantA)
	if len(recs) != posters {
		t.Fatalf("%d audit records, want one per post (%d)", len(recs), posters)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) || r.Action != events.ActionPost || r.Status != audit.StatusSuccess ||
			fmt.Sprint(r.Meta["accepted"], r.Meta["rejected"], r.Meta["client_id"]) != "1 1 <nil>" {
			t.Errorf("record %d = %+v", i, r)
		}
	}
	if s := f.svc.IngestStats(); s.Requests != posters || s.Events != posters || s.Batches < 1 || s.Batches > posters {
		t.Errorf("stats = %+v", s)
	}
}

// When the audit record cannot be built, the post fails and stores nothing.
func TestAuditedPostFailsWhenAuditFails(t *testing.T) {
	st := memstore.New()
	f := newAudited(t, st, failingInstances{st}, st)
	_, err := f.svc.PostExternal(t.Context(), producer, []byte(`{"a":{"event_type_id":"10001"}}`))
	if !fault.Is(fault.Unavailable, err) {
		t.Errorf("err = %v, want fault.Unavailable", err)
	}
	if evs, _ := st.ListEventsAfter(t.Context(), tenantA, 0, nil, time.Time{}, 10); len(evs) != 0 {
		t.Errorf("%d events stored by a failed post", len(evs))
	}
}

// When the events-and-record transaction fails, the post fails, nothing of
// it is stored but a separate failure record.
func TestAuditedPostTransactionFailure(t *testing.T) {
	st := memstore.New()
	f := newAudited(t, failingAppend{st}, st, st)
	_, err := f.svc.PostExternal(t.Context(), producer, []byte(`{"a":{"event_type_id":"10001"}}`))
	if !fault.Is(fault.Internal, err) {
		t.Errorf("err = %v, want the store's fault.Internal", err)
	}
	if evs, _ := st.ListEventsAfter(t.Context(), tenantA, 0, nil, time.Time{}, 10); len(evs) != 0 {
		t.Errorf("%d events stored by a failed post", len(evs))
	}
	recs := auditLog(t, st, tenantA)
	if len(recs) != 1 || recs[0].Status != audit.StatusFailed {
		t.Errorf("audit = %+v, want one failure record", recs)
	}
}
