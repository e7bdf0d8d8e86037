// Package clocktest provides a fake clock for tests: time moves only when the
// test calls Advance, and WaitForTimers lets a test synchronise with a worker
// that is about to block on a timer, so no test needs to sleep.
package clocktest

import (
	"sort"
	"sync"
	"time"

	"github.com/latchkey/latchkey/clock"
)

// Fake is a manually advanced clock. The zero value is not usable; use New.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*waiter
	changed chan struct{} // closed and replaced whenever the waiter set changes
}

type waiter struct {
	at     time.Time
	period time.Duration // > 0 for tickers
	ch     chan time.Time
	active bool
}

// New returns a fake clock set to start (UTC).
func New(start time.Time) *Fake {
	return &Fake{now: start.UTC(), changed: make(chan struct{})}
}

var _ clock.Clock = (*Fake)(nil)

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Set moves the clock to t (which may be earlier), firing due timers.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	f.now = t.UTC()
	f.fireLocked()
	f.mu.Unlock()
}

// Advance moves the clock forward by d, firing every timer that falls due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.fireLocked()
	f.mu.Unlock()
}

// Timers returns the number of active timers and tickers.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, w := range f.waiters {
		if w.active {
			n++
		}
	}
	return n
}

// WaitForTimers blocks until at least n timers or tickers are active, so a
// test knows a worker has reached its wait before advancing the clock.
func (f *Fake) WaitForTimers(n int) {
	for {
		f.mu.Lock()
		count := 0
		for _, w := range f.waiters {
			if w.active {
				count++
			}
		}
		ch := f.changed
		f.mu.Unlock()
		if count >= n {
			return
		}
		<-ch
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Fake) fireLocked() {
	sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.active {
			continue
		}
		for w.active && !w.at.After(f.now) {
			select {
			case w.ch <- w.at:
			default: // like time.Ticker, drop ticks nobody reads
			}
			if w.period > 0 {
				w.at = w.at.Add(w.period)
			} else {
				w.active = false
			}
		}
		if w.active {
			kept = append(kept, w)
		}
	}
	f.waiters = kept
	f.notifyLocked()
}

func (f *Fake) add(w *waiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.active = true
	f.waiters = append(f.waiters, w)
	f.fireLocked()
}

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) clock.Timer {
	w := &waiter{at: f.Now().Add(d), ch: make(chan time.Time, 1)}
	f.add(w)
	return &fakeTimer{f: f, w: w}
}

// NewTicker returns a ticker that fires every d of fake time.
func (f *Fake) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("clocktest: non-positive ticker period")
	}
	w := &waiter{at: f.Now().Add(d), period: d, ch: make(chan time.Time, 1)}
	f.add(w)
	return &fakeTicker{f: f, w: w}
}

type fakeTimer struct {
	f *Fake
	w *waiter
}

func (t *fakeTimer) C() <-chan time.Time { return t.w.ch }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.w.active
	t.w.active = false
	t.f.notifyLocked()
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	was := t.w.active
	t.w.active = false
	t.f.mu.Unlock()
	t.w.at = t.f.Now().Add(d)
	t.f.add(t.w)
	return was
}

type fakeTicker struct {
	f *Fake
	w *waiter
}

func (t *fakeTicker) C() <-chan time.Time { return t.w.ch }

func (t *fakeTicker) Stop() {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.w.active = false
	t.f.notifyLocked()
}
