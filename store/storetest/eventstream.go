package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// NewSubscription returns a push subscription of tenant for tests, with
// every field set so that a round trip checks each column.
func NewSubscription(tenantID, id string) eventstream.Subscription {
	return eventstream.Subscription{
		TenantID: tenantID, ID: id, Kind: eventstream.KindStream, Endpoint: "https://hooks.example.com/" + id,
		EventTypes: []string{"401", "10001"}, MaxPerSecond: 50, NumberOfRetries: 2,
		Auth:      eventstream.Auth{Type: eventstream.AuthBasic, Username: "u", Sealed: []byte{1, 2, 3}},
		CreatedAt: Epoch, UpdatedAt: Epoch.Add(time.Second), Cursor: 7, CursorAt: Epoch.Add(-time.Hour),
		Status: eventstream.Status{LastSuccessAt: Epoch, LastErrorAt: Epoch.Add(time.Minute), LastError: "boom", Delivered: 3, DeadLettered: 1},
	}
}

func mustCreateSub(t *testing.T, ctx context.Context, s Store, sub eventstream.Subscription) {
	t.Helper()
	if err := s.CreateSubscription(ctx, sub); err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
}

func getSub(t *testing.T, ctx context.Context, s Store, tenantID, id string) eventstream.Subscription {
	t.Helper()
	sub, err := s.GetSubscription(ctx, tenantID, id)
	if err != nil {
		t.Fatalf("GetSubscription: %v", err)
	}
	return sub
}

var eventStreamTests = []test{
	{"EventStreamSubscriptionRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		sub := NewSubscription("t1", "s1")
		mustCreateSub(t, ctx, s, sub)
		if diff := cmp.Diff(sub, getSub(t, ctx, s, "t1", "s1")); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		ds := NewSubscription("t1", "s2")
		ds.Kind, ds.Auth = eventstream.KindDirectorySync, eventstream.Auth{Type: eventstream.AuthNone}
		ds.Connect = &eventstream.Connect{IdpURI: "https://idp.example.com/scim", ClientID: "c1"}
		ds.GroupConfig = []eventstream.GroupMapping{{NodeType: "user", RelationshipType: "member"}, {NodeType: "group", RelationshipType: "owner"}}
		mustCreateSub(t, ctx, s, ds)
		if diff := cmp.Diff(ds, getSub(t, ctx, s, "t1", "s2")); diff != "" {
			t.Errorf("directory sync round trip (-want +got):\n%s", diff)
		}
		if err := s.CreateSubscription(ctx, sub); !fault.Is(fault.Conflict, err) {
			t.Errorf("duplicate create: %v, want Conflict", err)
		}
		if _, err := s.GetSubscription(ctx, "t2", "s1"); !fault.Is(fault.NotFound, err) {
			t.Errorf("another tenant's get: %v, want NotFound", err)
		}
	}},
	{"EventStreamListPagesByIDWithinTenantAndKind", func(t *testing.T, ctx context.Context, s Store) {
		for i := range 5 {
			mustCreateSub(t, ctx, s, NewSubscription("t1", fmt.Sprintf("s%d", i)))
		}
		mustCreateSub(t, ctx, s, NewSubscription("t2", "s9"))
		ds := NewSubscription("t1", "d1")
		ds.Kind = eventstream.KindDirectorySync
		mustCreateSub(t, ctx, s, ds)
		var got []string
		after := ""
		for {
			page, err := s.ListSubscriptions(ctx, "t1", eventstream.KindStream, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page {
				got = append(got, p.ID)
			}
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1].ID
		}
		if diff := cmp.Diff([]string{"s0", "s1", "s2", "s3", "s4"}, got); diff != "" {
			t.Errorf("listing (-want +got):\n%s", diff)
		}
	}},
	{"EventStreamUpdateKeepsDeliveryStateAndResumes", func(t *testing.T, ctx context.Context, s Store) {
		sub := NewSubscription("t1", "s1")
		sub.Status.Paused, sub.Status.PausedAt, sub.Status.FailingSince = true, Epoch, Epoch
		mustCreateSub(t, ctx, s, sub)
		up := sub
		up.EventTypes, up.MaxPerSecond, up.NumberOfRetries = []string{"402"}, 7, 0
		up.Auth = eventstream.Auth{Type: eventstream.AuthHMAC, Sealed: []byte{9}}
		up.UpdatedAt = Epoch.Add(time.Hour)
		// Fields the update must not touch.
		up.Endpoint, up.Cursor, up.CursorAt, up.Status.Delivered, up.Kind = "https://other.example.com", 99, Epoch.Add(time.Hour), 42, eventstream.KindDirectorySync
		if err := s.UpdateSubscription(ctx, up, false); err != nil {
			t.Fatal(err)
		}
		got := getSub(t, ctx, s, "t1", "s1")
		want := sub
		want.EventTypes, want.MaxPerSecond, want.NumberOfRetries, want.Auth, want.UpdatedAt = up.EventTypes, 7, 0, up.Auth, up.UpdatedAt
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}
		if err := s.UpdateSubscription(ctx, up, true); err != nil {
			t.Fatal(err)
		}
		if got := getSub(t, ctx, s, "t1", "s1"); got.Status.Paused || !got.Status.PausedAt.IsZero() || !got.Status.FailingSince.IsZero() {
			t.Errorf("resume left %+v", got.Status)
		}
		if err := s.UpdateSubscription(ctx, NewSubscription("t2", "s1"), false); !fault.Is(fault.NotFound, err) {
			t.Errorf("update of another tenant's: %v, want NotFound", err)
		}
	}},
	{"EventStreamDeleteByKindRemovesDeadLetters", func(t *testing.T, ctx context.Context, s Store) {
		mustCreateSub(t, ctx, s, NewSubscription("t1", "s1"))
		claim(t, ctx, s, "w1", Epoch)
		if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: "t1", SubscriptionID: "s1", Owner: "w1", Now: Epoch, Cursor: 8,
			NewDeadLetters: []eventstream.DeadLetter{newLetter("t1", "s1", "m1")}}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteSubscription(ctx, "t1", eventstream.KindDirectorySync, "s1"); !fault.Is(fault.NotFound, err) {
			t.Errorf("delete with the wrong kind: %v, want NotFound", err)
		}
		if err := s.DeleteSubscription(ctx, "t2", eventstream.KindStream, "s1"); !fault.Is(fault.NotFound, err) {
			t.Errorf("delete of another tenant's: %v, want NotFound", err)
		}
		if err := s.DeleteSubscription(ctx, "t1", eventstream.KindStream, "s1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetSubscription(ctx, "t1", "s1"); !fault.Is(fault.NotFound, err) {
			t.Errorf("get after delete: %v", err)
		}
		mustCreateSub(t, ctx, s, NewSubscription("t1", "s1"))
		if dl, _ := s.ListDeadLetters(ctx, "t1", "s1", "", false, 10); len(dl) != 0 {
			t.Errorf("dead letters survived their subscription: %v", dl)
		}
	}},
	{"EventStreamLeasesAreExclusiveAndLapse", func(t *testing.T, ctx context.Context, s Store) {
		for i := range 3 {
			mustCreateSub(t, ctx, s, NewSubscription("t1", fmt.Sprintf("s%d", i)))
		}
		got, err := s.ClaimSubscriptions(ctx, "w1", Epoch, time.Minute, 2)
		if err != nil || len(got) != 2 {
			t.Fatalf("w1 claims %d (err %v), want 2 (limit)", len(got), err)
		}
		got2, err := s.ClaimSubscriptions(ctx, "w2", Epoch.Add(time.Second), time.Minute, 10)
		if err != nil || len(got2) != 1 || got2[0].LeaseOwner != "w2" {
			t.Fatalf("w2 claims %v (err %v), want the one left", got2, err)
		}
		// w1 renews its own even with limit 0.
		again, err := s.ClaimSubscriptions(ctx, "w1", Epoch.Add(30*time.Second), time.Minute, 0)
		if err != nil || len(again) != 2 || !again[0].LeaseUntil.Equal(Epoch.Add(90*time.Second)) {
			t.Fatalf("w1 renews %v (err %v)", again, err)
		}
		// w2's lapses (it died) and w1 takes it over.
		over, err := s.ClaimSubscriptions(ctx, "w1", Epoch.Add(61*time.Second), time.Minute, 10)
		if err != nil || len(over) != 3 {
			t.Fatalf("takeover: %d subscriptions (err %v), want 3", len(over), err)
		}
		// The dead process's write is refused.
		err = s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: "t1", SubscriptionID: got2[0].ID, Owner: "w2", Now: Epoch.Add(62 * time.Second), Cursor: 100})
		if !fault.Is(fault.Conflict, err) {
			t.Errorf("RecordDelivery without the lease: %v, want Conflict", err)
		}
		if c := getSub(t, ctx, s, "t1", got2[0].ID).Cursor; c != 7 {
			t.Errorf("cursor moved to %d by a refused write", c)
		}
		if err := s.ReleaseSubscription(ctx, "t1", "s0", "w1"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ClaimSubscriptions(ctx, "w3", Epoch.Add(62*time.Second), time.Minute, 10); len(got) != 1 || got[0].ID != "s0" {
			t.Errorf("after release w3 claims %v, want s0", got)
		}
	}},
	{"EventStreamConcurrentClaimsNeverShare", func(t *testing.T, ctx context.Context, s Store) {
		for i := range 20 {
			mustCreateSub(t, ctx, s, NewSubscription("t1", fmt.Sprintf("s%02d", i)))
		}
		var mu sync.Mutex
		owners := map[string]string{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				owner := fmt.Sprintf("w%d", w)
				got, err := s.ClaimSubscriptions(ctx, owner, Epoch, time.Minute, 20)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, sub := range got {
					if prev, ok := owners[sub.ID]; ok {
						t.Errorf("%s claimed by %s and %s", sub.ID, prev, owner)
					}
					owners[sub.ID] = owner
				}
			})
		}
		wg.Wait()
		if len(owners) != 20 {
			t.Errorf("%d of 20 claimed", len(owners))
		}
	}},
	{"EventStreamRecordDeliveryAudited", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		mustCreateSub(t, ctx, s, NewSubscription(tenant, "s1"))
		claim(t, ctx, s, "w1", Epoch)
		rec := func(action string, i int) *audit.Record {
			return &audit.Record{Time: Epoch, TenantID: tenant, TraceID: fmt.Sprint("trace-", i), Source: audit.SourceEventStream, ResourceID: "res-1",
				ActorID: "eventstream", Action: action, Status: audit.StatusSuccess, Meta: map[string]any{"n": float64(i)}}
		}
		records := func() []audit.Record {
			t.Helper()
			recs, err := s.ListAuditRecords(ctx, tenant, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			CheckChain(t, recs)
			return recs
		}
		// Refused updates (another owner; a deleted subscription) append
		// nothing.
		err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: tenant, SubscriptionID: "s1", Owner: "w2", Now: Epoch, Cursor: 9,
			NewDeadLetters: []eventstream.DeadLetter{newLetter(tenant, "s1", "m0")}, Audit: []*audit.Record{rec(eventstream.ActionDeadLetter, 0)}})
		wantKind(t, "RecordDelivery without the lease", err, fault.Conflict)
		err = s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: tenant, SubscriptionID: "nope", Owner: "w1", Now: Epoch, Cursor: 9,
			Audit: []*audit.Record{rec(eventstream.ActionDeadLetter, 0)}})
		wantKind(t, "RecordDelivery of a missing subscription", err, fault.NotFound)
		if recs := records(); len(recs) != 0 {
			t.Fatalf("refused updates appended %d records", len(recs))
		}
		st := eventstream.Status{FailingSince: Epoch, DeadLettered: 2, Paused: true, PausedAt: Epoch}
		if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: tenant, SubscriptionID: "s1", Owner: "w1", Now: Epoch, Cursor: 9, Status: st,
			NewDeadLetters: []eventstream.DeadLetter{newLetter(tenant, "s1", "m1")},
			Audit:          []*audit.Record{rec(eventstream.ActionDeadLetter, 1), rec(eventstream.ActionPause, 2)}}); err != nil {
			t.Fatal(err)
		}
		// An update without records appends none.
		if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: tenant, SubscriptionID: "s1", Owner: "w1", Now: Epoch, Cursor: 10, Status: st}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range records() {
			got = append(got, fmt.Sprint(r.Action, " ", r.Meta["n"]))
		}
		if want := []string{eventstream.ActionDeadLetter + " 1", eventstream.ActionPause + " 2"}; !cmp.Equal(want, got) {
			t.Errorf("records %v, want %v", got, want)
		}
		if sub := getSub(t, ctx, s, tenant, "s1"); sub.Cursor != 10 || !sub.Status.Paused {
			t.Errorf("subscription %+v", sub)
		}
	}},
	{"EventStreamRecordDeliveryAndDeadLetters", func(t *testing.T, ctx context.Context, s Store) {
		mustCreateSub(t, ctx, s, NewSubscription("t1", "s1"))
		claim(t, ctx, s, "w1", Epoch)
		st := eventstream.Status{LastSuccessAt: Epoch.Add(time.Second), Delivered: 10, DeadLettered: 2, FailingSince: Epoch, Paused: true, PausedAt: Epoch.Add(2 * time.Second)}
		l1, l2 := newLetter("t1", "s1", "m1"), newLetter("t1", "s1", "m2")
		if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: "t1", SubscriptionID: "s1", Owner: "w1", Now: Epoch, Cursor: 12, Status: st,
			NewDeadLetters: []eventstream.DeadLetter{l1, l2}}); err != nil {
			t.Fatal(err)
		}
		got := getSub(t, ctx, s, "t1", "s1")
		if got.Cursor != 12 || !cmp.Equal(st, got.Status) {
			t.Errorf("cursor %d status %+v", got.Cursor, got.Status)
		}
		// The cursor never moves back.
		if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: "t1", SubscriptionID: "s1", Owner: "w1", Now: Epoch, Cursor: 5, Status: st}); err != nil {
			t.Fatal(err)
		}
		if c := getSub(t, ctx, s, "t1", "s1").Cursor; c != 12 {
			t.Errorf("cursor moved back to %d", c)
		}
		dls, err := s.ListDeadLetters(ctx, "t1", "s1", "", false, 10)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]eventstream.DeadLetter{l1, l2}, dls); diff != "" {
			t.Errorf("dead letters (-want +got):\n%s", diff)
		}
		if dls, _ := s.ListDeadLetters(ctx, "t2", "s1", "", false, 10); len(dls) != 0 {
			t.Errorf("another tenant sees %v", dls)
		}
		if page, _ := s.ListDeadLetters(ctx, "t1", "s1", "m1", false, 10); len(page) != 1 || page[0].ID != "m2" {
			t.Errorf("page after m1: %v", page)
		}
		if q, _ := s.ListDeadLetters(ctx, "t1", "s1", "", true, 10); len(q) != 0 {
			t.Errorf("requeued before any requeue: %v", q)
		}
		n, err := s.RequeueDeadLetters(ctx, "t1", "s1", []string{"m2", "nope"})
		if err != nil || n != 1 {
			t.Fatalf("requeue: %d %v", n, err)
		}
		if n, _ := s.RequeueDeadLetters(ctx, "t2", "s1", nil); n != 0 {
			t.Errorf("another tenant requeued %d", n)
		}
		q, _ := s.ListDeadLetters(ctx, "t1", "s1", "", true, 10)
		if len(q) != 1 || q[0].ID != "m2" || !q[0].Requeued {
			t.Fatalf("requeued: %v", q)
		}
		// m2 fails again; then every letter is requeued and m1 succeeds.
		redead := q[0]
		redead.Attempts, redead.LastError = 9, "again"
		if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: "t1", SubscriptionID: "s1", Owner: "w1", Now: Epoch, Cursor: 12, Status: st, Redead: []eventstream.DeadLetter{redead}}); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.RequeueDeadLetters(ctx, "t1", "s1", nil); n != 2 {
			t.Errorf("requeue all: %d, want 2", n)
		}
		if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: "t1", SubscriptionID: "s1", Owner: "w1", Now: Epoch, Cursor: 12, Status: st, Redelivered: []string{"m1"}}); err != nil {
			t.Fatal(err)
		}
		dls, _ = s.ListDeadLetters(ctx, "t1", "s1", "", false, 10)
		if len(dls) != 1 || dls[0].ID != "m2" || dls[0].Attempts != 9 || dls[0].LastError != "again" || !dls[0].Requeued {
			t.Errorf("after redelivery: %+v", dls)
		}
		if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: "t1", SubscriptionID: "nope", Owner: "w1", Now: Epoch}); !fault.Is(fault.NotFound, err) {
			t.Errorf("RecordDelivery of a missing subscription: %v, want NotFound", err)
		}
	}},
}

// eventStreamCursorTests check the bound on ReceivedAt each subscription
// keeps with its cursor (eventstream.Subscription.CursorAt).
var eventStreamCursorTests = []test{
	{"EventStreamCursorAtMovesWithTheCursor", func(t *testing.T, ctx context.Context, s Store) {
		sub := NewSubscription("t1", "s1") // cursor 7, bound an hour before Epoch
		mustCreateSub(t, ctx, s, sub)
		claim(t, ctx, s, "w1", Epoch)
		// Each step writes after the one before.
		for _, tc := range []struct {
			name       string
			cursor     int64
			at         time.Time
			wantCursor int64
			wantAt     time.Time
		}{
			{"forward", 12, Epoch, 12, Epoch},
			{"behind the cursor: neither moves", 5, Epoch.Add(time.Hour), 12, Epoch},
			{"same cursor, no bound: kept", 12, time.Time{}, 12, Epoch},
			{"forward, no bound: the earlier cursor's kept", 13, time.Time{}, 13, Epoch},
			{"forward, an earlier bound: never moves back", 14, Epoch.Add(-time.Minute), 14, Epoch},
			{"forward again", 20, Epoch.Add(time.Minute), 20, Epoch.Add(time.Minute)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: "t1", SubscriptionID: "s1", Owner: "w1", Now: Epoch,
					Cursor: tc.cursor, CursorAt: tc.at, Status: sub.Status}); err != nil {
					t.Fatal(err)
				}
				got := getSub(t, ctx, s, "t1", "s1")
				if got.Cursor != tc.wantCursor || !got.CursorAt.Equal(tc.wantAt) {
					t.Errorf("cursor %d at %v, want %d at %v", got.Cursor, got.CursorAt, tc.wantCursor, tc.wantAt)
				}
			})
		}
		// A refused write (lease not held) moves neither.
		err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: "t1", SubscriptionID: "s1", Owner: "w2", Now: Epoch, Cursor: 30, CursorAt: Epoch.Add(time.Hour)})
		if got := getSub(t, ctx, s, "t1", "s1"); !fault.Is(fault.Conflict, err) || got.Cursor != 20 || !got.CursorAt.Equal(Epoch.Add(time.Minute)) {
			t.Errorf("write without the lease: %v; cursor %d at %v", err, got.Cursor, got.CursorAt)
		}
	}},
	{"EventStreamCursorAtBoundsReadsWithoutSkipping", func(t *testing.T, ctx context.Context, s Store) {
		// The engine's loop: read after the cursor with CursorAt as
		// notBefore, record the last event read and its ReceivedAt. The
		// events come with received times before the bound, equal to it
		// and of other types; each of the subscription's types must be
		// read once, in order, and CursorAt follow the cursor.
		tenant := identity.NewGUID()
		types := []string{"10001", "10002"}
		var want []int64
		appendAt := func(typeID string, secs ...int) {
			t.Helper()
			for _, sec := range secs {
				e := userEvent(t, tenant, sec, typeID, "u", "gold")
				if err := s.AppendEvents(ctx, []*events.Event{e}); err != nil {
					t.Fatal(err)
				}
				if slices.Contains(types, typeID) {
					want = append(want, e.Seq)
				}
			}
		}
		at := func(sec int) time.Time { return Epoch.Add(time.Duration(sec) * time.Second) }
		appendAt("10001", 100, 90)
		// Created as Service.Create does: at the tail, bounded by its
		// ReceivedAt (90 raised to 100).
		tail, _, err := s.QueryEvents(ctx, tenant, events.Query{Limit: 1})
		if err != nil || len(tail) != 1 {
			t.Fatalf("tail: %v, %v", tail, err)
		}
		sub := NewSubscription(tenant, "s1")
		sub.EventTypes, sub.Cursor, sub.CursorAt = types, tail[0].Seq, tail[0].ReceivedAt
		if !sub.CursorAt.Equal(at(100)) {
			t.Errorf("tail received at %v, want %v", sub.CursorAt, at(100))
		}
		mustCreateSub(t, ctx, s, sub)
		claim(t, ctx, s, "w1", Epoch)
		// The events up to the tail are not the subscription's.
		want = nil
		appendAt("10001", 50)  // before the bound: raised to it
		appendAt("10002", 100) // at the bound
		appendAt("10003", 200) // another type
		appendAt("10001", 150) // before the last: raised to 200
		appendAt("10002", 300)

		var got []int64
		for round := 0; ; round++ {
			if round > 10 {
				t.Fatalf("still reading after %d rounds: %v", round, got)
			}
			evs, err := s.ListEventsAfter(ctx, tenant, sub.Cursor, sub.EventTypes, sub.CursorAt, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			if round == 0 {
				appendAt("10001", 10) // while a batch is out: raised to 300
			}
			last := evs[len(evs)-1]
			if err := s.RecordDelivery(ctx, eventstream.DeliveryUpdate{TenantID: tenant, SubscriptionID: sub.ID, Owner: "w1", Now: Epoch,
				Cursor: last.Seq, CursorAt: last.ReceivedAt, Status: sub.Status}); err != nil {
				t.Fatal(err)
			}
			before := sub.CursorAt
			sub = getSub(t, ctx, s, tenant, sub.ID)
			if sub.Cursor != last.Seq || !sub.CursorAt.Equal(last.ReceivedAt) || sub.CursorAt.Before(before) {
				t.Errorf("round %d: stored cursor %d at %v, want %d at %v (not before %v)", round, sub.Cursor, sub.CursorAt, last.Seq, last.ReceivedAt, before)
			}
			got = append(got, seqs(evs)...)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events read after the subscription's creation (-want +got):\n%s", diff)
		}
		if !sub.CursorAt.Equal(at(300)) {
			t.Errorf("CursorAt %v after the last event, want %v", sub.CursorAt, at(300))
		}
	}},
}

func newLetter(tenantID, subID, id string) eventstream.DeadLetter {
	return eventstream.DeadLetter{TenantID: tenantID, SubscriptionID: subID, ID: id, EventSeq: 8, EventType: "401",
		Body: []byte(`{"specversion":"1.0"}`), Attempts: 4, LastError: "the endpoint answered 503", CreatedAt: Epoch}
}

func claim(t *testing.T, ctx context.Context, s Store, owner string, now time.Time) {
	t.Helper()
	if _, err := s.ClaimSubscriptions(ctx, owner, now, time.Minute, 100); err != nil {
		t.Fatal(err)
	}
}
