package vault_test

import (
	"context"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/vault"
)

// records is an audit sink that keeps what it is given.
type records struct {
	mu   sync.Mutex
	list []audit.Entry
}

func (r *records) Record(_ context.Context, e audit.Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, e)
	return nil
}

// twoProcesses is two vault services on one store, as two processes are
// on one database: each with its own cache.
func twoProcesses(t testing.TB) (a, b *vault.Service, clk *clocktest.Fake) {
	t.Helper()
	st := memstore.New()
	s, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	clk = clocktest.New(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	mk := func() *vault.Service {
		return vault.NewService(vault.Config{Store: st, Sealer: s, Audit: &records{}, Clock: clk})
	}
	return mk(), mk(), clk
}

var admin = identity.Principal{Kind: identity.KindUser, TenantID: "7c4f3a8e-0c1d-4e5f-8a9b-0c1d2e3f4a5b", UserID: "u", Roles: []string{identity.RoleTenantAdmin}, Token: identity.PlatformToken}

func encrypt(t *testing.T, s *vault.Service, key string) error {
	t.Helper()
	pt := base64.StdEncoding.EncodeToString([]byte("x"))
	_, err := s.Crypto(t.Context(), admin, vault.CryptoEncrypt, vault.KeyRef{Key: key}, func(b *vault.Body) error {
		b.Plaintext = &pt
		return nil
	})
	return err
}

// TestChangeHoldsOnOtherProcessesWithin5s: a process reads a key again at
// most 5 seconds after it last did, so a change made through another one
// holds there within 5 seconds; at once when it is told (KeysChanged, the
// LISTEN/NOTIFY of store/postgres).
func TestChangeHoldsOnOtherProcessesWithin5s(t *testing.T) {
	a, b, clk := twoProcesses(t)
	k, err := a.CreateKey(t.Context(), admin, vault.CreateRequest{Name: "shared", KeySpec: vault.KeySpec{Algorithm: "AES", Size: 256}})
	if err != nil {
		t.Fatal(err)
	}
	if err := encrypt(t, b, k.ID); err != nil { // b caches the key
		t.Fatal(err)
	}
	if _, err := a.Revoke(t.Context(), admin, vault.KeyRef{Key: k.ID}, vault.ReasonSuperseded, nil); err != nil {
		t.Fatal(err)
	}
	if err := encrypt(t, a, k.ID); !fault.Is(fault.Conflict, err) {
		t.Fatalf("the process that revoked still encrypts: %v", err)
	}
	clk.Advance(4 * time.Second)
	if err := encrypt(t, b, k.ID); err != nil {
		t.Logf("b saw the change early: %v", err)
	}
	clk.Advance(time.Second)
	if err := encrypt(t, b, k.ID); !fault.Is(fault.Conflict, err) {
		t.Fatalf("5 s after the change, the other process still encrypts: %v", err)
	}
	// Told at once: a second change holds immediately.
	k2, err := a.CreateKey(t.Context(), admin, vault.CreateRequest{Name: "told", KeySpec: vault.KeySpec{Algorithm: "AES", Size: 256}})
	if err != nil {
		t.Fatal(err)
	}
	if err := encrypt(t, b, k2.ID); err != nil {
		t.Fatal(err)
	}
	zero := 0
	if _, err := a.Rotate(t.Context(), admin, vault.KeyRef{Key: k2.ID}, nil); err != nil {
		t.Fatal(err)
	}
	one := 1
	if _, err := a.UpdateKey(t.Context(), admin, vault.KeyRef{Key: k2.ID}, vault.Patch{MinDecryptionVersion: &one, MinEncryptionVersion: &zero}); err != nil {
		t.Fatal(err)
	}
	b.KeysChanged()
	pin := 0
	pt := base64.StdEncoding.EncodeToString([]byte("x"))
	_, err = b.Crypto(t.Context(), admin, vault.CryptoEncrypt, vault.KeyRef{Key: k2.ID}, func(body *vault.Body) error {
		body.Plaintext, body.KeyVersion = &pt, &pin
		return nil
	})
	if !fault.Is(fault.Invalid, err) {
		t.Fatalf("after KeysChanged, version 0 below the new minimum still encrypts: %v", err)
	}
	// A deleted key is gone for the other process within 5 s too.
	if err := a.DeleteKey(t.Context(), admin, vault.KeyRef{Key: k2.ID}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	if err := encrypt(t, b, k2.ID); !fault.Is(fault.NotFound, err) {
		t.Fatalf("a deleted key still encrypts on the other process: %v", err)
	}
}

// TestConcurrentRotationsTwoProcesses: rotations through two services on
// one store each add exactly one version.
func TestConcurrentRotationsTwoProcesses(t *testing.T) {
	a, b, _ := twoProcesses(t)
	k, err := a.CreateKey(t.Context(), admin, vault.CreateRequest{Name: "r", KeySpec: vault.KeySpec{Algorithm: "AES", Size: 128}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	seen := make(chan int, 20)
	for i := range 20 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			v, err := s.Rotate(context.Background(), admin, vault.KeyRef{Key: k.ID}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			seen <- v.Version
		})
	}
	wg.Wait()
	close(seen)
	got := map[int]bool{}
	for v := range seen {
		if got[v] {
			t.Errorf("version %d made twice", v)
		}
		got[v] = true
	}
	for v := 1; v <= 20; v++ {
		if !got[v] {
			t.Errorf("version %d missing", v)
		}
	}
}
