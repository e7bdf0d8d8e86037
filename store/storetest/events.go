package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

// NewEvent validates raw (a JSON event) as an external event received at
// receivedAt, or as a native one when its type has three digits, and
// returns it ready for AppendEvents in tenant. It fails the test when raw
// is not a valid event.
func NewEvent(tb testing.TB, tenantID, raw string, receivedAt time.Time) *events.Event {
	tb.Helper()
	validate := events.ValidateExternal
	var probe struct {
		Type json.RawMessage `json:"event_type_id"`
	}
	json.Unmarshal([]byte(raw), &probe)
	if len(probe.Type) == 5 { // "NNN" with its quotes
		validate = events.ValidateNative
	}
	ev, errs := validate(json.RawMessage(raw), receivedAt)
	if len(errs) > 0 {
		tb.Fatalf("NewEvent(%s): %v", raw, events.FieldErrors(errs))
	}
	ev.TenantID = tenantID
	return &ev
}

// userEvent is an external event of type typeID for user, with a segment.
func userEvent(tb testing.TB, tenantID string, i int, typeID, user, segment string) *events.Event {
	tb.Helper()
	raw := fmt.Sprintf(`{"event_type_id":%q,"timestamp":%q,"end_user":{"id":%q,"segment":%q},"count":%d}`,
		typeID, Epoch.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), user, segment, i)
	return NewEvent(tb, tenantID, raw, Epoch.Add(time.Duration(i)*time.Second))
}

// sameJSON compares bodies as JSON values: a store may keep the body in a
// form (PostgreSQL jsonb) that reorders keys.
var sameJSON = cmp.Comparer(func(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
})

func seqs(evs []events.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// mustQuery runs QueryEvents and returns the seqs of the page and the total.
func mustQuery(t *testing.T, ctx context.Context, s Store, tenantID string, q events.Query) ([]int64, int) {
	t.Helper()
	evs, total, err := s.QueryEvents(ctx, tenantID, q)
	if err != nil {
		t.Fatalf("QueryEvents(%+v): %v", q, err)
	}
	for _, e := range evs {
		if e.TenantID != tenantID {
			t.Fatalf("QueryEvents of %s returned an event of %s", tenantID, e.TenantID)
		}
	}
	return seqs(evs), total
}

func mustParse(t *testing.T, f string) filter.Expr {
	t.Helper()
	e, err := filter.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var eventTests = []test{
	{"EventsAppendAssignsSeqPerTenant", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		batch := []*events.Event{userEvent(t, a, 1, "10001", "u1", "gold"), userEvent(t, b, 2, "10001", "u1", "gold"), userEvent(t, a, 3, "10002", "u2", "blue")}
		if err := s.AppendEvents(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int64{1, 1, 2}, []int64{batch[0].Seq, batch[1].Seq, batch[2].Seq}); diff != "" {
			t.Errorf("seqs (-want +got):\n%s", diff)
		}
		for _, e := range batch {
			if !identity.IsGUID(e.ID) {
				t.Errorf("id %q is not a GUID", e.ID)
			}
		}
		more := userEvent(t, a, 4, "10001", "u1", "gold")
		if err := s.AppendEvents(ctx, []*events.Event{more}); err != nil {
			t.Fatal(err)
		}
		if more.Seq != 3 {
			t.Errorf("next seq of a = %d, want 3", more.Seq)
		}
		got, err := s.ListEventsAfter(ctx, a, 0, nil, time.Time{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []events.Event{*batch[0], *batch[2], *more}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), sameJSON); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if err := s.AppendEvents(ctx, nil); err != nil {
			t.Errorf("empty append: %v", err)
		}
	}},
	{"EventsKeepTraceParent", func(t *testing.T, ctx context.Context, s Store) {
		// The traceparent of the appending request's span is stored with
		// the event and read back by every read of the log, so that a
		// delivery made later, in any process, links to that span; an
		// event appended without one reads back without one.
		a := identity.NewGUID()
		traced, untraced := userEvent(t, a, 1, "10001", "u1", "gold"), userEvent(t, a, 2, "10001", "u1", "gold")
		traced.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		if err := s.AppendEvents(ctx, []*events.Event{traced, untraced}); err != nil {
			t.Fatal(err)
		}
		want := []string{traced.TraceParent, ""}
		after, err := s.ListEventsAfter(ctx, a, 0, nil, time.Time{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		page, _, err := s.QueryEvents(ctx, a, events.Query{Limit: 10})
		if err != nil || len(page) != 2 {
			t.Fatalf("QueryEvents = %d events, %v; want 2", len(page), err)
		}
		for name, evs := range map[string][]events.Event{"ListEventsAfter": after, "QueryEvents": {page[1], page[0]}} {
			var got []string
			for _, e := range evs {
				got = append(got, e.TraceParent)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: trace parents (-want +got):\n%s", name, diff)
			}
		}
	}},
	{"EventsTenantIsolation", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		if err := s.AppendEvents(ctx, []*events.Event{userEvent(t, a, 1, "10001", "u1", "gold"), userEvent(t, a, 2, "10001", "u1", "gold")}); err != nil {
			t.Fatal(err)
		}
		for _, q := range []events.Query{
			{Limit: 10, CountLimit: 100},
			{UserID: "u1", Limit: 10, CountLimit: 100},
			{Filter: mustParse(t, `event_type_id eq "10001"`), Limit: 10, CountLimit: 100},
		} {
			if got, total := mustQuery(t, ctx, s, b, q); len(got) != 0 || total != 0 {
				t.Errorf("tenant b sees %v (total %d) of tenant a with %+v", got, total, q)
			}
		}
		if got, err := s.ListEventsAfter(ctx, b, 0, nil, time.Time{}, 10); err != nil || len(got) != 0 {
			t.Errorf("ListEventsAfter(b) = %v, %v", got, err)
		}
		if n, err := s.DeleteEventsBefore(ctx, b, Epoch.Add(time.Hour), 100); err != nil || n != 0 {
			t.Errorf("DeleteEventsBefore(b) = %d, %v", n, err)
		}
		if got, _ := mustQuery(t, ctx, s, a, events.Query{Limit: 10}); len(got) != 2 {
			t.Errorf("tenant a lost events: %v", got)
		}
	}},
	{"EventsQueryByUserAndFilter", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		batch := []*events.Event{
			userEvent(t, a, 1, "10001", "alice", "gold"),   // seq 1
			userEvent(t, a, 2, "10002", "bob", "gold"),     // seq 2
			userEvent(t, a, 3, "10001", "bob", "silver"),   // seq 3
			userEvent(t, a, 4, "10003", "alice", "bronze"), // seq 4
			NewEvent(t, a, `{"event_type_id":"10001","end_user":{"id":"carol"},"authenticated_user":{"id":"alice"}}`, Epoch.Add(5*time.Second)), // seq 5
			NewEvent(t, a, `{"event_type_id":"304","end_user":{"id":"dave"}}`, Epoch.Add(6*time.Second)),                                        // seq 6, native
		}
		if err := s.AppendEvents(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			user   string
			filter string
			want   []int64
		}{
			{"all, newest first", "", "", []int64{6, 5, 4, 3, 2, 1}},
			{"end user", "bob", "", []int64{3, 2}},
			{"end or authenticated user", "alice", "", []int64{5, 4, 1}},
			{"unknown user", "zoe", "", nil},
			{"type column", "", `event_type_id eq "10001"`, []int64{5, 3, 1}},
			{"type column ne", "", `event_type_id ne "10001"`, []int64{6, 4, 2}},
			{"type prefix", "", `event_type_id sw "1000"`, []int64{5, 4, 3, 2, 1}},
			{"native type", "", `event_type_id eq "304"`, []int64{6}},
			{"body attribute", "", `end_user.segment eq "gold"`, []int64{2, 1}},
			{"number", "", `count ge 3`, []int64{4, 3}},
			{"time column", "", `timestamp gt "` + Epoch.Add(2*time.Second).Format(time.RFC3339Nano) + `"`, []int64{6, 5, 4, 3}},
			{"time range", "", `timestamp ge "` + Epoch.Add(2*time.Second).Format(time.RFC3339Nano) + `" and timestamp lt "` + Epoch.Add(4*time.Second).Format(time.RFC3339Nano) + `"`, []int64{3, 2}},
			{"or and precedence", "", `end_user.segment eq "bronze" or event_type_id eq "10002" and end_user.segment eq "gold"`, []int64{4, 2}},
			{"parentheses", "", `(end_user.segment eq "bronze" or event_type_id eq "10002") and count lt 3`, []int64{2}},
			{"not", "", `not (end_user.segment pr)`, []int64{6, 5}},
			{"user and filter", "alice", `event_type_id eq "10001"`, []int64{5, 1}},
			{"contains", "", `end_user.segment co "il"`, []int64{3}},
			{"ends with", "", `end_user.segment ew "ze"`, []int64{4}},
			{"category", "", `event_type_details.category eq "CREDENTIAL_MANAGEMENT"`, []int64{6}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				q := events.Query{UserID: tc.user, Limit: 100, CountLimit: 100}
				if tc.filter != "" {
					q.Filter = mustParse(t, tc.filter)
				}
				got, total := mustQuery(t, ctx, s, a, q)
				if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("seqs (-want +got):\n%s", diff)
				}
				if total != len(tc.want) {
					t.Errorf("total %d, want %d", total, len(tc.want))
				}
			})
		}
	}},
	{"EventsQueryPaging", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		var batch []*events.Event
		for i := range 25 {
			batch = append(batch, userEvent(t, a, i, "10001", "u", "gold"))
		}
		if err := s.AppendEvents(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name               string
			offset, limit, cap int
			want               []int64
			total              int
		}{
			{"first page", 0, 3, 100, []int64{25, 24, 23}, 25},
			{"second page", 3, 3, 100, []int64{22, 21, 20}, 25},
			{"last partial page", 24, 3, 100, []int64{1}, 25},
			{"past the end", 30, 3, 100, nil, 25},
			{"count capped", 0, 2, 10, []int64{25, 24}, 10},
			{"count skipped", 0, 1, 0, []int64{25}, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, total := mustQuery(t, ctx, s, a, events.Query{Offset: tc.offset, Limit: tc.limit, CountLimit: tc.cap})
				if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("seqs (-want +got):\n%s", diff)
				}
				if total != tc.total {
					t.Errorf("total %d, want %d", total, tc.total)
				}
			})
		}
	}},
	{"EventsQueryInvalidFilter", func(t *testing.T, ctx context.Context, s Store) {
		// A hand-built tree with a path Parse would refuse.
		bad := filter.Compare{Path: filter.Path{"x'; --"}, Op: filter.Eq, Value: filter.Value{Kind: filter.String, Str: "a"}}
		_, _, err := s.QueryEvents(ctx, identity.NewGUID(), events.Query{Filter: bad, Limit: 10})
		if err != nil && !fault.Is(fault.Invalid, err) {
			t.Errorf("err = %v, want nil (memstore) or fault.Invalid", err)
		}
	}},
	{"EventsListAfter", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		batch := []*events.Event{
			userEvent(t, a, 1, "10001", "u", "gold"),
			userEvent(t, a, 2, "10002", "u", "gold"),
			userEvent(t, a, 3, "10001", "u", "gold"),
			userEvent(t, a, 4, "10003", "u", "gold"),
			userEvent(t, a, 5, "10001", "u", "gold"),
		}
		if err := s.AppendEvents(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name      string
			after     int64
			types     []string
			notBefore time.Time
			limit     int
			want      []int64
		}{
			{"all", 0, nil, time.Time{}, 10, []int64{1, 2, 3, 4, 5}},
			{"after cursor", 2, nil, time.Time{}, 10, []int64{3, 4, 5}},
			{"limit", 0, nil, time.Time{}, 2, []int64{1, 2}},
			{"one type", 0, []string{"10001"}, time.Time{}, 10, []int64{1, 3, 5}},
			{"two types after cursor", 1, []string{"10001", "10003"}, time.Time{}, 10, []int64{3, 4, 5}},
			{"unknown type", 0, []string{"99999"}, time.Time{}, 10, nil},
			{"retention window", 0, nil, Epoch.Add(4 * time.Second), 10, []int64{4, 5}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := s.ListEventsAfter(ctx, a, tc.after, tc.types, tc.notBefore, tc.limit)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, seqs(got), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("seqs (-want +got):\n%s", diff)
				}
			})
		}
	}},
	{"EventsReceivedAtNeverDecreasesAlongSeqs", func(t *testing.T, ctx context.Context, s Store) {
		// Received times reach the store out of order (two processes'
		// clocks, a post that waited behind a later one for its commit):
		// each is raised to the tenant's last, within an append and across
		// appends, and each tenant keeps its own.
		a, b := identity.NewGUID(), identity.NewGUID()
		ev := func(tenant string, sec int) *events.Event { return userEvent(t, tenant, sec, "10001", "u", "gold") }
		at := func(secs ...int) []time.Time {
			var out []time.Time
			for _, sec := range secs {
				out = append(out, Epoch.Add(time.Duration(sec)*time.Second))
			}
			return out
		}
		var passed []*events.Event
		for _, batch := range [][]*events.Event{
			{ev(a, 10), ev(a, 5), ev(b, 3)},
			{ev(a, 7)},
			{ev(a, 10), ev(a, 12), ev(b, 1)},
		} {
			if err := s.AppendEvents(ctx, batch); err != nil {
				t.Fatal(err)
			}
			passed = append(passed, batch...)
		}
		for _, tc := range []struct {
			name   string
			tenant string
			want   []time.Time
		}{
			{"a", a, at(10, 10, 10, 10, 12)},
			{"b", b, at(3, 3)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := s.ListEventsAfter(ctx, tc.tenant, 0, nil, time.Time{}, 10)
				if err != nil {
					t.Fatal(err)
				}
				var stored, updated []time.Time
				for _, e := range got {
					stored = append(stored, e.ReceivedAt)
				}
				for _, e := range passed {
					if e.TenantID == tc.tenant {
						updated = append(updated, e.ReceivedAt)
					}
				}
				if diff := cmp.Diff(tc.want, stored); diff != "" {
					t.Errorf("stored received times (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.want, updated); diff != "" {
					t.Errorf("received times of the events passed in (-want +got):\n%s", diff)
				}
			})
		}
	}},
	{"EventsRetention", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		var batch []*events.Event
		for i := range 6 {
			batch = append(batch, userEvent(t, a, i, "10001", "u", "gold"), userEvent(t, b, i, "10001", "u", "gold"))
		}
		if err := s.AppendEvents(ctx, batch); err != nil {
			t.Fatal(err)
		}
		cutoff := Epoch.Add(3 * time.Second) // events 0, 1, 2 of each tenant are older
		if n, err := s.DeleteEventsBefore(ctx, a, cutoff, 100); err != nil || n != 3 {
			t.Fatalf("delete of tenant a = %d, %v; want 3", n, err)
		}
		if got, total := mustQuery(t, ctx, s, a, events.Query{Limit: 10, CountLimit: 100}); !cmp.Equal(got, []int64{6, 5, 4}) || total != 3 {
			t.Errorf("tenant a after retention: %v (total %d)", got, total)
		}
		if got, _ := mustQuery(t, ctx, s, b, events.Query{Limit: 10}); len(got) != 6 {
			t.Errorf("tenant b lost events to a's retention: %v", got)
		}
		if got, _ := mustQuery(t, ctx, s, a, events.Query{UserID: "u", Limit: 10}); !cmp.Equal(got, []int64{6, 5, 4}) {
			t.Errorf("user query after retention: %v", got)
		}
		// Every tenant, in chunks.
		total := 0
		for {
			n, err := s.DeleteEventsBefore(ctx, "", Epoch.Add(time.Hour), 4)
			if err != nil {
				t.Fatal(err)
			}
			total += n
			if n < 4 {
				break
			}
		}
		if total != 9 {
			t.Errorf("deleted %d, want 9", total)
		}
		for _, tenant := range []string{a, b} {
			if got, _ := mustQuery(t, ctx, s, tenant, events.Query{Limit: 10}); len(got) != 0 {
				t.Errorf("events left: %v", got)
			}
		}
		// Sequence numbers are not reused once the log is empty.
		next := userEvent(t, a, 10, "10001", "u", "gold")
		if err := s.AppendEvents(ctx, []*events.Event{next}); err != nil {
			t.Fatal(err)
		}
		if next.Seq != 7 {
			t.Errorf("seq after retention = %d, want 7", next.Seq)
		}
	}},
	{"ConcurrentEventAppendsAreGapFree", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		const writers, batches = 6, 10
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range batches {
					evs := []*events.Event{userEvent(t, a, w*100+i, "10001", "u", "gold"), userEvent(t, b, i, "10001", "u", "gold"), userEvent(t, a, w*100+i, "10002", "v", "gold")}
					if err := s.AppendEvents(ctx, evs); err != nil {
						t.Errorf("append: %v", err)
						return
					}
					if evs[2].Seq != evs[0].Seq+1 {
						t.Errorf("one batch's events of a tenant are not consecutive: %d, %d", evs[0].Seq, evs[2].Seq)
					}
				}
			})
		}
		wg.Wait()
		for tenant, n := range map[string]int{a: writers * batches * 2, b: writers * batches} {
			got, err := s.ListEventsAfter(ctx, tenant, 0, nil, time.Time{}, 10000)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d events, want %d", len(got), n)
			}
			for i, e := range got {
				if e.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d: the log has a gap or a duplicate", i, e.Seq)
				}
				// Writers append received times out of order; the log
				// keeps them in order along the seqs whoever commits first.
				if i > 0 && e.ReceivedAt.Before(got[i-1].ReceivedAt) {
					t.Fatalf("seq %d received at %v, before seq %d at %v", e.Seq, e.ReceivedAt, got[i-1].Seq, got[i-1].ReceivedAt)
				}
			}
		}
	}},
}
