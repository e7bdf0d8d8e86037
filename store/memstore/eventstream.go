package memstore

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
)

// esData holds area E: subscriptions by tenant/id and their dead letters.
type esData struct {
	subs    map[string]eventstream.Subscription
	letters map[string]map[string]eventstream.DeadLetter // by tenant/sub, then letter id
}

// CreateSubscription implements eventstream.Store.
func (s *Store) CreateSubscription(ctx context.Context, sub eventstream.Subscription) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		return insert(s.es.subs, tenantKey(sub.TenantID, sub.ID), cloneSub(sub), "subscription already exists")
	})
}

// GetSubscription implements eventstream.Store.
func (s *Store) GetSubscription(ctx context.Context, tenantID, id string) (eventstream.Subscription, error) {
	defer s.lock()()
	return get(s.es.subs, tenantKey(tenantID, id), nil, cloneSub, "subscription not found")
}

// ListSubscriptions implements eventstream.Store.
func (s *Store) ListSubscriptions(ctx context.Context, tenantID, kind, afterID string, limit int) ([]eventstream.Subscription, error) {
	defer s.lock()()
	listed := func(sub eventstream.Subscription) bool {
		return sub.TenantID == tenantID && sub.Kind == kind && sub.ID > afterID
	}
	out := appendMatching(nil, s.es.subs, listed, cloneSub)
	slices.SortFunc(out, func(a, b eventstream.Subscription) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}

// UpdateSubscription implements eventstream.Store.
func (s *Store) UpdateSubscription(ctx context.Context, sub eventstream.Subscription, resume bool) error {
	defer s.lock()()
	return update(s.es.subs, tenantKey(sub.TenantID, sub.ID), nil, "subscription not found", func(old *eventstream.Subscription) error {
		n := cloneSub(sub)
		old.EventTypes, old.MaxPerSecond, old.NumberOfRetries, old.Auth = n.EventTypes, n.MaxPerSecond, n.NumberOfRetries, n.Auth
		old.GroupConfig, old.Connect, old.UpdatedAt = n.GroupConfig, n.Connect, n.UpdatedAt
		if resume {
			old.Status.Paused, old.Status.PausedAt, old.Status.FailingSince = false, time.Time{}, time.Time{}
		}
		return nil
	})
}

// DeleteSubscription implements eventstream.Store.
func (s *Store) DeleteSubscription(ctx context.Context, tenantID, kind, id string) error {
	defer s.lock()()
	k := tenantKey(tenantID, id)
	ofKind := func(sub eventstream.Subscription) bool { return sub.Kind == kind }
	if err := remove(s.es.subs, k, ofKind, "subscription not found"); err != nil {
		return err
	}
	delete(s.es.letters, k)
	return nil
}

// ClaimSubscriptions implements eventstream.Store.
func (s *Store) ClaimSubscriptions(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]eventstream.Subscription, error) {
	defer s.lock()()
	var out []eventstream.Subscription
	for _, k := range slices.Sorted(maps.Keys(s.es.subs)) {
		sub := s.es.subs[k]
		mine := sub.LeaseOwner == owner && sub.LeaseUntil.After(now)
		if !mine {
			if sub.LeaseUntil.After(now) || limit <= 0 {
				continue
			}
			limit--
		}
		sub.LeaseOwner, sub.LeaseUntil = owner, now.Add(leaseFor)
		s.es.subs[k] = sub
		out = append(out, cloneSub(sub))
	}
	return out, nil
}

// ReleaseSubscription implements eventstream.Store.
func (s *Store) ReleaseSubscription(ctx context.Context, tenantID, id, owner string) error {
	defer s.lock()()
	k := tenantKey(tenantID, id)
	if sub, ok := s.es.subs[k]; ok && sub.LeaseOwner == owner {
		sub.LeaseUntil = time.Time{}
		s.es.subs[k] = sub
	}
	return nil
}

// RecordDelivery implements eventstream.Store.
func (s *Store) RecordDelivery(ctx context.Context, u eventstream.DeliveryUpdate) error {
	defer s.lock()()
	k := tenantKey(u.TenantID, u.SubscriptionID)
	err := update(s.es.subs, k, nil, "subscription not found", func(sub *eventstream.Subscription) error {
		if sub.LeaseOwner != u.Owner || !sub.LeaseUntil.After(u.Now) {
			return fault.E(fault.Conflict, "the delivery lease is not held")
		}
		// The bound moves with the cursor, never back (the memstore's log
		// has kept ReceivedAt in order from the start).
		if u.Cursor >= sub.Cursor && u.CursorAt.After(sub.CursorAt) {
			sub.CursorAt = u.CursorAt
		}
		sub.Cursor = max(sub.Cursor, u.Cursor)
		sub.Status = u.Status
		return nil
	})
	if err != nil {
		return err
	}
	m := s.es.letters[k]
	if m == nil {
		m = map[string]eventstream.DeadLetter{}
		s.es.letters[k] = m
	}
	for _, d := range u.NewDeadLetters {
		m[d.ID] = cloneLetter(d)
	}
	for _, id := range u.Redelivered {
		delete(m, id)
	}
	for _, d := range u.Redead {
		if old, ok := m[d.ID]; ok {
			old.Attempts, old.LastError, old.Requeued = d.Attempts, d.LastError, false
			m[d.ID] = old
		}
	}
	s.appendAuditLocked(u.Audit)
	return nil
}

// ListDeadLetters implements eventstream.Store.
func (s *Store) ListDeadLetters(ctx context.Context, tenantID, subscriptionID, afterID string, requeuedOnly bool, limit int) ([]eventstream.DeadLetter, error) {
	defer s.lock()()
	listed := func(d eventstream.DeadLetter) bool { return d.ID > afterID && (!requeuedOnly || d.Requeued) }
	out := appendMatching(nil, s.es.letters[tenantKey(tenantID, subscriptionID)], listed, cloneLetter)
	slices.SortFunc(out, func(a, b eventstream.DeadLetter) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}

// RequeueDeadLetters implements eventstream.Store.
func (s *Store) RequeueDeadLetters(ctx context.Context, tenantID, subscriptionID string, ids []string) (int, error) {
	defer s.lock()()
	n := 0
	m := s.es.letters[tenantKey(tenantID, subscriptionID)]
	for id, d := range m {
		if len(ids) == 0 || slices.Contains(ids, id) {
			d.Requeued = true
			m[id] = d
			n++
		}
	}
	return n, nil
}
