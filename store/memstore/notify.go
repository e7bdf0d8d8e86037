package memstore

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/notify"
)

var _ notify.Store = (*Store)(nil)

type subKey struct{ tenant, id string }

func cloneNotifySub(s notify.Subscription) notify.Subscription {
	s.EventTypeIDs = slices.Clone(s.EventTypeIDs)
	return s
}

// CreateNotifySubscription implements notify.Store.
func (s *Store) CreateNotifySubscription(ctx context.Context, sub *notify.Subscription) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = map[subKey]notify.Subscription{}
	}
	k := subKey{sub.TenantID, sub.ID}
	if _, ok := s.subs[k]; ok {
		return fault.E(fault.Conflict, "subscription already exists")
	}
	sub.Cursor = 0
	if l := s.eventLogs[sub.TenantID]; l != nil {
		sub.Cursor = l.head
	}
	s.subs[k] = cloneNotifySub(*sub)
	return nil
}

// GetNotifySubscription implements notify.Store.
func (s *Store) GetNotifySubscription(ctx context.Context, tenantID, id string) (notify.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[subKey{tenantID, id}]
	if !ok {
		return notify.Subscription{}, fault.E(fault.NotFound, "subscription not found")
	}
	return cloneNotifySub(sub), nil
}

// DeleteNotifySubscription implements notify.Store.
func (s *Store) DeleteNotifySubscription(ctx context.Context, tenantID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := subKey{tenantID, id}
	if _, ok := s.subs[k]; !ok {
		return fault.E(fault.NotFound, "subscription not found")
	}
	delete(s.subs, k)
	return nil
}

// ConsumeNotifications implements notify.Store under the store's one lock.
func (s *Store) ConsumeNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (notify.Subscription, []events.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := subKey{tenantID, id}
	sub, ok := s.subs[k]
	if !ok {
		return notify.Subscription{}, nil, fault.E(fault.NotFound, "subscription not found")
	}
	if sub.ClientID != clientID {
		return notify.Subscription{}, nil, fault.E(fault.Forbidden, "the client is not the subscription's client")
	}
	var out []events.Event
	if l := s.eventLogs[tenantID]; l != nil {
		i := sort.Search(len(l.evs), func(i int) bool { return l.evs[i].ev.Seq > sub.Cursor })
		for ; i < len(l.evs) && len(out) < sub.PageSize; i++ {
			e := l.evs[i].ev
			if e.ReceivedAt.Before(notBefore) || !slices.Contains(sub.EventTypeIDs, e.TypeID) {
				continue
			}
			out = append(out, cloneEvent(e))
		}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.eventLogs[sub.TenantID]
	if l == nil {
		return 0, nil
	}
	n := 0
	i := sort.Search(len(l.evs), func(i int) bool { return l.evs[i].ev.Seq > sub.Cursor })
	for ; i < len(l.evs) && n < limit; i++ {
		e := l.evs[i].ev
		if !e.ReceivedAt.Before(notBefore) && slices.Contains(sub.EventTypeIDs, e.TypeID) {
			n++
		}
	}
	return n, nil
}

// setRetrievalMeta completes the audit record of a retrieval.
func setRetrievalMeta(rec *audit.Record, sub notify.Subscription, results int) {
	if rec.Meta == nil {
		rec.Meta = map[string]any{}
	}
	rec.Meta["results"] = results
	rec.Meta["page"] = sub.Pages
}
