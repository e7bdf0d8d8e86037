package events

import (
	"context"
	"sync"
)

// waiters hands out channels that are closed when a tenant's log may have
// grown, so that readers of the log through a cursor (long-polling
// notification clients, the event-stream delivery engine) sleep until
// there is something to read instead of polling. A wake-up is a hint:
// woken readers look at the log again and may find nothing new.
//
// Only tenants someone waits for have a channel, so appends to other
// tenants cost a map lookup.
type waiters struct {
	mu       sync.Mutex
	byTenant map[string]chan struct{}
	any      chan struct{} // closed at the next append to any tenant
}

func (w *waiters) wait(tenantID string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if tenantID == "" {
		if w.any == nil {
			w.any = make(chan struct{})
		}
		return w.any
	}
	if w.byTenant == nil {
		w.byTenant = map[string]chan struct{}{}
	}
	c, ok := w.byTenant[tenantID]
	if !ok {
		c = make(chan struct{})
		w.byTenant[tenantID] = c
	}
	return c
}

// fire wakes the waiters of the tenants of evs, and those of any tenant.
func (w *waiters) fire(evs []*Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.any != nil {
		close(w.any)
		w.any = nil
	}
	if len(w.byTenant) == 0 {
		return
	}
	for _, ev := range evs {
		if c, ok := w.byTenant[ev.TenantID]; ok {
			close(c)
			delete(w.byTenant, ev.TenantID)
		}
	}
}

// fireAll wakes every waiter.
func (w *waiters) fireAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.any != nil {
		close(w.any)
		w.any = nil
	}
	for id, c := range w.byTenant {
		close(c)
		delete(w.byTenant, id)
	}
}

// Appended returns a channel that is closed once events are next appended
// to tenantID's log, or to any tenant's log when tenantID is "". Appends
// made through this Service close it as soon as they are committed;
// appends made by other processes sharing the store close it when Poke is
// called (the Platform calls Poke on the store's cross-process signal).
// Take the channel before reading the log, then wait on it: an append
// between the read and the wait is not missed.
func (s *Service) Appended(tenantID string) <-chan struct{} { return s.wake.wait(tenantID) }

// Poke wakes every Appended channel: another process appended events, or
// may have.
func (s *Service) Poke() { s.wake.fireAll() }

// committed is called by the ingester after each committed batch: it
// wakes local waiters and asks for one cross-process signal.
func (s *Service) committed(evs []*Event) {
	s.wake.fire(evs)
	if s.cfg.Notify != nil {
		select {
		case s.notifyReq <- struct{}{}:
		default: // one is pending already; it covers this batch too
		}
	}
}

// notifyLoop sends the cross-process signals that committed asks for, one
// at a time: while one is in flight, further batches share the next.
func (s *Service) notifyLoop() {
	defer close(s.notifyDone)
	for range s.notifyReq {
		if err := s.cfg.Notify(context.Background()); err != nil {
			s.log.Warn("events: cross-process wake-up failed; other processes find the events when they next poll", "err", err)
		}
	}
}
