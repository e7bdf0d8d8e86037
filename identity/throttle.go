package identity

import (
	"sync"
	"time"
)

// Throttle limits failed logins per key (tenant and user name): after
// MaxFailures within Window, further attempts are refused until the window
// that began with the first failure has passed. It counts in memory, per
// process; behind a load balancer each process throttles on its own, which
// multiplies the allowance by the number of processes but never disables it.
type Throttle struct {
	MaxFailures int
	Window      time.Duration

	mu      sync.Mutex
	entries map[string]*throttleEntry
}

type throttleEntry struct {
	first    time.Time
	failures int
}

const maxThrottleEntries = 100_000

// NewThrottle returns a throttle allowing max failures per window.
func NewThrottle(max int, window time.Duration) *Throttle {
	return &Throttle{MaxFailures: max, Window: window, entries: make(map[string]*throttleEntry)}
}

// Blocked reports whether key is throttled at now and for how long.
func (t *Throttle) Blocked(key string, now time.Time) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[key]
	if !ok {
		return false, 0
	}
	end := e.first.Add(t.Window)
	if !now.Before(end) {
		delete(t.entries, key)
		return false, 0
	}
	if e.failures >= t.MaxFailures {
		return true, end.Sub(now)
	}
	return false, 0
}

// Fail counts a failure for key.
func (t *Throttle) Fail(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[key]
	if !ok || !now.Before(e.first.Add(t.Window)) {
		if len(t.entries) >= maxThrottleEntries {
			t.pruneLocked(now)
		}
		t.entries[key] = &throttleEntry{first: now, failures: 1}
		return
	}
	e.failures++
}

// Succeed clears key's failures.
func (t *Throttle) Succeed(key string) {
	t.mu.Lock()
	delete(t.entries, key)
	t.mu.Unlock()
}

func (t *Throttle) pruneLocked(now time.Time) {
	for k, e := range t.entries {
		if !now.Before(e.first.Add(t.Window)) {
			delete(t.entries, k)
		}
	}
	if len(t.entries) >= maxThrottleEntries { // still full of live entries: forget the oldest half
		n := 0
		for k := range t.entries {
			delete(t.entries, k)
			if n++; n >= maxThrottleEntries/2 {
				break
			}
		}
	}
}
