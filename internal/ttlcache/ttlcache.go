// Package ttlcache is a small bounded cache whose entries expire after a
// fixed time, for lookups that are read far more often than they change.
package ttlcache

import (
	"sync"
	"time"
)

// Cache maps keys to values for at most TTL each. The zero value is not
// usable; use New. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[K]entry[V]
}

type entry[V any] struct {
	v   V
	exp time.Time
}

// New returns a cache of at most max entries, each kept for ttl.
func New[K comparable, V any](ttl time.Duration, max int) *Cache[K, V] {
	return &Cache[K, V]{ttl: ttl, max: max, m: make(map[K]entry[V])}
}

// Get returns the value for k if it was put less than TTL before now.
func (c *Cache[K, V]) Get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || !now.Before(e.exp) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put stores v for k from now. When full, expired entries are dropped, and
// if none were, everything is: a cache miss only costs the lookup.
func (c *Cache[K, V]) Put(k K, v V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for key, e := range c.m {
			if !now.Before(e.exp) {
				delete(c.m, key)
			}
		}
		if len(c.m) >= c.max {
			clear(c.m)
		}
	}
	c.m[k] = entry[V]{v, now.Add(c.ttl)}
}

// Delete forgets k.
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}
