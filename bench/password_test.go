package bench_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/latchkey/latchkey/identity"
)

// P8: password login throughput against raw argon2id with the same
// parameters, and peak heap while 200 logins arrive at once.
func BenchmarkP8PasswordLogin(b *testing.B) { benchPasswordLogin(b, newEnv) }

// BenchmarkP8PasswordLoginPostgres is P8 with the platform on PostgreSQL
// (a fresh schema of $PLATFORM_POSTGRES_DSN).
func BenchmarkP8PasswordLoginPostgres(b *testing.B) { benchPasswordLogin(b, newEnvPostgres) }

func benchPasswordLogin(b *testing.B, newE envMaker) {
	p := identity.OWASPMinimum()
	b.Run("baseline=raw-argon2id", func(b *testing.B) {
		salt := make([]byte, 16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				argon2.IDKey([]byte("bench-password-1"), salt, p.Time, p.MemoryKiB, p.Threads, 32)
			}
		})
	})
	b.Run("latchkey-login", func(b *testing.B) {
		e := newE(b, p)
		req := identity.LoginRequest{Name: identity.AdminName, Password: "bench-password-1"}
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := e.p.Identity.Login(context.Background(), req); err != nil {
					b.Error(err)
				}
			}
		})
	})
	b.Run("200-simultaneous-logins", func(b *testing.B) {
		e := newE(b, p)
		req := identity.LoginRequest{Name: identity.AdminName, Password: "bench-password-1"}
		var peak atomic.Uint64
		for b.Loop() {
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			stop := make(chan struct{})
			var sampler sync.WaitGroup
			sampler.Go(func() {
				var ms runtime.MemStats
				t := time.NewTicker(2 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
						runtime.ReadMemStats(&ms)
						if d := ms.HeapInuse - min(ms.HeapInuse, base.HeapInuse); d > peak.Load() {
							peak.Store(d)
						}
					}
				}
			})
			var wg sync.WaitGroup
			for range 200 {
				wg.Go(func() {
					if _, err := e.p.Identity.Login(context.Background(), req); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			close(stop)
			sampler.Wait()
		}
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(p.MemoryKiB)/1024*200, "unbounded-MiB")
	})
}
