package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
)

// newIdem is a Running reservation made at Epoch.
func newIdem(scope, key, fp string) idempotency.Entry { return newIdemAt(scope, key, fp, Epoch) }

// newIdemAt is a Running reservation made at at.
func newIdemAt(scope, key, fp string, at time.Time) idempotency.Entry {
	return idempotency.Entry{
		Scope: scope, Key: key, Fingerprint: []byte(fp), Token: idempotency.NewToken(), State: idempotency.Running,
		CreatedAt: at, LeaseUntil: at.Add(idempotency.Lease), ExpiresAt: at.Add(idempotency.TTL),
		Body: []byte{},
	}
}

func mustReserve(t *testing.T, ctx context.Context, s Store, e idempotency.Entry, now time.Time) idempotency.Entry {
	t.Helper()
	got, err := s.ReserveIdempotencyKeys(ctx, []idempotency.Entry{e}, now)
	if err != nil || len(got) != 1 {
		t.Fatalf("ReserveIdempotencyKeys: %v, %d entries", err, len(got))
	}
	return got[0]
}

func finish(ctx context.Context, s Store, a idempotency.Answer) error {
	return s.FinishIdempotencyKeys(ctx, []idempotency.Answer{a})
}

func release(ctx context.Context, s Store, e idempotency.Entry, token string) error {
	return finish(ctx, s, idempotency.Answer{Scope: e.Scope, Key: e.Key, Token: token, Release: true})
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
		if err := finish(ctx, s, idempotency.Answer{Scope: first.Scope, Key: first.Key, Token: first.Token, Status: 201, ContentType: "application/json", Body: []byte(`{"id":"x"}`)}); err != nil {
			t.Fatal(err)
		}
		got = mustReserve(t, ctx, s, newIdem("t1/user:a", "k1", "fp"), Epoch.Add(2*idempotency.Lease))
		want := first
		want.State, want.Status, want.ContentType, want.Body = idempotency.Done, 201, "application/json", []byte(`{"id":"x"}`)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("kept answer (-want +got):\n%s", d)
		}
		// An answer or release under another token leaves the key as it is.
		if err := finish(ctx, s, idempotency.Answer{Scope: first.Scope, Key: first.Key, Token: "other", Status: 500}); err != nil {
			t.Fatal(err)
		}
		if err := release(ctx, s, first, "other"); err != nil {
			t.Fatal(err)
		}
		got = mustReserve(t, ctx, s, newIdem("t1/user:a", "k1", "fp"), Epoch.Add(2*idempotency.Lease))
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("after a wrong token's answer (-want +got):\n%s", d)
		}
	}},
	{"IdempotencyBatch", func(t *testing.T, ctx context.Context, s Store) {
		// One transaction for several requests: distinct keys are each
		// reserved; a key given twice is the first's for the second.
		a, b, a2 := newIdem("sc", "a", "fp"), newIdem("sc", "b", "fp"), newIdem("sc", "a", "fp")
		got, err := s.ReserveIdempotencyKeys(ctx, []idempotency.Entry{a, b, a2}, Epoch)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Token != a.Token || got[1].Token != b.Token || got[2].Token != a.Token {
			t.Errorf("tokens %s %s %s, want %s %s %s", got[0].Token, got[1].Token, got[2].Token, a.Token, b.Token, a.Token)
		}
		// The same for a key the batch takes over (expired).
		later := Epoch.Add(idempotency.TTL)
		c, c2 := newIdemAt("sc", "a", "new", later), newIdemAt("sc", "a", "new", later)
		got, err = s.ReserveIdempotencyKeys(ctx, []idempotency.Entry{c, c2}, later)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Token != c.Token || got[1].Token != c.Token {
			t.Errorf("takeover in a batch: %s %s, want %s twice", got[0].Token, got[1].Token, c.Token)
		}
		err = s.FinishIdempotencyKeys(ctx, []idempotency.Answer{
			{Scope: "sc", Key: "a", Token: c.Token, Status: 200, Body: []byte("A")},
			{Scope: "sc", Key: "b", Token: b.Token, Release: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err = s.ReserveIdempotencyKeys(ctx, []idempotency.Entry{newIdemAt("sc", "a", "new", later), newIdemAt("sc", "b", "other", later)}, later)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].State != idempotency.Done || string(got[0].Body) != "A" || got[1].Fingerprint == nil || string(got[1].Fingerprint) != "other" {
			t.Errorf("after finishing: %+v %+v", got[0], got[1])
		}
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
		// The key is now stored: a retry after the lease is not given it,
		// and a release (the request answered 5xx, not knowing its commit
		// took place) leaves it stored.
		if err := release(ctx, s, e, e.Token); err != nil {
			t.Fatal(err)
		}
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
		if err := release(ctx, s, e, e.Token); err != nil {
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
	{"IdempotencyPreparedAnswerKeptWithWrite", func(t *testing.T, ctx context.Context, s Store) {
		// A request whose service prepared its answer (PrepareAnswer) has
		// it kept in the write's own transaction, rendered after the store
		// assigned its ids: a retry after a crash between the commit and
		// Finish is given the answer, not told it was lost.
		tn := mustCreateTenant(t, ctx, s, "IDEM000004")
		enc := func(v any) (int, string, []byte) { return 200, "application/json", []byte(fmt.Sprint(v)) }
		for _, tc := range []struct {
			name  string
			write func(ctx context.Context) (want string, err error)
		}{
			{"group commit", func(ctx context.Context) (string, error) {
				ev := userEvent(t, tn.ID, 1, "10001", "u1", "gold")
				idempotency.PrepareAnswer(ctx, func() any { return "id=" + ev.ID })
				err := s.AppendEvents(ctx, []*events.Event{ev})
				return "id=" + ev.ID, err
			}},
			{"transaction", func(ctx context.Context) (string, error) {
				u := identity.User{ID: identity.NewObjectID(), TenantID: tn.ID, Name: "prepared", Roles: []string{}, CreatedAt: Epoch}
				idempotency.PrepareAnswer(ctx, func() any { return "user=" + u.ID.String() })
				return "user=" + u.ID.String(), s.CreateUser(ctx, u)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newIdem("sc", "prepared-"+tc.name, "fp")
				mustReserve(t, ctx, s, e, Epoch)
				cctx := idempotency.WithClaim(ctx, &idempotency.Claim{Scope: e.Scope, Key: e.Key, Token: e.Token})
				idempotency.EncodeAnswer(cctx, enc)
				want, err := tc.write(cctx)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(want, "=") || strings.HasSuffix(want, "=") {
					t.Fatalf("the write assigned no id: %q", want)
				}
				// No Finish: the process died after the commit.
				got := mustReserve(t, ctx, s, newIdem("sc", e.Key, "fp"), Epoch.Add(2*idempotency.Lease))
				if got.Token != e.Token || got.State != idempotency.Done || got.Status != 200 || string(got.Body) != want {
					t.Errorf("after the write: got %s %d %q (token %v), want done 200 %q", got.State, got.Status, got.Body, got.Token == e.Token, want)
				}
			})
		}
	}},
	{"IdempotencyReleasePurge", func(t *testing.T, ctx context.Context, s Store) {
		e := newIdem("sc", "k", "fp")
		mustReserve(t, ctx, s, e, Epoch)
		if err := release(ctx, s, e, "not-the-token"); err != nil {
			t.Fatal(err)
		}
		if got := mustReserve(t, ctx, s, newIdem("sc", "k", "fp"), Epoch); got.Token != e.Token {
			t.Error("a release with the wrong token released the key")
		}
		if err := release(ctx, s, e, e.Token); err != nil {
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
