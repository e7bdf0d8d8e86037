package ttlcache_test

import (
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/ttlcache"
)

func TestExpiryDeleteAndBound(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := ttlcache.New[string, int](time.Second, 2)
	c.Put("a", 1, now)
	if v, ok := c.Get("a", now.Add(999*time.Millisecond)); !ok || v != 1 {
		t.Fatalf("Get before expiry = %v, %v", v, ok)
	}
	if _, ok := c.Get("a", now.Add(time.Second)); ok {
		t.Fatal("entry served at its expiry")
	}
	c.Put("b", 2, now)
	c.Delete("b")
	if _, ok := c.Get("b", now); ok {
		t.Fatal("deleted entry served")
	}
	c.Put("x", 1, now)
	c.Put("y", 2, now)
	c.Put("z", 3, now) // full of live entries: cleared, then z stored
	if _, ok := c.Get("z", now); !ok {
		t.Fatal("newest entry missing after overflow")
	}
	if _, ok := c.Get("x", now); ok {
		t.Fatal("cache grew past its bound")
	}
}
