package identity

import (
	"context"
	"testing"

	"github.com/latchkey/latchkey/fault"
)

// With every slot taken, a further hash waits and gives up with its context:
// this is what keeps 200 simultaneous logins from holding 200 hashes' memory.
func TestHasherBoundsConcurrency(t *testing.T) {
	h := NewHasher(PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, 2)
	if cap(h.sem) != 2 {
		t.Fatalf("semaphore size %d, want 2", cap(h.sem))
	}
	h.sem <- struct{}{}
	h.sem <- struct{}{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Hash(ctx, "pw"); !fault.Is(fault.Unavailable, err) {
		t.Fatalf("Hash with all slots taken: %v, want Unavailable", err)
	}
	if _, err := h.Verify(ctx, "", "pw"); !fault.Is(fault.Unavailable, err) {
		t.Fatalf("Verify with all slots taken: %v, want Unavailable", err)
	}
	<-h.sem
	if _, err := h.Hash(context.Background(), "pw"); err != nil {
		t.Fatalf("Hash with a free slot: %v", err)
	}
	if len(h.sem) != 1 {
		t.Fatalf("slot not released: %d in use", len(h.sem))
	}
}

// TestHashSlotsAreWeightedByMemory: a check that needs all the slots'
// memory (a 128 MiB scrypt hash) holds it until it is done, so no other
// check gets any; CPU slots still bound the count of checks however little
// memory each needs.
func TestHashSlotsAreWeightedByMemory(t *testing.T) {
	h := NewHasher(PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, 4)
	if h.MemoryCapacityKiB() != minHashMemoryKiB {
		t.Fatalf("capacity %d KiB, want the 128 MiB floor", h.MemoryCapacityKiB())
	}
	release, err := h.acquire(t.Context(), scryptMemoryKiB(maxScryptLogN, maxScryptR))
	if err != nil {
		t.Fatal(err)
	}
	if h.mem.TryAcquire(1) {
		t.Fatal("memory left while a 128 MiB check runs")
	}
	release()
	if !h.mem.TryAcquire(h.memCap) {
		t.Fatal("memory not given back")
	}
	h.mem.Release(h.memCap)
	var rs []func()
	for range 4 {
		r, err := h.acquire(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if len(h.sem) != cap(h.sem) {
		t.Errorf("%d of %d CPU slots taken by 4 checks", len(h.sem), cap(h.sem))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.acquire(ctx, 1); !fault.Is(fault.Unavailable, err) {
		t.Errorf("a fifth check: %v, want Unavailable", err)
	}
	for _, r := range rs {
		r()
	}
	if len(h.sem) != 0 || !h.mem.TryAcquire(h.memCap) {
		t.Error("slots not given back")
	}
}
