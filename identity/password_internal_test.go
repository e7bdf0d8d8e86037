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
