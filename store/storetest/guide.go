package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

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
		first, err := s.DeleteExpiredGuideSessions(ctx, Epoch.Add(2*time.Minute), 2)
		if err != nil {
			t.Fatal(err)
		}
		second, err := s.DeleteExpiredGuideSessions(ctx, Epoch.Add(2*time.Minute), 2)
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
		if again, err := s.DeleteExpiredGuideSessions(ctx, Epoch.Add(2*time.Minute), 10); err != nil || len(again) != 0 {
			t.Errorf("third sweep = %d sessions, %v; want none", len(again), err)
		}
		if _, err := s.GetGuideSession(ctx, guide.HashID("s3")); err != nil {
			t.Errorf("unexpired session: %v", err)
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
