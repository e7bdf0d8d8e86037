package idempotency_test

import (
	"context"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/memstore"
)

// A creating request and its retry: the first reserves the key, writes
// with the claim in its context (the store binds the key in the write's
// transaction) and keeps its answer; the retry gets that answer back and
// writes nothing.
func ExampleKeeper() {
	ctx := context.Background()
	st := memstore.New()
	k := &idempotency.Keeper{Store: st, Clock: clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))}
	fingerprint := []byte("POST /admin/tenants {\"name\":\"Acme\"}")

	create := func() (int, string) {
		outcome, kept, claim, err := k.Begin(ctx, "root/user:admin", "create-acme", fingerprint)
		if err != nil {
			return 503, err.Error()
		}
		if outcome == idempotency.Replay {
			return kept.Status, string(kept.Body) + " (replayed)"
		}
		t := identity.Tenant{ID: identity.NewGUID(), Code: "ACME000001", Name: "Acme", Settings: identity.DefaultSettings(), CreatedAt: time.Now()}
		if err := st.CreateTenant(idempotency.WithClaim(ctx, claim), t); err != nil {
			return 409, err.Error()
		}
		body := `{"code":"ACME000001"}`
		if err := k.Finish(ctx, claim, 201, "application/json", []byte(body)); err != nil {
			return 500, err.Error()
		}
		return 201, body
	}
	fmt.Println(create())
	fmt.Println(create())
	// Output:
	// 201 {"code":"ACME000001"}
	// 201 {"code":"ACME000001"} (replayed)
}
