package identity

import (
	"context"
	"crypto/sha256"
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

// ThrottleStore keeps the login throttle's counters in the store, so that
// every process sharing it counts the same failures: behind a load
// balancer, three processes with counters of their own would give an
// attacker three times the tries (API-mfa.md, R14). Keys are opaque
// (Service passes the SHA-256 of tenant and lower-cased name, so no name
// is stored).
type ThrottleStore interface {
	// CountLoginFailure adds one failure to key's counter at now and
	// returns the counter afterwards, atomically across processes: a
	// counter whose window began at or before now minus window restarts
	// at one, its window beginning at now. Counters whose window ended
	// may be deleted by the same call.
	CountLoginFailure(ctx context.Context, key []byte, now time.Time, window time.Duration) (ThrottleCounter, error)
	// GetLoginFailures returns key's counter, or the zero counter when
	// there is none.
	GetLoginFailures(ctx context.Context, key []byte) (ThrottleCounter, error)
	// ClearLoginFailures deletes key's counter; none is no error.
	ClearLoginFailures(ctx context.Context, key []byte) error
}

// ThrottleCounter is a stored throttle counter: the failures counted
// since Start.
type ThrottleCounter struct {
	Start    time.Time
	Failures int
}

// loginThrottle is the login throttle as Service uses it: counted in
// this process (Throttle) or in the store (ThrottleStore).
type loginThrottle interface {
	blocked(ctx context.Context, key string, now time.Time) (time.Duration, error)
	fail(ctx context.Context, key string, now time.Time) error
	succeed(ctx context.Context, key string) error
}

type memoryThrottle struct{ t *Throttle }

func (m memoryThrottle) blocked(_ context.Context, key string, now time.Time) (time.Duration, error) {
	if blocked, wait := m.t.Blocked(key, now); blocked {
		return wait, nil
	}
	return 0, nil
}

func (m memoryThrottle) fail(_ context.Context, key string, now time.Time) error {
	m.t.Fail(key, now)
	return nil
}

func (m memoryThrottle) succeed(_ context.Context, key string) error {
	m.t.Succeed(key)
	return nil
}

// storedThrottle counts in a ThrottleStore with the limits of a Throttle.
// Its keys are hashed with its purpose ("login" for the login throttle),
// so that throttles of different purposes never share a counter.
type storedThrottle struct {
	st      ThrottleStore
	max     int
	window  time.Duration
	purpose string
}

func (s storedThrottle) storedKey(key string) []byte {
	purpose := s.purpose
	if purpose == "" {
		purpose = "login"
	}
	sum := sha256.Sum256([]byte(purpose + "\x00" + key))
	return sum[:]
}

func (s storedThrottle) blocked(ctx context.Context, key string, now time.Time) (time.Duration, error) {
	c, err := s.st.GetLoginFailures(ctx, s.storedKey(key))
	if err != nil {
		return 0, err
	}
	end := c.Start.Add(s.window)
	if c.Failures < s.max || !now.Before(end) {
		return 0, nil
	}
	return end.Sub(now), nil
}

func (s storedThrottle) fail(ctx context.Context, key string, now time.Time) error {
	_, err := s.st.CountLoginFailure(ctx, s.storedKey(key), now, s.window)
	return err
}

func (s storedThrottle) succeed(ctx context.Context, key string) error {
	return s.st.ClearLoginFailures(ctx, s.storedKey(key))
}

// Limiter counts failures per key for a throttle other than the login's
// (the device grant's user-code page): after max failures within window
// of the first, the key is blocked until the window ends. With a
// ThrottleStore it counts in the store, so that every process sharing the
// store counts the same failures, as the login throttle does; without
// one, in this process.
type Limiter struct{ t loginThrottle }

// NewLimiter returns a Limiter of max failures per window, counting in st
// when st is not nil. purpose keeps its stored counters apart from other
// throttles' (it must not be "login").
func NewLimiter(st ThrottleStore, purpose string, max int, window time.Duration) *Limiter {
	if st == nil {
		return &Limiter{memoryThrottle{NewThrottle(max, window)}}
	}
	return &Limiter{storedThrottle{st: st, max: max, window: window, purpose: purpose}}
}

// Blocked reports how much longer key is blocked at now; 0: it is not.
func (l *Limiter) Blocked(ctx context.Context, key string, now time.Time) (time.Duration, error) {
	return l.t.blocked(ctx, key, now)
}

// Fail counts a failure of key at now.
func (l *Limiter) Fail(ctx context.Context, key string, now time.Time) error {
	return l.t.fail(ctx, key, now)
}

// Succeed clears key's failures.
func (l *Limiter) Succeed(ctx context.Context, key string) error {
	return l.t.succeed(ctx, key)
}
