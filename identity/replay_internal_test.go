package identity

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestReplayCacheBounded: the replay cache never holds more than its
// bound, never accepts a proof twice, and, once full of proofs still in
// the window, forgets the oldest second's and refuses every proof of that
// second or older, so a forgotten proof cannot come back.
func TestReplayCacheBounded(t *testing.T) {
	rc := newReplayCache(10)
	now := time.Unix(1_800_000_000, 0)
	key := func(i int) [sha256.Size]byte { return sha256.Sum256(fmt.Appendf(nil, "proof-%d", i)) }
	// Ten proofs, two per second over five seconds, fill the cache.
	for i := range 10 {
		if err := rc.use(key(i), now.Add(time.Duration(i/2)*time.Second), now.Add(5*time.Second)); err != nil {
			t.Fatalf("proof %d: %v", i, err)
		}
	}
	if err := rc.use(key(3), now.Add(time.Second), now.Add(5*time.Second)); !errors.Is(err, ErrInvalidDPoPProof) {
		t.Fatalf("replay of proof 3: %v, want refused", err)
	}
	// An eleventh proof evicts the oldest second (proofs 0 and 1)...
	if err := rc.use(key(10), now.Add(5*time.Second), now.Add(5*time.Second)); err != nil {
		t.Fatalf("proof 10: %v", err)
	}
	if len(rc.seen) > 10 {
		t.Fatalf("cache holds %d proofs, bound 10", len(rc.seen))
	}
	// ...and a replay of a forgotten proof is still refused, by its iat.
	if err := rc.use(key(0), now, now.Add(5*time.Second)); !errors.Is(err, ErrInvalidDPoPProof) {
		t.Fatalf("replay of evicted proof 0: %v, want refused", err)
	}
	// Proofs that left the window are dropped first, without raising the floor.
	later := now.Add(5*time.Second + DPoPProofWindow + 2*time.Second)
	for i := 11; i < 20; i++ {
		if err := rc.use(key(i), later, later); err != nil {
			t.Fatalf("proof %d after the window: %v", i, err)
		}
	}
	if len(rc.seen) > 10 {
		t.Fatalf("cache holds %d proofs, bound 10", len(rc.seen))
	}
}
