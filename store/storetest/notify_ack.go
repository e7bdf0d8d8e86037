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

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// lease is one LeaseNotifications at now; it fails the test on an error.
func lease(t *testing.T, ctx context.Context, s Store, tenant, id string, now time.Time) (int64, []int64) {
	t.Helper()
	_, page, evs, err := s.LeaseNotifications(ctx, tenant, id, "c", time.Time{}, now, nil)
	if err != nil {
		t.Fatalf("LeaseNotifications at %v: %v", now.Sub(Epoch), err)
	}
	return page, seqs(evs)
}

// metaNum is a number of an audit record's Meta as float64: stores may
// decode numbers as float64 or json.Number.
func metaNum(v any) any {
	switch n := v.(type) {
	case json.Number:
		f, _ := n.Float64()
		return f
	case int:
		return float64(n)
	case int64:
		return float64(n)
	}
	return v
}

type leased struct {
	Page int64
	Seqs []int64
}

// notifyAckTests check acknowledged retrieval (API.md "Beyond the
// specification: safe retries and acknowledged retrieval").
var notifyAckTests = []test{
	{"NotifyAckDeadlineRoundTrips", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		sub := newSub(tenant, "s", "c", "10001")
		sub.AckDeadline = 45 * time.Second
		if err := s.CreateNotifySubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetNotifySubscription(ctx, tenant, "s")
		if err != nil || got.AckDeadline != 45*time.Second {
			t.Errorf("AckDeadline = %v, %v; want 45s", got.AckDeadline, err)
		}
	}},
	{"NotifyLeasedPageComesBackUntilConfirmed", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		sub := newSub(tenant, "s", "c", "10001")
		sub.AckDeadline = 10 * time.Second
		if err := s.CreateNotifySubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		appendTyped(t, ctx, s, tenant, 1, "10001", "10001", "10001", "10001", "10001") // seqs 1..5, page size 2
		at := func(d time.Duration) time.Time { return Epoch.Add(time.Hour + d) }
		var got []leased
		for _, d := range []time.Duration{0, time.Second} {
			p, q := lease(t, ctx, s, tenant, "s", at(d))
			got = append(got, leased{p, q})
		}
		// Page 1 is confirmed in time; page 2 lapses at +11s and comes back
		// before page 3, with its number and results, to any poller.
		if err := s.AckNotifications(ctx, tenant, "s", "c", 1, at(9*time.Second)); err != nil {
			t.Fatalf("confirm page 1 within the deadline: %v", err)
		}
		if until, err := s.NextNotifyLapse(ctx, tenant, "s"); err != nil || !until.Equal(at(11*time.Second)) {
			t.Errorf("NextNotifyLapse = %v, %v; want +11s", until, err)
		}
		for _, d := range []time.Duration{10 * time.Second, 11 * time.Second, 12 * time.Second} {
			p, q := lease(t, ctx, s, tenant, "s", at(d))
			got = append(got, leased{p, q})
		}
		want := []leased{{1, []int64{1, 2}}, {2, []int64{3, 4}}, {3, []int64{5}}, {2, []int64{3, 4}}, {4, nil}}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("pages handed out (-want +got):\n%s", diff)
		}
		if err := s.AckNotifications(ctx, tenant, "s", "c", 1, at(12*time.Second)); err != nil {
			t.Errorf("confirming page 1 twice: %v, want nil", err)
		}
		if err := s.AckNotifications(ctx, tenant, "s", "c", 4, at(12*time.Second)); err != nil {
			t.Errorf("confirming an empty page: %v, want nil", err)
		}
		if err := s.AckNotifications(ctx, tenant, "s", "c", 3, at(20*time.Second)); fault.KindOf(err) != fault.Conflict {
			t.Errorf("confirming page 3 after its lease lapsed: %v, want Conflict", err)
		}
		if err := s.AckNotifications(ctx, tenant, "s", "c", 5, at(12*time.Second)); fault.KindOf(err) != fault.NotFound {
			t.Errorf("confirming a page never handed out: %v, want NotFound", err)
		}
		if err := s.AckNotifications(ctx, tenant, "s", "intruder", 2, at(12*time.Second)); fault.KindOf(err) != fault.Forbidden {
			t.Errorf("another client's confirmation: %v, want Forbidden", err)
		}
		if err := s.AckNotifications(ctx, identity.NewGUID(), "s", "c", 2, at(12*time.Second)); fault.KindOf(err) != fault.NotFound {
			t.Errorf("another tenant's confirmation: %v, want NotFound", err)
		}
		if err := s.AckNotifications(ctx, tenant, "s", "c", 2, at(12*time.Second)); err != nil {
			t.Fatalf("confirm page 2 handed out again: %v", err)
		}
		// Page 3 lapsed at +11s and has not been confirmed: it is next;
		// confirmed pages 1 and 2 never come back.
		got = nil
		for _, d := range []time.Duration{time.Minute, time.Minute, 2 * time.Minute} {
			p, q := lease(t, ctx, s, tenant, "s", at(d))
			got = append(got, leased{p, q})
		}
		want = []leased{{3, []int64{5}}, {5, nil}, {3, []int64{5}}}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("pages after confirmations (-want +got):\n%s", diff)
		}
		stored, err := s.GetNotifySubscription(ctx, tenant, "s")
		if err != nil || stored.Pages != 5 || stored.Cursor != 5 || !stored.LastRequest.Equal(at(2*time.Minute)) {
			t.Errorf("stored: pages %d cursor %d last %v (%v); want 5, 5, +2m", stored.Pages, stored.Cursor, stored.LastRequest, err)
		}
	}},
	{"NotifyConsumeLeavesLiveLeasesAlone", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		if err := s.CreateNotifySubscription(ctx, newSub(tenant, "s", "c", "10001")); err != nil {
			t.Fatal(err)
		}
		appendTyped(t, ctx, s, tenant, 1, "10001", "10001", "10001")
		if p, q := lease(t, ctx, s, tenant, "s", Epoch); p != 1 || len(q) != 2 {
			t.Fatalf("lease = %d %v", p, q)
		}
		// The zero AckDeadline is the default, 30 s.
		if until, err := s.NextNotifyLapse(ctx, tenant, "s"); err != nil || !until.Equal(Epoch.Add(30*time.Second)) {
			t.Errorf("NextNotifyLapse = %v, %v; want Epoch+30s", until, err)
		}
		_, page, evs, err := s.ConsumeNotifications(ctx, tenant, "s", "c", time.Time{}, Epoch.Add(29*time.Second), nil)
		if err != nil || page != 2 || fmt.Sprint(seqs(evs)) != "[3]" {
			t.Errorf("plain retrieval while page 1 is leased: page %d %v (%v), want page 2 [3]", page, seqs(evs), err)
		}
		if err := s.AckNotifications(ctx, tenant, "s", "c", 2, Epoch.Add(time.Hour)); err != nil {
			t.Errorf("confirming a consumed page: %v, want nil", err)
		}
		if err := s.DeleteNotifySubscription(ctx, tenant, "s"); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateNotifySubscription(ctx, newSub(tenant, "s", "c", "10001")); err != nil {
			t.Fatal(err)
		}
		if until, err := s.NextNotifyLapse(ctx, tenant, "s"); err != nil || !until.IsZero() {
			t.Errorf("a new subscription with a deleted one's id inherits its leases: %v, %v", until, err)
		}
	}},
	{"NotifyConsumeTakesLapsedPagesOnce", func(t *testing.T, ctx context.Context, s Store) {
		// API.md: a lapsed page goes to "the next retrieval of any
		// poller", and "without ack=true retrieval is as above": a plain
		// retrieval gets the page, with its number and results, and
		// consumes it (nobody will confirm it).
		tenant := identity.NewGUID()
		sub := newSub(tenant, "s", "c", "10001")
		sub.AckDeadline = 10 * time.Second
		if err := s.CreateNotifySubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		appendTyped(t, ctx, s, tenant, 1, "10001", "10001", "10001", "10001", "10001") // seqs 1..5, page size 2
		at := func(d time.Duration) time.Time { return Epoch.Add(time.Hour + d) }
		count := func(now time.Time, want int) {
			t.Helper()
			stored, err := s.GetNotifySubscription(ctx, tenant, "s")
			if err != nil {
				t.Fatal(err)
			}
			if n, err := s.CountNotifications(ctx, stored, time.Time{}, now, 100); err != nil || n != want {
				t.Errorf("CountNotifications at %v = %d, %v; want %d", now.Sub(at(0)), n, err, want)
			}
			if n, err := s.CountNotifications(ctx, stored, time.Time{}, now, 1); err != nil || n != min(want, 1) {
				t.Errorf("CountNotifications at %v up to 1 = %d, %v; want %d", now.Sub(at(0)), n, err, min(want, 1))
			}
		}
		consume := func(now time.Time, rec *audit.Record) leased {
			t.Helper()
			_, page, evs, err := s.ConsumeNotifications(ctx, tenant, "s", "c", time.Time{}, now, rec)
			if err != nil {
				t.Fatalf("ConsumeNotifications at %v: %v", now.Sub(at(0)), err)
			}
			return leased{page, seqs(evs)}
		}
		var got []leased
		for _, d := range []time.Duration{0, time.Second} {
			p, q := lease(t, ctx, s, tenant, "s", at(d))
			got = append(got, leased{p, q})
		}
		count(at(5*time.Second), 1) // leased pages are with their pollers
		count(at(10*time.Second), 3)
		count(at(11*time.Second), 5)
		rec := &audit.Record{Time: Epoch, TenantID: tenant, Source: audit.SourceNotification, Action: "notification.retrieve", Status: audit.StatusSuccess, Meta: map[string]any{"subscription_id": "s"}}
		got = append(got, consume(at(11*time.Second), rec)) // page 1 lapsed at +10s
		count(at(11*time.Second), 3)
		if err := s.AckNotifications(ctx, tenant, "s", "c", 1, at(11*time.Second)); err != nil {
			t.Errorf("confirming a lapsed page a plain retrieval took: %v, want nil", err)
		}
		p, q := lease(t, ctx, s, tenant, "s", at(12*time.Second)) // page 2, lapsed at +11s, leased again
		got = append(got, leased{p, q}, consume(at(12*time.Second), nil))
		count(at(12*time.Second), 0)
		got = append(got, consume(at(time.Minute), nil), consume(at(time.Minute), nil))
		p, q = lease(t, ctx, s, tenant, "s", at(2*time.Minute))
		got = append(got, leased{p, q})
		want := []leased{{1, []int64{1, 2}}, {2, []int64{3, 4}}, {1, []int64{1, 2}}, {2, []int64{3, 4}}, {3, []int64{5}}, {2, []int64{3, 4}}, {4, nil}, {5, nil}}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("pages handed out (-want +got):\n%s", diff)
		}
		if until, err := s.NextNotifyLapse(ctx, tenant, "s"); err != nil || !until.IsZero() {
			t.Errorf("a page a plain retrieval took is still leased until %v (%v)", until, err)
		}
		count(at(time.Hour), 0)
		stored, err := s.GetNotifySubscription(ctx, tenant, "s")
		if err != nil || stored.Pages != 5 || stored.Cursor != 5 || !stored.LastRequest.Equal(at(2*time.Minute)) {
			t.Errorf("stored: pages %d cursor %d last %v (%v); want 5, 5, +2m", stored.Pages, stored.Cursor, stored.LastRequest, err)
		}
		recs, err := s.ListAuditRecords(ctx, tenant, 0, 10)
		if err != nil || len(recs) != 1 {
			t.Fatalf("audit records: %d (%v), want 1", len(recs), err)
		}
		meta := map[string]any{"page": metaNum(recs[0].Meta["page"]), "results": metaNum(recs[0].Meta["results"]), "ack": recs[0].Meta["ack"], "redelivered": recs[0].Meta["redelivered"]}
		if diff := cmp.Diff(map[string]any{"page": float64(1), "results": float64(2), "ack": nil, "redelivered": true}, meta); diff != "" {
			t.Errorf("audit record of the plain retrieval of a lapsed page (-want +got):\n%s", diff)
		}
	}},
	{"NotifyLapsedPageOutOfRetentionIsDropped", func(t *testing.T, ctx context.Context, s Store) {
		for _, ack := range []bool{true, false} {
			tenant := identity.NewGUID()
			sub := newSub(tenant, "s", "c", "10001")
			sub.AckDeadline = 10 * time.Second
			if err := s.CreateNotifySubscription(ctx, sub); err != nil {
				t.Fatal(err)
			}
			appendTyped(t, ctx, s, tenant, 1, "10001", "10001") // received at Epoch+1s, +2s
			if p, q := lease(t, ctx, s, tenant, "s", Epoch.Add(time.Hour)); p != 1 || len(q) != 2 {
				t.Fatalf("lease = %d %v", p, q)
			}
			appendTyped(t, ctx, s, tenant, 10, "10001") // received at Epoch+10s
			// The page lapsed, and its events are older than the
			// retention: the next retrieval, of either kind, reads on
			// rather than hand out an empty page (which nobody would
			// confirm) again and again.
			var (
				page int64
				evs  []events.Event
				err  error
			)
			if ack {
				_, page, evs, err = s.LeaseNotifications(ctx, tenant, "s", "c", Epoch.Add(5*time.Second), Epoch.Add(2*time.Hour), nil)
			} else {
				_, page, evs, err = s.ConsumeNotifications(ctx, tenant, "s", "c", Epoch.Add(5*time.Second), Epoch.Add(2*time.Hour), nil)
			}
			if err != nil || page != 2 || fmt.Sprint(seqs(evs)) != "[3]" {
				t.Errorf("retrieval (ack %v) after the page left retention: page %d %v (%v), want page 2 [3]", ack, page, seqs(evs), err)
			}
			if err := s.AckNotifications(ctx, tenant, "s", "c", 2, Epoch.Add(2*time.Hour)); err != nil {
				t.Fatal(err)
			}
			if until, err := s.NextNotifyLapse(ctx, tenant, "s"); err != nil || !until.IsZero() {
				t.Errorf("ack %v: a page out of retention is still leased until %v (%v)", ack, until, err)
			}
		}
	}},
	{"NotifyLeaseAppendsItsAuditRecord", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		sub := newSub(tenant, "s", "c", "10001")
		sub.AckDeadline = time.Second
		if err := s.CreateNotifySubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		appendTyped(t, ctx, s, tenant, 1, "10001")
		rec := func() *audit.Record {
			return &audit.Record{Time: Epoch, TenantID: tenant, Source: audit.SourceNotification, Action: "notification.retrieve", Status: audit.StatusSuccess, Meta: map[string]any{"subscription_id": "s"}}
		}
		for _, now := range []time.Time{Epoch, Epoch.Add(2 * time.Second)} {
			if _, _, _, err := s.LeaseNotifications(ctx, tenant, "s", "c", time.Time{}, now, rec()); err != nil {
				t.Fatal(err)
			}
		}
		recs, err := s.ListAuditRecords(ctx, tenant, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var metas []map[string]any
		for _, r := range recs {
			metas = append(metas, map[string]any{"page": metaNum(r.Meta["page"]), "results": metaNum(r.Meta["results"]), "ack": r.Meta["ack"], "redelivered": r.Meta["redelivered"]})
		}
		want := []map[string]any{
			{"page": float64(1), "results": float64(1), "ack": true, "redelivered": nil},
			{"page": float64(1), "results": float64(1), "ack": true, "redelivered": true},
		}
		if diff := cmp.Diff(want, metas); diff != "" {
			t.Errorf("audit records (-want +got):\n%s", diff)
		}
	}},
}

func init() { notifyTests = append(notifyTests, notifyAckTests...) }

func init() {
	notifyConcurrencyTests = append(notifyConcurrencyTests, test{"NotifyConcurrentLeasesEachPageOnce", func(t *testing.T, ctx context.Context, s Store) {
		// Pollers lease and confirm at once (several processes would):
		// while leases are live no page goes to two pollers, every event
		// is handed out once, and every page number once.
		tenant := identity.NewGUID()
		sub := newSub(tenant, "s", "c", "10001")
		sub.PageSize = 3
		if err := s.CreateNotifySubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		var types []string
		for range 60 {
			types = append(types, "10001")
		}
		appendTyped(t, ctx, s, tenant, 1, types...)
		var (
			mu    sync.Mutex
			seen  = map[int64]int{}
			pages = map[int64]int{}
			wg    sync.WaitGroup
		)
		for range 6 {
			wg.Go(func() {
				for {
					_, page, evs, err := s.LeaseNotifications(ctx, tenant, "s", "c", time.Time{}, Epoch, nil)
					if fault.KindOf(err) == fault.Unavailable {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					if len(evs) == 0 {
						return
					}
					mu.Lock()
					pages[page]++
					for _, e := range evs {
						seen[e.Seq]++
					}
					mu.Unlock()
					if err := s.AckNotifications(ctx, tenant, "s", "c", page, Epoch); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		for seq, n := range seen {
			if n != 1 {
				t.Errorf("event %d handed out %d times", seq, n)
			}
		}
		for p, n := range pages {
			if n != 1 {
				t.Errorf("page %d handed out %d times", p, n)
			}
		}
		if len(seen) != 60 || len(pages) != 20 {
			t.Errorf("%d events in %d pages, want 60 in 20", len(seen), len(pages))
		}
	}})
}

func init() {
	notifyConcurrencyTests = append(notifyConcurrencyTests, test{"NotifyConcurrentPollersTakeLapsedPagesOnce", func(t *testing.T, ctx context.Context, s Store) {
		// Every leased page of a subscription lapsed (their pollers died);
		// pollers then retrieve at once (several processes would): first
		// plain ones only, then plain and acknowledged ones mixed. Each
		// lapsed page goes to one of them, a plain one consuming it, an
		// acknowledged one confirming it, so every event is handed out
		// once more and no page is left leased.
		tenant := identity.NewGUID()
		sub := newSub(tenant, "s", "c", "10001")
		sub.PageSize = 3
		if err := s.CreateNotifySubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		var types []string
		for range 30 {
			types = append(types, "10001")
		}
		for round, mixed := range []bool{false, true} {
			leasedAt := Epoch.Add(time.Duration(round) * time.Hour)
			appendTyped(t, ctx, s, tenant, 100*round+1, types...)
			stored, err := s.GetNotifySubscription(ctx, tenant, "s")
			if err != nil {
				t.Fatal(err)
			}
			first := stored.Pages + 1 // the empty retrievals that ended round 0 counted
			for want := first; want < first+10; want++ {
				if p, q := lease(t, ctx, s, tenant, "s", leasedAt); p != want || len(q) != 3 {
					t.Fatalf("lease = %d %v, want page %d of 3", p, q, want)
				}
			}
			now := leasedAt.Add(time.Hour - time.Second) // every lease lapsed; none lapses again
			var (
				mu    sync.Mutex
				seen  = map[int64]int{}
				pages = map[int64]int{}
				wg    sync.WaitGroup
			)
			for i := range 6 {
				ack := mixed && i%2 == 0
				wg.Go(func() {
					for {
						var (
							page int64
							evs  []events.Event
							err  error
						)
						if ack {
							_, page, evs, err = s.LeaseNotifications(ctx, tenant, "s", "c", time.Time{}, now, nil)
						} else {
							_, page, evs, err = s.ConsumeNotifications(ctx, tenant, "s", "c", time.Time{}, now, nil)
						}
						if fault.KindOf(err) == fault.Unavailable {
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						if len(evs) == 0 {
							return
						}
						mu.Lock()
						pages[page]++
						for _, e := range evs {
							seen[e.Seq]++
						}
						mu.Unlock()
						if ack {
							if err := s.AckNotifications(ctx, tenant, "s", "c", page, now); err != nil {
								t.Error(err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			for seq, n := range seen {
				if n != 1 {
					t.Errorf("mixed %v: event %d handed out %d times after the lapse", mixed, seq, n)
				}
			}
			for p, n := range pages {
				if n != 1 || p < first || p >= first+10 {
					t.Errorf("mixed %v: page %d handed out %d times after the lapse", mixed, p, n)
				}
			}
			if len(seen) != 30 || len(pages) != 10 {
				t.Errorf("mixed %v: %d events in %d pages, want 30 in 10", mixed, len(seen), len(pages))
			}
			if until, err := s.NextNotifyLapse(ctx, tenant, "s"); err != nil || !until.IsZero() {
				t.Errorf("mixed %v: a page is still leased until %v (%v)", mixed, until, err)
			}
		}
	}})
}
