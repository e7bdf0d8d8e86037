package storetest

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var concurrencyTests = []test{
	{"ConcurrentAuditAppendsKeepOneChain", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		const writers, batches = 4, 10
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range batches {
					recs := []*audit.Record{NewRecord(tenant, w*100+i), NewRecord(tenant, w*100+i+50)}
					if err := s.AppendAuditRecords(ctx, recs); err != nil {
						t.Errorf("append: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		got, err := s.ListAuditRecords(ctx, tenant, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != writers*batches*2 {
			t.Fatalf("%d records, want %d", len(got), writers*batches*2)
		}
		CheckChain(t, got)
	}},
	{"ConcurrentRefreshTokenUseOnce", func(t *testing.T, ctx context.Context, s Store) {
		sum := sha256.Sum256([]byte("race"))
		rt := identity.RefreshToken{Hash: sum[:], TenantID: identity.NewGUID(), UserID: identity.NewObjectID(), ExpiresAt: Epoch.Add(time.Hour), CreatedAt: Epoch}
		if err := s.CreateRefreshToken(ctx, rt); err != nil {
			t.Fatal(err)
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		for range 8 {
			wg.Go(func() {
				_, err := s.UseRefreshToken(ctx, sum[:], Epoch)
				if err != nil && !fault.Is(fault.NotFound, err) {
					t.Errorf("use: %v", err)
				}
				if err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Errorf("%d callers used one refresh token", wins)
		}
	}},
	{"ConcurrentEnsureServiceInstance", func(t *testing.T, ctx context.Context, s Store) {
		tenant := identity.NewGUID()
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				si, err := s.EnsureServiceInstance(ctx, audit.NewInstance(tenant, audit.SourceAudit, Epoch))
				if err != nil {
					t.Errorf("ensure: %v", err)
				}
				ids[i] = si.ID
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("concurrent Ensure returned different instances: %v", ids)
			}
		}
	}},
}
