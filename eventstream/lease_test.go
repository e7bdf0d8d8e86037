package eventstream_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// unrenewable is a store whose claims fail while down is set, as when the
// connection to the database stalls: leases cannot be renewed.
type unrenewable struct {
	*memstore.Store
	down     atomic.Bool
	released chan struct{} // gets a value when a worker's lease is released
}

func (u *unrenewable) ReleaseSubscription(ctx context.Context, tenantID, id, owner string) error {
	select {
	case u.released <- struct{}{}:
	default:
	}
	return u.Store.ReleaseSubscription(ctx, tenantID, id, owner)
}

func (u *unrenewable) ClaimSubscriptions(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]eventstream.Subscription, error) {
	if u.down.Load() {
		return nil, fault.E(fault.Unavailable, "the database does not answer")
	}
	return u.Store.ClaimSubscriptions(ctx, owner, now, leaseFor, limit)
}

// TestWorkerStopsWhenItsLeaseLapsesUnrenewed: a process that cannot renew
// its leases stops delivering once they lapse by its clock, even in the
// middle of a batch, since another process may deliver the subscription
// by then.
func TestWorkerStopsWhenItsLeaseLapsesUnrenewed(t *testing.T) {
	f := newFixture(t, local)
	st := &unrenewable{Store: f.store, released: make(chan struct{}, 1)}
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	f.svc = eventstream.NewService(eventstream.Config{Store: st, Events: f.store, Sealer: sealer, Audit: f.sink, Clock: f.clock, Guard: local})
	rcv := newReceiver(t, f.clock, nil)
	// One delivery a second: a batch of 20 takes 20 s of the fake clock.
	f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(rcv.URL), EventTypes: []string{"10001"}, MaxPerSecond: ptr(1)})
	f.post(tenantA, "10001", 20)
	f.engine(eventstream.EngineConfig{Owner: "stalled", LeaseFor: 3 * time.Second, PollEvery: 5 * time.Second})
	f.drive(2, 10*time.Millisecond, func() bool { return rcv.count() >= 1 })
	st.down.Store(true)
	// Ten seconds pass, in steps taken while the engine loop (renewing
	// every second) and the worker (waiting for its next token) both wait
	// on timers, until the worker stops and its lease is released.
	stopped := false
	for range 100 {
		waiting := make(chan struct{})
		go func() { f.clock.WaitForTimers(2); close(waiting) }()
		select {
		case <-waiting:
		case <-st.released:
			stopped = true
		}
		if stopped {
			break
		}
		f.clock.Advance(100 * time.Millisecond)
	}
	if !stopped {
		t.Error("the worker went on after its lease lapsed")
	}
	if n := rcv.count(); n > 5 {
		t.Errorf("%d deliveries in the 10 s after the claims began to fail; the lease (3 s) should have stopped the worker after at most 4", n)
	}
}
