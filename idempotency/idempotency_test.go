package idempotency_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/memstore"
)

func TestParseKey(t *testing.T) {
	max := strings.Repeat("k", idempotency.MaxKeyLength)
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`"quoted key"`, "quoted key", true},
		{`"esc \" and \\"`, `esc " and \`, true},
		{"a", "a", true},
		{max, max, true},
		{"with space ~", "with space ~", true},
		{"", "", false},
		{`""`, "", false},
		{max + "k", "", false},
		{"tab\tkey", "", false},
		{"é", "", false},
		{"nul\x00", "", false},
		{`"bad \x escape"`, "", false},
		{`"inner " quote"`, "", false},
		{`"trailing \"`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := idempotency.ParseKey(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ParseKey(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
			}
			if err != nil && !fault.Is(fault.Invalid, err) {
				t.Errorf("error kind: %v", err)
			}
		})
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"k", `"k"`, `"a\"b"`, `"\\"`, "", `"`, "\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		k, err := idempotency.ParseKey(in)
		if err != nil {
			if !fault.Is(fault.Invalid, err) {
				t.Fatalf("error of kind other than Invalid: %v", err)
			}
			return
		}
		if k == "" || len(k) > idempotency.MaxKeyLength {
			t.Fatalf("accepted key of %d bytes", len(k))
		}
		for i := 0; i < len(k); i++ {
			if k[i] < 0x20 || k[i] > 0x7e {
				t.Fatalf("accepted byte %#x", k[i])
			}
		}
	})
}

func TestKeep(t *testing.T) {
	for status, want := range map[int]bool{200: true, 201: true, 202: true, 400: true, 404: true, 409: true, 422: true, 429: false, 500: false, 503: false} {
		if got := idempotency.Keep(status); got != want {
			t.Errorf("Keep(%d) = %v, want %v", status, got, want)
		}
	}
}

// TestKeeperOutcomes walks a key through its life on the in-memory store
// with a fake clock: reserved, in flight, stored, answered, replayed,
// refused for another request, lost, taken over after a lapsed lease.
func TestKeeperOutcomes(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	st := memstore.New()
	k := &idempotency.Keeper{Store: st, Clock: clk}
	begin := func(key, fp string, want idempotency.Outcome) (idempotency.Entry, *idempotency.Claim) {
		t.Helper()
		got, e, cl, err := k.Begin(ctx, "tenant/user:u", key, []byte(fp))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("Begin(%s, %s) = %v, want %v (entry %+v)", key, fp, got, want, e)
		}
		return e, cl
	}
	_, cl := begin("k", "A", idempotency.Proceed)
	begin("k", "A", idempotency.InFlight)
	begin("k", "B", idempotency.Mismatch)
	// The request writes: the claim is bound with the write.
	tn := identity.Tenant{ID: identity.NewGUID(), Code: "IDEM000001", Name: "x", Settings: identity.DefaultSettings(), CreatedAt: clk.Now()}
	if err := st.CreateTenant(idempotency.WithClaim(ctx, cl), tn); err != nil {
		t.Fatal(err)
	}
	if !cl.Bound() {
		t.Fatal("claim not bound")
	}
	begin("k", "A", idempotency.InFlight)
	if err := k.Finish(ctx, cl, 201, "application/json", []byte(`{"id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	e, _ := begin("k", "A", idempotency.Replay)
	if e.Status != 201 || string(e.Body) != `{"id":"x"}` || e.ContentType != "application/json" {
		t.Errorf("replayed %d %q %s", e.Status, e.ContentType, e.Body)
	}
	begin("k", "B", idempotency.Mismatch)

	// A request that stored its write but died before its answer: lost
	// once its lease lapsed, never run again.
	_, cl = begin("lost", "A", idempotency.Proceed)
	tn.ID, tn.Code = identity.NewGUID(), "IDEM000002"
	if err := st.CreateTenant(idempotency.WithClaim(ctx, cl), tn); err != nil {
		t.Fatal(err)
	}
	clk.Advance(idempotency.Lease)
	begin("lost", "A", idempotency.Lost)

	// A request that died before writing: its retry takes over after the
	// lease, and the first, should it still write, is refused.
	_, first := begin("dead", "A", idempotency.Proceed)
	clk.Advance(idempotency.Lease - time.Second)
	begin("dead", "A", idempotency.InFlight)
	clk.Advance(time.Second)
	_, retry := begin("dead", "A", idempotency.Proceed)
	tn.ID, tn.Code = identity.NewGUID(), "IDEM000003"
	if err := st.CreateTenant(idempotency.WithClaim(ctx, first), tn); !fault.Is(fault.Conflict, err) {
		t.Errorf("write of the overtaken request: %v, want Conflict", err)
	}
	// A 5xx releases the key: the next request runs afresh.
	if err := k.Finish(ctx, retry, 503, "application/json", nil); err != nil {
		t.Fatal(err)
	}
	begin("dead", "B", idempotency.Proceed)

	// A 5xx after the write was stored (its audit record failed) keeps
	// the key stored: the retry is refused, never run again.
	_, cl = begin("stored-5xx", "A", idempotency.Proceed)
	tn.ID, tn.Code = identity.NewGUID(), "IDEM000004"
	if err := st.CreateTenant(idempotency.WithClaim(ctx, cl), tn); err != nil {
		t.Fatal(err)
	}
	if err := k.Finish(ctx, cl, 503, "application/json", nil); err != nil {
		t.Fatal(err)
	}
	begin("stored-5xx", "A", idempotency.InFlight)
	clk.Advance(idempotency.Lease)
	begin("stored-5xx", "A", idempotency.Lost)

	// Expired keys are purged; the key is then free.
	clk.Advance(idempotency.TTL)
	n, err := k.Purge(ctx)
	if err != nil || n != 4 {
		t.Errorf("Purge = %d, %v; want 4", n, err)
	}
	begin("k", "B", idempotency.Proceed)
}

// purgeSpy reports each purge's count.
type purgeSpy struct {
	*memstore.Store
	purged chan int
}

func (p purgeSpy) PurgeIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error) {
	n, err := p.Store.PurgeIdempotencyKeys(ctx, now, limit)
	p.purged <- n
	return n, err
}

// Run purges expired keys every PurgeEvery.
func TestKeeperRunPurges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	st := purgeSpy{memstore.New(), make(chan int, 1)}
	k := &idempotency.Keeper{Store: st, Clock: clk}
	if _, _, _, err := k.Begin(ctx, "sc", "old", []byte("fp")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		k.Run(ctx)
		close(done)
	}()
	clk.WaitForTimers(1)
	clk.Advance(idempotency.PurgeEvery)
	if n := <-st.purged; n != 0 {
		t.Errorf("first tick purged %d keys, want 0 (not expired)", n)
	}
	clk.Advance(idempotency.TTL)
	if n := <-st.purged; n != 1 {
		t.Errorf("tick after expiry purged %d keys, want 1", n)
	}
	cancel()
	<-done
}

// finishOutage is a store whose first finish fails, as when the database
// is out of reach just as a request answers 503; later ones go through.
type finishOutage struct {
	*memstore.Store
	n     *atomic.Int32
	calls chan []idempotency.Answer
}

func (f finishOutage) FinishIdempotencyKeys(ctx context.Context, as []idempotency.Answer) error {
	defer func() { f.calls <- as }()
	if f.n.Add(1) == 1 {
		return fault.E(fault.Unavailable, "database unavailable")
	}
	return f.Store.FinishIdempotencyKeys(ctx, as)
}

// A release that fails because the database is away is tried again in
// the background, so the key is free as soon as the database is back
// instead of when its reservation lapses (10 s of 409 for the client's
// retries).
func TestFailedReleaseIsRetried(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	st := finishOutage{memstore.New(), new(atomic.Int32), make(chan []idempotency.Answer, 2)}
	k := &idempotency.Keeper{Store: st, Clock: clk}
	_, _, cl, err := k.Begin(ctx, "sc", "k", []byte("fp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Finish(ctx, cl, 503, "application/json", []byte(`{}`)); !fault.Is(fault.Unavailable, err) {
		t.Fatalf("Finish = %v, want the outage", err)
	}
	<-st.calls
	clk.WaitForTimers(1)
	clk.Advance(time.Second)
	if as := <-st.calls; len(as) != 1 || !as[0].Release {
		t.Fatalf("retried finish = %+v, want the release", as)
	}
	if got, _, _, err := k.Begin(ctx, "sc", "k", []byte("fp")); err != nil || got != idempotency.Proceed {
		t.Errorf("Begin after the release = %v, %v; want Proceed long before the lease lapses", got, err)
	}
}
