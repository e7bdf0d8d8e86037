package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
)

// newIdem is a Running reservation made at Epoch.
func newIdem(scope, key, fp string) idempotency.Entry {
	return idempotency.Entry{
		Scope: scope, Key: key, Fingerprint: []byte(fp), Token: idempotency.NewToken(), State: idempotency.Running,
		CreatedAt: Epoch, LeaseUntil: Epoch.Add(idempotency.Lease), ExpiresAt: Epoch.Add(idempotency.TTL),
		Body: []byte{},
	}
}

func mustReserve(t *testing.T, ctx context.Context, s Store, e idempotency.Entry, now time.Time) idempotency.Entry {
	t.Helper()
	got, err := s.ReserveIdempotencyKey(ctx, e, now)
	if err != nil {
		t.Fatalf("ReserveIdempotencyKey: %v", err)
	}
	return got
}

var idempotencyTests = []test{
	{"IdempotencyReserveCompleteReplay", func(t *testing.T, ctx context.Context, s Store) {
		first := newIdem("t1/user:a", "k1", "fp")
		if got := mustReserve(t, ctx, s, first, Epoch); got.Token != first.Token {
			t.Fatalf("first reservation not granted: %+v", got)
		}
		second := newIdem("t1/user:a", "k1", "fp")
		got := mustReserve(t, ctx, s, second, Epoch.Add(time.Second))
		if got.Token != first.Token || got.State != idempotency.Running {
			t.Fatalf("second reservation: got %+v, want the first, running", got)
		}
		// Another scope, same key: its own.
		if o := newIdem("t1/user:b", "k1", "fp"); mustReserve(t, ctx, s, o, Epoch).Token != o.Token {
			t.Error("a key of another scope was not reserved on its own")
		}
		if err := s.CompleteIdempotencyKey(ctx, first.Scope, first.Key, first.Token, 201, "application/json", []byte(`{"id":"x"}`)); err != nil {
			t.Fatal(err)
		}
		got = mustReserve(t, ctx, s, newIdem("t1/user:a", "k1", "fp"), Epoch.Add(2*idempotency.Lease))
		want := first
		want.State, want.Status, want.ContentType, want.Body = idempotency.Done, 201, "application/json", []byte(`{"id":"x"}`)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("kept answer (-want +got):\n%s", d)
		}
		wantKind(t, "complete with a wrong token", s.CompleteIdempotencyKey(ctx, first.Scope, first.Key, "other", 200, "", nil), fault.NotFound)
	}},
	{"IdempotencyLapsedLeaseTakenOver", func(t *testing.T, ctx context.Context, s Store) {
		first := newIdem("sc", "k", "fp")
		mustReserve(t, ctx, s, first, Epoch)
		// Another body after the lease: still the first's (a mismatch).
		if got := mustReserve(t, ctx, s, newIdem("sc", "k", "other"), Epoch.Add(idempotency.Lease)); got.Token != first.Token {
			t.Error("a different body took over a lapsed reservation")
		}
		retry := newIdem("sc", "k", "fp")
		retry.CreatedAt, retry.LeaseUntil = Epoch.Add(idempotency.Lease), Epoch.Add(2*idempotency.Lease)
		if got := mustReserve(t, ctx, s, retry, Epoch.Add(idempotency.Lease)); got.Token != retry.Token {
			t.Fatalf("retry after the lease: got %+v, want its own reservation", got)
		}
		// The first request's write now fails and stores nothing.
		cl := &idempotency.Claim{Scope: first.Scope, Key: first.Key, Token: first.Token}
		tn := NewTenant("IDEM000001")
		wantKind(t, "write of the overtaken request", s.CreateTenant(idempotency.WithClaim(ctx, cl), tn), fault.Conflict)
		if cl.Bound() {
			t.Error("claim bound by a failed write")
		}
		if _, err := s.GetTenant(ctx, tn.ID); !fault.Is(fault.NotFound, err) {
			t.Errorf("the overtaken request's tenant was stored: %v", err)
		}
	}},
	{"IdempotencyBoundInWrite", func(t *testing.T, ctx context.Context, s Store) {
		e := newIdem("sc", "k", "fp")
		mustReserve(t, ctx, s, e, Epoch)
		cl := &idempotency.Claim{Scope: e.Scope, Key: e.Key, Token: e.Token}
		cctx := idempotency.WithClaim(ctx, cl)
		tn := NewTenant("IDEM000002")
		if err := s.CreateTenant(cctx, tn); err != nil {
			t.Fatal(err)
		}
		if !cl.Bound() {
			t.Fatal("claim not bound by the write")
		}
		// Later writes of the request do not bind again.
		if err := s.CreateUser(cctx, identity.User{ID: identity.NewObjectID(), TenantID: tn.ID, Name: "u", Roles: []string{}, CreatedAt: Epoch}); err != nil {
			t.Fatal(err)
		}
		// The key is now stored: a retry after the lease is not given it.
		got := mustReserve(t, ctx, s, newIdem("sc", "k", "fp"), Epoch.Add(2*idempotency.Lease))
		if got.Token != e.Token || got.State != idempotency.Stored {
			t.Errorf("after the write: got %+v, want the first reservation, stored", got)
		}
	}},
	{"IdempotencyGroupCommitBindsEvery", func(t *testing.T, ctx context.Context, s Store) {
		tn := mustCreateTenant(t, ctx, s, "IDEM000003")
		var cs []*idempotency.Claim
		for _, k := range []string{"a", "b"} {
			e := newIdem("sc", k, "fp")
			mustReserve(t, ctx, s, e, Epoch)
			cs = append(cs, &idempotency.Claim{Scope: e.Scope, Key: e.Key, Token: e.Token})
		}
		evs := []*events.Event{userEvent(t, tn.ID, 1, "10001", "u1", "gold"), userEvent(t, tn.ID, 2, "10001", "u2", "gold")}
		if err := s.AppendEvents(idempotency.WithClaims(ctx, cs), evs); err != nil {
			t.Fatal(err)
		}
		for _, cl := range cs {
			if !cl.Bound() {
				t.Errorf("claim %s not bound", cl.Key)
			}
		}
		// One lost reservation fails the whole append.
		e := newIdem("sc", "c", "fp")
		mustReserve(t, ctx, s, e, Epoch)
		if err := s.ReleaseIdempotencyKey(ctx, e.Scope, e.Key, e.Token); err != nil {
			t.Fatal(err)
		}
		cl := &idempotency.Claim{Scope: e.Scope, Key: e.Key, Token: e.Token}
		err := s.AppendEvents(idempotency.WithClaim(ctx, cl), []*events.Event{userEvent(t, tn.ID, 3, "10001", "u1", "gold")})
		wantKind(t, "append with a released claim", err, fault.Conflict)
		got, _, err := s.QueryEvents(ctx, tn.ID, events.Query{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Errorf("events stored: %d, want 2", len(got))
		}
	}},
	{"IdempotencyReleasePurge", func(t *testing.T, ctx context.Context, s Store) {
		e := newIdem("sc", "k", "fp")
		mustReserve(t, ctx, s, e, Epoch)
		if err := s.ReleaseIdempotencyKey(ctx, e.Scope, e.Key, "not-the-token"); err != nil {
			t.Fatal(err)
		}
		if got := mustReserve(t, ctx, s, newIdem("sc", "k", "fp"), Epoch); got.Token != e.Token {
			t.Error("a release with the wrong token released the key")
		}
		if err := s.ReleaseIdempotencyKey(ctx, e.Scope, e.Key, e.Token); err != nil {
			t.Fatal(err)
		}
		again := newIdem("sc", "k", "other body")
		if got := mustReserve(t, ctx, s, again, Epoch); got.Token != again.Token {
			t.Error("a released key was not given to the next request")
		}
		mustReserve(t, ctx, s, newIdem("sc", "k2", "fp"), Epoch)
		n, err := s.PurgeIdempotencyKeys(ctx, Epoch.Add(idempotency.TTL-time.Microsecond), 10)
		if err != nil || n != 0 {
			t.Fatalf("purge before expiry: %d, %v", n, err)
		}
		n, err = s.PurgeIdempotencyKeys(ctx, Epoch.Add(idempotency.TTL), 1)
		if err != nil || n != 1 {
			t.Fatalf("purge at expiry, limit 1: %d, %v", n, err)
		}
		n, err = s.PurgeIdempotencyKeys(ctx, Epoch.Add(idempotency.TTL), 10)
		if err != nil || n != 1 {
			t.Fatalf("purge of the rest: %d, %v", n, err)
		}
		// An expired key is given to a new request even before the purge.
		old := newIdem("sc", "k3", "fp")
		mustReserve(t, ctx, s, old, Epoch)
		fresh := newIdem("sc", "k3", "other")
		if got := mustReserve(t, ctx, s, fresh, Epoch.Add(idempotency.TTL)); got.Token != fresh.Token {
			t.Error("an expired key was not given to a new request")
		}
	}},
}
