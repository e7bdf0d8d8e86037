package postgres_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/postgres"
)

// TestPlatformsStartTogether starts several platforms, each on its own
// Store (as separate processes would), on one empty schema at the same
// moment: they must agree on one signing key, one client CA and one root
// tenant with one admin, and a token issued by one verifies on the others.
// A platform with another master key must then refuse to start.
func TestPlatformsStartTogether(t *testing.T) {
	schema := freshSchema(t)
	key := seal.NewKey()
	const n = 4
	plats := make([]*latchkey.Platform, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		s := open(t, schema)
		t.Cleanup(func() { s.Close() })
		wg.Go(func() {
			p, err := latchkey.New(t.Context(), latchkey.Config{Store: s, MasterKey: key, Issuer: "test",
				PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true})
			if err != nil {
				t.Errorf("New %d: %v", i, err)
				return
			}
			t.Cleanup(func() { p.Close() })
			res, err := p.Bootstrap(t.Context(), "correct-horse-1")
			if err != nil {
				t.Errorf("Bootstrap %d: %v", i, err)
				return
			}
			plats[i], created[i] = p, res.Created
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// The signing key is the platform-jwt vault key's version (issue 34):
	// every platform signs with the one version the first start made.
	_, kid0 := plats[0].Identity.Keys().SigningKey()
	if kid0 == "" {
		t.Fatal("platform 0 has no signing key")
	}
	nCreated := 0
	for i, p := range plats {
		if created[i] {
			nCreated++
		}
		if _, kid := p.Identity.Keys().SigningKey(); kid != kid0 {
			t.Errorf("platform %d signs with %s, want %s", i, kid, kid0)
		}
		if !p.Clients.CA().Certificate().Equal(plats[0].Clients.CA().Certificate()) {
			t.Errorf("platform %d has another client CA", i)
		}
	}
	if nCreated != 1 {
		t.Errorf("%d platforms report creating the root tenant, want 1", nCreated)
	}
	tok, err := plats[0].Identity.Login(t.Context(), identity.LoginRequest{Name: identity.AdminName, Password: "correct-horse-1"})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range plats[1:] {
		if _, err := p.Identity.Keys().Verify(tok.JWT, identity.PlatformToken); err != nil {
			t.Errorf("platform %d rejects a token of platform 0: %v", i+1, err)
		}
	}
	s := open(t, schema)
	defer s.Close()
	if _, err := latchkey.New(t.Context(), latchkey.Config{Store: s, MasterKey: seal.NewKey()}); err == nil {
		t.Error("New with another master key succeeded; want it refused")
	}
}

// TestWithLockExcludes holds a named lock from one Store and checks that
// another Store (another process) waits for it.
func TestWithLockExcludes(t *testing.T) {
	schema := freshSchema(t)
	a, b := open(t, schema), open(t, schema)
	defer a.Close()
	defer b.Close()
	held, release := make(chan struct{}), make(chan struct{})
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	errc := make(chan error, 1)
	go func() {
		errc <- a.WithLock(t.Context(), "x", func(context.Context) error {
			close(held)
			<-release
			note("a")
			return nil
		})
	}()
	<-held
	done := make(chan error, 1)
	go func() { done <- b.WithLock(t.Context(), "x", func(context.Context) error { note("b"); return nil }) }()
	// Wait until b's lock request is queued behind a's (PostgreSQL shows it
	// as an ungranted lock), then check b has not run.
	conn, err := pgx.Connect(t.Context(), dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second WithLock never waited for the lock")
		}
		runtime.Gosched()
	}
	select {
	case <-done:
		t.Fatal("second WithLock ran while the lock was held")
	default:
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "a" {
		t.Errorf("order = %v, want [a b]", order)
	}
}

// TestNotifyWakesListener checks LISTEN/NOTIFY across two Stores: a
// listener first gets its connection signal, then one per Notify.
func TestNotifyWakesListener(t *testing.T) {
	schema := freshSchema(t)
	a, b := open(t, schema), open(t, schema)
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context())
	wake := a.Listen(ctx, "lk_test")
	wait := func(what string) {
		t.Helper()
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatalf("no signal: %s", what)
		}
	}
	wait("connected")
	if err := b.Notify(t.Context(), "lk_test"); err != nil {
		t.Fatal(err)
	}
	wait("notified")
	cancel()
	for range wake { // closed once ctx ends
	}
}

var _ latchkey.Locker = (*postgres.Store)(nil)
var _ latchkey.Notifier = (*postgres.Store)(nil)
