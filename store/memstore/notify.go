package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/notify"
)

type subKey struct{ tenant, id string }

// CreateNotifySubscription implements notify.Store. The subscription
// starts at the tenant's head: it notifies only of later events.
func (s *Store) CreateNotifySubscription(ctx context.Context, sub *notify.Subscription) error {
	defer s.lock()()
	var head int64
	if l := s.eventLogs[sub.TenantID]; l != nil {
		head = l.head
	}
	c := cloneNotifySub(*sub)
	c.Cursor = head
	if err := s.withClaims(ctx, func() error { return insert(s.subs, subKey{sub.TenantID, sub.ID}, c, "subscription already exists") }); err != nil {
		return err
	}
	sub.Cursor = head
	return nil
}

// GetNotifySubscription implements notify.Store.
func (s *Store) GetNotifySubscription(ctx context.Context, tenantID, id string) (notify.Subscription, error) {
	defer s.lock()()
	return get(s.subs, subKey{tenantID, id}, nil, cloneNotifySub, "subscription not found")
}

// DeleteNotifySubscription implements notify.Store.
func (s *Store) DeleteNotifySubscription(ctx context.Context, tenantID, id string) error {
	defer s.lock()()
	return remove(s.subs, subKey{tenantID, id}, nil, "subscription not found")
}

// ConsumeNotifications implements notify.Store under the store's one lock.
func (s *Store) ConsumeNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (notify.Subscription, []events.Event, error) {
	defer s.lock()()
	k := subKey{tenantID, id}
	sub, err := lookup(s.subs, k, nil, "subscription not found")
	if err != nil {
		return notify.Subscription{}, nil, err
	}
	if sub.ClientID != clientID {
		return notify.Subscription{}, nil, fault.E(fault.Forbidden, "the client is not the subscription's client")
	}
	var out []events.Event
	if l := s.eventLogs[tenantID]; l != nil {
		out = firstEvents(l.after(sub.Cursor), sub.PageSize, notifies(sub, notBefore))
		if len(out) == sub.PageSize {
			sub.Cursor = out[len(out)-1].Seq
		} else {
			sub.Cursor = l.head
		}
	}
	sub.Pages++
	sub.LastRequest = now
	s.subs[k] = sub
	if rec != nil {
		setRetrievalMeta(rec, sub, len(out))
		s.appendAuditLocked([]*audit.Record{rec})
	}
	return cloneNotifySub(sub), out, nil
}

// CountNotifications implements notify.Store.
func (s *Store) CountNotifications(ctx context.Context, sub notify.Subscription, notBefore time.Time, limit int) (int, error) {
	defer s.lock()()
	evs, wanted, n := s.eventLogs[sub.TenantID].after(sub.Cursor), notifies(sub, notBefore), 0
	for i := 0; i < len(evs) && n < limit; i++ {
		if wanted(evs[i].ev) {
			n++
		}
	}
	return n, nil
}

// notifies matches the events sub notifies of that were received at or
// after notBefore.
func notifies(sub notify.Subscription, notBefore time.Time) func(events.Event) bool {
	return func(e events.Event) bool {
		return !e.ReceivedAt.Before(notBefore) && slices.Contains(sub.EventTypeIDs, e.TypeID)
	}
}

// setRetrievalMeta completes the audit record of a retrieval.
func setRetrievalMeta(rec *audit.Record, sub notify.Subscription, results int) {
	if rec.Meta == nil {
		rec.Meta = map[string]any{}
	}
	rec.Meta["results"] = results
	rec.Meta["page"] = sub.Pages
}
