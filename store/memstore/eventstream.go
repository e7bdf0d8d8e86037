package memstore

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
)

var _ eventstream.Store = (*Store)(nil)

// esData holds area E: subscriptions by tenant/id and their dead letters.
type esData struct {
	subs    map[string]eventstream.Subscription
	letters map[string]map[string]eventstream.DeadLetter // by tenant/sub, then letter id
}

func esKey(tenantID, id string) string { return tenantID + "/" + id }

func (s *Store) esLocked() *esData {
	if s.estream == nil {
		s.estream = &esData{subs: map[string]eventstream.Subscription{}, letters: map[string]map[string]eventstream.DeadLetter{}}
	}
	return s.estream
}

func cloneSub(sub eventstream.Subscription) eventstream.Subscription {
	sub.EventTypes = slices.Clone(sub.EventTypes)
	sub.GroupConfig = slices.Clone(sub.GroupConfig)
	sub.Auth.Sealed = bytes.Clone(sub.Auth.Sealed)
	if sub.Connect != nil {
		c := *sub.Connect
		sub.Connect = &c
	}
	return sub
}

func cloneLetter(d eventstream.DeadLetter) eventstream.DeadLetter {
	d.Body = bytes.Clone(d.Body)
	return d
}

// CreateSubscription implements eventstream.Store.
func (s *Store) CreateSubscription(ctx context.Context, sub eventstream.Subscription) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.esLocked()
	k := esKey(sub.TenantID, sub.ID)
	if _, ok := es.subs[k]; ok {
		return fault.E(fault.Conflict, "subscription already exists")
	}
	es.subs[k] = cloneSub(sub)
	return nil
}

// GetSubscription implements eventstream.Store.
func (s *Store) GetSubscription(ctx context.Context, tenantID, id string) (eventstream.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.esLocked().subs[esKey(tenantID, id)]
	if !ok {
		return eventstream.Subscription{}, fault.E(fault.NotFound, "subscription not found")
	}
	return cloneSub(sub), nil
}

// ListSubscriptions implements eventstream.Store.
func (s *Store) ListSubscriptions(ctx context.Context, tenantID, kind, afterID string, limit int) ([]eventstream.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []eventstream.Subscription
	for _, sub := range s.esLocked().subs {
		if sub.TenantID == tenantID && sub.Kind == kind && sub.ID > afterID {
			out = append(out, cloneSub(sub))
		}
	}
	slices.SortFunc(out, func(a, b eventstream.Subscription) int { return strings.Compare(a.ID, b.ID) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// UpdateSubscription implements eventstream.Store.
func (s *Store) UpdateSubscription(ctx context.Context, sub eventstream.Subscription, resume bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.esLocked()
	k := esKey(sub.TenantID, sub.ID)
	old, ok := es.subs[k]
	if !ok {
		return fault.E(fault.NotFound, "subscription not found")
	}
	n := cloneSub(sub)
	old.EventTypes, old.MaxPerSecond, old.NumberOfRetries, old.Auth = n.EventTypes, n.MaxPerSecond, n.NumberOfRetries, n.Auth
	old.GroupConfig, old.Connect, old.UpdatedAt = n.GroupConfig, n.Connect, n.UpdatedAt
	if resume {
		old.Status.Paused, old.Status.PausedAt, old.Status.FailingSince = false, time.Time{}, time.Time{}
	}
	es.subs[k] = old
	return nil
}

// DeleteSubscription implements eventstream.Store.
func (s *Store) DeleteSubscription(ctx context.Context, tenantID, kind, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.esLocked()
	k := esKey(tenantID, id)
	if sub, ok := es.subs[k]; !ok || sub.Kind != kind {
		return fault.E(fault.NotFound, "subscription not found")
	}
	delete(es.subs, k)
	delete(es.letters, k)
	return nil
}

// ClaimSubscriptions implements eventstream.Store.
func (s *Store) ClaimSubscriptions(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]eventstream.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.esLocked()
	keys := make([]string, 0, len(es.subs))
	for k := range es.subs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []eventstream.Subscription
	for _, k := range keys {
		sub := es.subs[k]
		mine := sub.LeaseOwner == owner && sub.LeaseUntil.After(now)
		if !mine {
			if sub.LeaseUntil.After(now) || limit <= 0 {
				continue
			}
			limit--
		}
		sub.LeaseOwner, sub.LeaseUntil = owner, now.Add(leaseFor)
		es.subs[k] = sub
		out = append(out, cloneSub(sub))
	}
	return out, nil
}

// ReleaseSubscription implements eventstream.Store.
func (s *Store) ReleaseSubscription(ctx context.Context, tenantID, id, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.esLocked()
	k := esKey(tenantID, id)
	if sub, ok := es.subs[k]; ok && sub.LeaseOwner == owner {
		sub.LeaseUntil = time.Time{}
		es.subs[k] = sub
	}
	return nil
}

// RecordDelivery implements eventstream.Store.
func (s *Store) RecordDelivery(ctx context.Context, u eventstream.DeliveryUpdate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.esLocked()
	k := esKey(u.TenantID, u.SubscriptionID)
	sub, ok := es.subs[k]
	if !ok {
		return fault.E(fault.NotFound, "subscription not found")
	}
	if sub.LeaseOwner != u.Owner || !sub.LeaseUntil.After(u.Now) {
		return fault.E(fault.Conflict, "the delivery lease is not held")
	}
	sub.Cursor = max(sub.Cursor, u.Cursor)
	sub.Status = u.Status
	es.subs[k] = sub
	m := es.letters[k]
	if m == nil {
		m = map[string]eventstream.DeadLetter{}
		es.letters[k] = m
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
	return nil
}

// ListDeadLetters implements eventstream.Store.
func (s *Store) ListDeadLetters(ctx context.Context, tenantID, subscriptionID, afterID string, requeuedOnly bool, limit int) ([]eventstream.DeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []eventstream.DeadLetter
	for _, d := range s.esLocked().letters[esKey(tenantID, subscriptionID)] {
		if d.ID > afterID && (!requeuedOnly || d.Requeued) {
			out = append(out, cloneLetter(d))
		}
	}
	slices.SortFunc(out, func(a, b eventstream.DeadLetter) int { return strings.Compare(a.ID, b.ID) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// RequeueDeadLetters implements eventstream.Store.
func (s *Store) RequeueDeadLetters(ctx context.Context, tenantID, subscriptionID string, ids []string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	m := s.esLocked().letters[esKey(tenantID, subscriptionID)]
	for id, d := range m {
		if len(ids) == 0 || slices.Contains(ids, id) {
			d.Requeued = true
			m[id] = d
			n++
		}
	}
	return n, nil
}
