package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/identity"
)

// NewGuideSession returns a guide session for tests, expiring at expires.
func NewGuideSession(tenantID, id string, expires time.Time) guide.Session {
	return guide.Session{
		IDHash: guide.HashID(id), TenantID: tenantID, UserID: identity.NewObjectID(), UserName: "alice", Method: guide.MethodPassword,
		CSRFToken: "csrf-" + id, LoginAt: Epoch, LastActivity: Epoch.Add(time.Second), LastSeen: Epoch.Add(2 * time.Second), ExpiresAt: expires,
	}
}

var guideTests = []test{
	{"GuideSessionRoundTrip", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		g := NewGuideSession(a, "one", Epoch.Add(10*time.Minute))
		if err := s.CreateGuideSession(ctx, g); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "duplicate", s.CreateGuideSession(ctx, g), fault.Conflict)
		got, err := s.GetGuideSession(ctx, g.IDHash)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(g, got); d != "" {
			t.Errorf("GetGuideSession (-want +got):\n%s", d)
		}
		_, err = s.GetGuideSession(ctx, guide.HashID("other"))
		wantKind(t, "GetGuideSession unknown", err, fault.NotFound)

		touched := g
		touched.LastActivity, touched.LastSeen, touched.ExpiresAt = Epoch.Add(time.Minute), Epoch.Add(2*time.Minute), Epoch.Add(12*time.Minute)
		touched.UserName, touched.CSRFToken = "mallory", "changed" // not written by Touch
		if err := s.TouchGuideSession(ctx, touched); err != nil {
			t.Fatal(err)
		}
		want := g
		want.LastActivity, want.LastSeen, want.ExpiresAt = touched.LastActivity, touched.LastSeen, touched.ExpiresAt
		got, err = s.GetGuideSession(ctx, g.IDHash)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(want, got); d != "" {
			t.Errorf("after TouchGuideSession (-want +got):\n%s", d)
		}
		wantKind(t, "TouchGuideSession unknown", s.TouchGuideSession(ctx, NewGuideSession(a, "nope", Epoch)), fault.NotFound)
		if err := s.DeleteGuideSession(ctx, g.IDHash); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "DeleteGuideSession twice", s.DeleteGuideSession(ctx, g.IDHash), fault.NotFound)
		_, err = s.GetGuideSession(ctx, g.IDHash)
		wantKind(t, "GetGuideSession deleted", err, fault.NotFound)
		wantKind(t, "TouchGuideSession deleted", s.TouchGuideSession(ctx, touched), fault.NotFound)
	}},
	{"GuideSessionExpiry", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		want := map[string]bool{}
		for i := range 5 {
			id := fmt.Sprint("s", i)
			g := NewGuideSession(a, id, Epoch.Add(time.Duration(i)*time.Minute))
			if err := s.CreateGuideSession(ctx, g); err != nil {
				t.Fatal(err)
			}
			if i <= 2 {
				want[string(g.IDHash)] = true
			}
		}
		// At Epoch+2m sessions 0, 1 and 2 (ExpiresAt at or before now) are due;
		// limit 2 hands out two of them, the next call the third.
		first, err := s.DeleteExpiredGuideSessions(ctx, Epoch.Add(2*time.Minute), 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		second, err := s.DeleteExpiredGuideSessions(ctx, Epoch.Add(2*time.Minute), 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 2 || len(second) != 1 {
			t.Fatalf("DeleteExpiredGuideSessions gave %d then %d sessions, want 2 then 1", len(first), len(second))
		}
		for _, g := range append(first, second...) {
			if !want[string(g.IDHash)] {
				t.Errorf("session expiring at %v deleted", g.ExpiresAt)
			}
			delete(want, string(g.IDHash))
			if g.UserName != "alice" || g.TenantID != a {
				t.Errorf("returned session %+v lacks its fields", g)
			}
		}
		if again, err := s.DeleteExpiredGuideSessions(ctx, Epoch.Add(2*time.Minute), 10, nil); err != nil || len(again) != 0 {
			t.Errorf("third sweep = %d sessions, %v; want none", len(again), err)
		}
		if _, err := s.GetGuideSession(ctx, guide.HashID("s3")); err != nil {
			t.Errorf("unexpired session: %v", err)
		}
	}},
	{"GuideSessionExpiryAudited", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		for i, tn := range []string{a, b, a} {
			if err := s.CreateGuideSession(ctx, NewGuideSession(tn, fmt.Sprint("s", i), Epoch.Add(time.Duration(i)*time.Minute))); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateGuideSession(ctx, NewGuideSession(a, "live", Epoch.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		build := func(g guide.Session) (*audit.Record, error) {
			return &audit.Record{Time: Epoch, TenantID: g.TenantID, TraceID: "trace", Source: audit.SourcePlatform, ResourceID: "res-1",
				ActorID: g.UserID.String(), Action: guide.ActionExpire, Status: audit.StatusSuccess, Meta: map[string]any{"expires": g.ExpiresAt.String()}}, nil
		}
		// A build that fails leaves every session and the chain as they were.
		boom := fault.E(fault.Unavailable, "no audit")
		_, err := s.DeleteExpiredGuideSessions(ctx, Epoch.Add(2*time.Minute), 10, func(guide.Session) (*audit.Record, error) { return nil, boom })
		if !fault.Is(fault.Unavailable, err) {
			t.Fatalf("sweep with a failing build: %v, want Unavailable", err)
		}
		got, err := s.DeleteExpiredGuideSessions(ctx, Epoch.Add(2*time.Minute), 10, build)
		if err != nil || len(got) != 3 {
			t.Fatalf("sweep = %d sessions, %v; want 3", len(got), err)
		}
		for _, tn := range []string{a, b} {
			recs, err := s.ListAuditRecords(ctx, tn, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			CheckChain(t, recs)
			var want []string
			for _, g := range got {
				if g.TenantID == tn {
					want = append(want, g.ExpiresAt.String())
				}
			}
			var have []string
			for _, r := range recs {
				if r.Action != guide.ActionExpire {
					t.Errorf("record %+v", r)
				}
				have = append(have, fmt.Sprint(r.Meta["expires"]))
			}
			if !gocmp.Equal(want, have) {
				t.Errorf("tenant's records are of sessions expiring %v, want %v", have, want)
			}
		}
		if again, err := s.DeleteExpiredGuideSessions(ctx, Epoch.Add(2*time.Minute), 10, build); err != nil || len(again) != 0 {
			t.Errorf("second sweep = %d sessions, %v; want none", len(again), err)
		}
		if recs, _ := s.ListAuditRecords(ctx, a, 0, 10); len(recs) != 2 {
			t.Errorf("tenant has %d records after an empty sweep, want 2", len(recs))
		}
	}},
	{"GuideSessionExpiryConcurrentSweeps", func(t *testing.T, ctx context.Context, s Store) {
		a := identity.NewGUID()
		const n = 30
		for i := range n {
			if err := s.CreateGuideSession(ctx, NewGuideSession(a, fmt.Sprint("s", i), Epoch)); err != nil {
				t.Fatal(err)
			}
		}
		build := func(g guide.Session) (*audit.Record, error) {
			return &audit.Record{Time: Epoch, TenantID: g.TenantID, TraceID: "trace", Source: audit.SourcePlatform, ResourceID: "res-1",
				ActorID: g.UserID.String(), Action: guide.ActionExpire, Status: audit.StatusSuccess, Meta: map[string]any{"session": g.CSRFToken}}, nil
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			deleted = map[string]int{}
		)
		for range 2 {
			wg.Go(func() {
				for {
					got, err := s.DeleteExpiredGuideSessions(ctx, Epoch, 7, build)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, g := range got {
						deleted[g.CSRFToken]++
					}
					mu.Unlock()
					if len(got) == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		recs, err := s.ListAuditRecords(ctx, a, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		CheckChain(t, recs)
		recorded := map[string]int{}
		for _, r := range recs {
			recorded[fmt.Sprint(r.Meta["session"])]++
		}
		if len(deleted) != n || len(recorded) != n || len(recs) != n {
			t.Fatalf("%d sessions deleted, %d recorded in %d records; want %d each", len(deleted), len(recorded), len(recs), n)
		}
		for id, c := range deleted {
			if c != 1 || recorded[id] != 1 {
				t.Errorf("session %s deleted %d times, recorded %d times", id, c, recorded[id])
			}
		}
	}},
	{"GuideSSOSettings", func(t *testing.T, ctx context.Context, s Store) {
		a, b := identity.NewGUID(), identity.NewGUID()
		_, err := s.GetGuideSSO(ctx, a)
		wantKind(t, "GetGuideSSO none", err, fault.NotFound)
		c := guide.SSOSettings{TenantID: a, Issuer: "https://idp.example", ClientID: "latchkey", ClientSecret: []byte("sealed"),
			AllowedDomains: []string{"example.com", "example.org"}, UpdatedAt: Epoch}
		if err := s.PutGuideSSO(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetGuideSSO(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(c, got); d != "" {
			t.Errorf("GetGuideSSO (-want +got):\n%s", d)
		}
		c.Issuer, c.AllowedDomains, c.UpdatedAt = "https://other.example", []string{}, Epoch.Add(time.Hour)
		if err := s.PutGuideSSO(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got, err = s.GetGuideSSO(ctx, a); err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(c, got); d != "" {
			t.Errorf("GetGuideSSO after replace (-want +got):\n%s", d)
		}
		_, err = s.GetGuideSSO(ctx, b)
		wantKind(t, "GetGuideSSO other tenant", err, fault.NotFound)
		wantKind(t, "DeleteGuideSSO other tenant", s.DeleteGuideSSO(ctx, b), fault.NotFound)
		if err := s.DeleteGuideSSO(ctx, a); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "DeleteGuideSSO twice", s.DeleteGuideSSO(ctx, a), fault.NotFound)
	}},
}
