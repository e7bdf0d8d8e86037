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
	delete(s.notePages, subKey{tenantID, id})
	return remove(s.subs, subKey{tenantID, id}, nil, "subscription not found")
}

// leasedPage is a page handed out by an acknowledged retrieval and not
// confirmed yet.
type leasedPage struct {
	seqs  []int64
	until time.Time
}

// ConsumeNotifications implements notify.Store under the store's one lock.
func (s *Store) ConsumeNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (notify.Subscription, int64, []events.Event, error) {
	defer s.lock()()
	return s.retrieveLocked(tenantID, id, clientID, notBefore, now, rec, false)
}

// LeaseNotifications implements notify.Store under the store's one lock.
func (s *Store) LeaseNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (notify.Subscription, int64, []events.Event, error) {
	defer s.lock()()
	return s.retrieveLocked(tenantID, id, clientID, notBefore, now, rec, true)
}

func (s *Store) retrieveLocked(tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record, ack bool) (notify.Subscription, int64, []events.Event, error) {
	k := subKey{tenantID, id}
	sub, err := lookup(s.subs, k, nil, "subscription not found")
	if err != nil {
		return notify.Subscription{}, 0, nil, err
	}
	if sub.ClientID != clientID {
		return notify.Subscription{}, 0, nil, fault.E(fault.Forbidden, "the client is not the subscription's client")
	}
	var (
		out    []events.Event
		page   int64
		evLog  = s.eventLogs[tenantID]
		pages  = s.notePages[k]
		lapsed = oldestLapsed(pages, now) // retrievals of both kinds take it first
	)
	if lapsed > 0 {
		out = lapsedEvents(evLog, pages[lapsed], notBefore)
		if len(out) == 0 { // every event left retention
			delete(pages, lapsed)
			lapsed = 0
		}
	}
	if lapsed > 0 {
		page = lapsed
		if ack {
			lp := pages[lapsed]
			lp.until = sub.LeaseUntil(now)
			pages[lapsed] = lp
		} else {
			// A plain retrieval consumes: nobody confirms the page, so
			// its lease ends and no retrieval hands it out again.
			delete(pages, lapsed)
		}
	} else {
		if evLog != nil {
			out = firstEvents(evLog.after(sub.Cursor), sub.PageSize, notifies(sub, notBefore))
			if len(out) == sub.PageSize {
				sub.Cursor = out[len(out)-1].Seq
			} else {
				sub.Cursor = evLog.head
			}
		}
		sub.Pages++
		page = sub.Pages
		if ack && len(out) > 0 {
			if pages == nil {
				pages = map[int64]leasedPage{}
				s.notePages[k] = pages
			}
			lp := leasedPage{until: sub.LeaseUntil(now)}
			for _, e := range out {
				lp.seqs = append(lp.seqs, e.Seq)
			}
			pages[page] = lp
		}
	}
	sub.LastRequest = now
	s.subs[k] = sub
	if rec != nil {
		setRetrievalMeta(rec, page, len(out), ack, lapsed > 0)
		s.appendAuditLocked([]*audit.Record{rec})
	}
	return cloneNotifySub(sub), page, out, nil
}

// oldestLapsed is the lowest page of pages whose lease lapsed at now, 0
// when none did.
func oldestLapsed(pages map[int64]leasedPage, now time.Time) int64 {
	var lapsed int64
	for p, lp := range pages {
		if !lp.until.After(now) && (lapsed == 0 || p < lapsed) {
			lapsed = p
		}
	}
	return lapsed
}

// lapsedEvents returns the events of lp still in the log and received at
// or after notBefore, oldest first (lp.seqs are in order).
func lapsedEvents(evLog *eventLog, lp leasedPage, notBefore time.Time) []events.Event {
	var out []events.Event
	for _, seq := range lp.seqs {
		if evs := evLog.after(seq - 1); len(evs) > 0 && evs[0].ev.Seq == seq && !evs[0].ev.ReceivedAt.Before(notBefore) {
			out = append(out, cloneEvent(evs[0].ev))
		}
	}
	return out
}

// AckNotifications implements notify.Store.
func (s *Store) AckNotifications(ctx context.Context, tenantID, id, clientID string, page int64, now time.Time) error {
	defer s.lock()()
	k := subKey{tenantID, id}
	sub, err := lookup(s.subs, k, nil, "subscription not found")
	if err != nil {
		return err
	}
	lp, leased := s.notePages[k][page]
	switch {
	case sub.ClientID != clientID:
		return fault.E(fault.Forbidden, "the client is not the subscription's client")
	case page < 1 || page > sub.Pages:
		return fault.E(fault.NotFound, fault.Field("page"), "the subscription has not handed out that page")
	case !leased:
		return nil
	case !lp.until.After(now):
		return fault.E(fault.Conflict, "the page's lease lapsed before its confirmation")
	}
	delete(s.notePages[k], page)
	return nil
}

// NextNotifyLapse implements notify.Store.
func (s *Store) NextNotifyLapse(ctx context.Context, tenantID, id string) (time.Time, error) {
	defer s.lock()()
	var first time.Time
	for _, lp := range s.notePages[subKey{tenantID, id}] {
		if first.IsZero() || lp.until.Before(first) {
			first = lp.until
		}
	}
	return first, nil
}

// CountNotifications implements notify.Store as sqlstore's does: the
// lapsed pages' events (the cursor passed them when each was leased), then
// those after the cursor.
func (s *Store) CountNotifications(ctx context.Context, sub notify.Subscription, notBefore, now time.Time, limit int) (int, error) {
	defer s.lock()()
	evLog, n := s.eventLogs[sub.TenantID], 0
	for _, lp := range s.notePages[subKey{sub.TenantID, sub.ID}] {
		if !lp.until.After(now) {
			n += len(lapsedEvents(evLog, lp, notBefore))
		}
	}
	evs, wanted := evLog.after(sub.Cursor), notifies(sub, notBefore)
	for i := 0; i < len(evs) && n < limit; i++ {
		if wanted(evs[i].ev) {
			n++
		}
	}
	return min(n, limit), nil
}

// notifies matches the events sub notifies of that were received at or
// after notBefore.
func notifies(sub notify.Subscription, notBefore time.Time) func(events.Event) bool {
	return func(e events.Event) bool {
		return !e.ReceivedAt.Before(notBefore) && slices.Contains(sub.EventTypeIDs, e.TypeID)
	}
}

// setRetrievalMeta completes the audit record of a retrieval as
// sqlstore's does.
func setRetrievalMeta(rec *audit.Record, page int64, results int, ack, redelivered bool) {
	if rec.Meta == nil {
		rec.Meta = map[string]any{}
	}
	rec.Meta["results"] = results
	rec.Meta["page"] = page
	if ack {
		rec.Meta["ack"] = true
	}
	if redelivered {
		rec.Meta["redelivered"] = true
	}
}
