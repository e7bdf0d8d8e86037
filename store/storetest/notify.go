package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/notify"
)

// newSub returns a subscription of tenant for client to types, page size 2
// unless set later.
func newSub(tenant, id, client string, types ...string) *notify.Subscription {
	return &notify.Subscription{ID: id, TenantID: tenant, ClientID: client, EventTypeIDs: types, SubscribedBy: "admin-app", Created: Epoch, PageSize: 2}
}

func appendTyped(t *testing.T, ctx context.Context, s Store, tenant string, from int, types ...string) []*events.Event {
	t.Helper()
	var evs []*events.Event
	for i, ty := range types {
		evs = append(evs, userEvent(t, tenant, from+i, ty, "u", "gold"))
	}
	if err := s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

func mustConsume(t *testing.T, ctx context.Context, s Store, tenant, id, client string, notBefore time.Time) (notify.Subscription, []int64) {
	t.Helper()
	sub, _, evs, err := s.ConsumeNotifications(ctx, tenant, id, client, notBefore, Epoch.Add(time.Hour), nil)
	if err != nil {
		t.Fatalf("ConsumeNotifications: %v", err)
	}
	for _, e := range evs {
		if e.TenantID != tenant {
			t.Fatalf("ConsumeNotifications of %s returned an event of %s", tenant, e.TenantID)
		}
	}
	return sub, seqs(evs)
}

var notifyTests = []test{
	{"NotifyCreateGetDelete", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		appendTyped(t, ctx, s, tenant, 1, "10001", "10001")
		sub := newSub(tenant, "sub-1", "client.a", "10001", "401")
		if err := s.CreateNotifySubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		if sub.Cursor != 2 {
			t.Errorf("cursor of a new subscription = %d, want the head 2", sub.Cursor)
		}
		got, err := s.GetNotifySubscription(ctx, tenant, "sub-1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(*sub, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if err := s.CreateNotifySubscription(ctx, newSub(tenant, "sub-1", "client.b", "10001")); fault.KindOf(err) != fault.Conflict {
			t.Errorf("duplicate id: %v, want Conflict", err)
		}
		other := identity.NewGUID()
		if _, err := s.GetNotifySubscription(ctx, other, "sub-1"); fault.KindOf(err) != fault.NotFound {
			t.Errorf("another tenant's get: %v, want NotFound", err)
		}
		if err := s.DeleteNotifySubscription(ctx, other, "sub-1"); fault.KindOf(err) != fault.NotFound {
			t.Errorf("another tenant's delete: %v, want NotFound", err)
		}
		if _, _, _, err := s.ConsumeNotifications(ctx, other, "sub-1", "client.a", time.Time{}, Epoch, nil); fault.KindOf(err) != fault.NotFound {
			t.Errorf("another tenant's retrieval: %v, want NotFound", err)
		}
		if err := s.DeleteNotifySubscription(ctx, tenant, "sub-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetNotifySubscription(ctx, tenant, "sub-1"); fault.KindOf(err) != fault.NotFound {
			t.Errorf("get after delete: %v, want NotFound", err)
		}
		if err := s.DeleteNotifySubscription(ctx, tenant, "sub-1"); fault.KindOf(err) != fault.NotFound {
			t.Errorf("second delete: %v, want NotFound", err)
		}
	}},
	{"NotifyConsumePagesLaterMatchingEventsOnce", func(t *testing.T, ctx context.Context, s Store) {
		tenant, other := identity.NewGUID(), identity.NewGUID()
		appendTyped(t, ctx, s, tenant, 1, "10001") // before the subscription: never seen
		if err := s.CreateNotifySubscription(ctx, newSub(tenant, "s", "c", "10001", "10003")); err != nil {
			t.Fatal(err)
		}
		appendTyped(t, ctx, s, tenant, 2, "10001", "10002", "10003", "10001", "10002", "10001") // seqs 2..7
		appendTyped(t, ctx, s, other, 2, "10001", "10001")
		sub, got := mustConsume(t, ctx, s, tenant, "s", "c", time.Time{})
		if diff := cmp.Diff([]int64{2, 4}, got); diff != "" {
			t.Errorf("page 1 (-want +got):\n%s", diff)
		}
		if sub.Pages != 1 || sub.Cursor != 4 || !sub.LastRequest.Equal(Epoch.Add(time.Hour)) {
			t.Errorf("after page 1: pages %d cursor %d last %v", sub.Pages, sub.Cursor, sub.LastRequest)
		}
		if n, err := s.CountNotifications(ctx, sub, time.Time{}, Epoch, 100); err != nil || n != 2 {
			t.Errorf("remaining = %d, %v; want 2", n, err)
		}
		if n, err := s.CountNotifications(ctx, sub, time.Time{}, Epoch, 1); err != nil || n != 1 {
			t.Errorf("remaining counted up to 1 = %d, %v; want 1", n, err)
		}
		_, got = mustConsume(t, ctx, s, tenant, "s", "c", time.Time{})
		if diff := cmp.Diff([]int64{5, 7}, got); diff != "" {
			t.Errorf("page 2 (-want +got):\n%s", diff)
		}
		sub, got = mustConsume(t, ctx, s, tenant, "s", "c", time.Time{})
		if len(got) != 0 || sub.Pages != 3 || sub.Cursor != 7 {
			t.Errorf("page 3 = %v, pages %d, cursor %d; want empty, 3, 7", got, sub.Pages, sub.Cursor)
		}
		stored, err := s.GetNotifySubscription(ctx, tenant, "s")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sub, stored); diff != "" {
			t.Errorf("stored after retrievals (-want +got):\n%s", diff)
		}
		appendTyped(t, ctx, s, tenant, 8, "10002", "10003")
		_, got = mustConsume(t, ctx, s, tenant, "s", "c", time.Time{})
		if diff := cmp.Diff([]int64{9}, got); diff != "" {
			t.Errorf("page 4 (-want +got):\n%s", diff)
		}
	}},
	{"NotifyConsumeRefusesAnotherClient", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		if err := s.CreateNotifySubscription(ctx, newSub(tenant, "s", "c", "10001")); err != nil {
			t.Fatal(err)
		}
		appendTyped(t, ctx, s, tenant, 1, "10001")
		if _, _, _, err := s.ConsumeNotifications(ctx, tenant, "s", "intruder", time.Time{}, Epoch, nil); fault.KindOf(err) != fault.Forbidden {
			t.Fatalf("another client: %v, want Forbidden", err)
		}
		sub, got := mustConsume(t, ctx, s, tenant, "s", "c", time.Time{})
		if diff := cmp.Diff([]int64{1}, got); diff != "" || sub.Pages != 1 {
			t.Errorf("the refused retrieval consumed or counted (pages %d) (-want +got):\n%s", sub.Pages, diff)
		}
	}},
	{"NotifyRetentionHidesOlderEvents", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		if err := s.CreateNotifySubscription(ctx, newSub(tenant, "s", "c", "10001")); err != nil {
			t.Fatal(err)
		}
		appendTyped(t, ctx, s, tenant, 0, "10001", "10001", "10001", "10001") // received at Epoch+0..3s
		notBefore := Epoch.Add(2 * time.Second)
		sub, err := s.GetNotifySubscription(ctx, tenant, "s")
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.CountNotifications(ctx, sub, notBefore, Epoch, 100); err != nil || n != 2 {
			t.Errorf("remaining within retention = %d, %v; want 2", n, err)
		}
		_, got := mustConsume(t, ctx, s, tenant, "s", "c", notBefore)
		if diff := cmp.Diff([]int64{3, 4}, got); diff != "" {
			t.Errorf("page (-want +got):\n%s", diff)
		}
	}},
}

func init() {
	notifyTests = append(notifyTests, test{"NotifyRetentionWithSeveralTypes", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		if err := s.CreateNotifySubscription(ctx, newSub(tenant, "s", "c", "10001", "10002")); err != nil {
			t.Fatal(err)
		}
		// seqs 1..8, received at Epoch+1s..8s; 1..5 are older than notBefore.
		appendTyped(t, ctx, s, tenant, 1, "10001", "10002", "10001", "10002", "10001", "10003", "10002", "10001")
		notBefore := Epoch.Add(6 * time.Second)
		sub, got := mustConsume(t, ctx, s, tenant, "s", "c", notBefore)
		if diff := cmp.Diff([]int64{7, 8}, got); diff != "" {
			t.Errorf("page (-want +got):\n%s", diff)
		}
		if sub.Cursor != 8 {
			t.Errorf("cursor %d, want 8", sub.Cursor)
		}
		if n, err := s.CountNotifications(ctx, sub, notBefore, Epoch, 10); err != nil || n != 0 {
			t.Errorf("remaining = %d, %v; want 0", n, err)
		}
	}}, test{"NotifyConsumeAppendsItsAuditRecord", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		if err := s.CreateNotifySubscription(ctx, newSub(tenant, "s", "c", "10001")); err != nil {
			t.Fatal(err)
		}
		appendTyped(t, ctx, s, tenant, 1, "10001", "10001", "10001")
		rec := func() *audit.Record {
			return &audit.Record{Time: Epoch, TenantID: tenant, Source: audit.SourceNotification, Action: "notification.retrieve", Status: audit.StatusSuccess, Meta: map[string]any{"subscription_id": "s"}}
		}
		if _, _, _, err := s.ConsumeNotifications(ctx, tenant, "s", "intruder", time.Time{}, Epoch, rec()); fault.KindOf(err) != fault.Forbidden {
			t.Fatalf("another client: %v", err)
		}
		if _, _, _, err := s.ConsumeNotifications(ctx, tenant, "s", "c", time.Time{}, Epoch, rec()); err != nil {
			t.Fatal(err)
		}
		recs, err := s.ListAuditRecords(ctx, tenant, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 {
			t.Fatalf("%d audit records, want the one of the successful retrieval", len(recs))
		}
		want := map[string]any{"subscription_id": "s", "results": 2.0, "page": 1.0}
		got := map[string]any{}
		for k, v := range recs[0].Meta {
			switch n := v.(type) { // stores may decode numbers as float64 or json.Number
			case json.Number:
				got[k], _ = n.Float64()
			case int:
				got[k] = float64(n)
			case int64:
				got[k] = float64(n)
			default:
				got[k] = v
			}
		}
		if diff := cmp.Diff(want, got); diff != "" || recs[0].Seq != 1 {
			t.Errorf("record seq %d meta (-want +got):\n%s", recs[0].Seq, diff)
		}
	}})
}

var notifyConcurrencyTests = []test{
	{"NotifyConcurrentPollersEachEventOnce", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		sub := newSub(tenant, "s", "c", "10001", "10002")
		sub.PageSize = 7
		if err := s.CreateNotifySubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		const pollers, appenders, perAppender = 8, 2, 60
		var (
			mu   sync.Mutex
			seen = map[int64]int{}
			wg   sync.WaitGroup
			done = make(chan struct{})
		)
		var apw sync.WaitGroup
		for a := range appenders {
			apw.Go(func() {
				for i := range perAppender {
					ty := []string{"10001", "10002", "10003"}[i%3]
					if err := s.AppendEvents(ctx, []*events.Event{userEvent(t, tenant, a*1000+i, ty, "u", "gold")}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		go func() { apw.Wait(); close(done) }()
		for range pollers {
			wg.Go(func() {
				finished := false
				for {
					select {
					case <-done:
						finished = true
					default:
					}
					_, _, evs, err := s.ConsumeNotifications(ctx, tenant, "s", "c", time.Time{}, Epoch, nil)
					if err != nil {
						if fault.KindOf(err) == fault.Unavailable {
							continue
						}
						t.Error(err)
						return
					}
					mu.Lock()
					for _, e := range evs {
						seen[e.Seq]++
					}
					mu.Unlock()
					if finished && len(evs) == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		want := appenders * perAppender * 2 / 3
		if len(seen) != want {
			t.Errorf("%d distinct notifications, want %d", len(seen), want)
		}
		for seq, n := range seen {
			if n != 1 {
				t.Errorf("event %d returned %d times", seq, n)
			}
		}
		if t.Failed() {
			fmt.Println(seen)
		}
	}},
}
