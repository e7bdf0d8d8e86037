package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/internal/ids"
)

// eventLog is one tenant's log in seq order, the last seq ever assigned
// (which survives retention) and the ReceivedAt of the last event appended,
// to which an earlier one is raised (events.Store.AppendEvents).
type eventLog struct {
	evs  []storedEvent
	head int64
	at   time.Time
}

// storedEvent keeps the decoded body next to the event, so that queries
// run filter.Match without decoding every event each time.
type storedEvent struct {
	ev  events.Event
	doc map[string]any
}

func (s *Store) eventLogLocked(tenantID string) *eventLog {
	l := s.eventLogs[tenantID]
	if l == nil {
		l = &eventLog{}
		s.eventLogs[tenantID] = l
	}
	return l
}

// after returns the events with a seq above seq; l is nil for a tenant
// with no events.
func (l *eventLog) after(seq int64) []storedEvent {
	if l == nil {
		return nil
	}
	return l.evs[sort.Search(len(l.evs), func(i int) bool { return l.evs[i].ev.Seq > seq }):]
}

// firstEvents returns copies of the first limit of evs that keep accepts.
func firstEvents(evs []storedEvent, limit int, keep func(events.Event) bool) []events.Event {
	var out []events.Event
	for i := 0; i < len(evs) && len(out) < limit; i++ {
		if keep(evs[i].ev) {
			out = append(out, cloneEvent(evs[i].ev))
		}
	}
	return out
}

// AppendEvents implements events.Store.
func (s *Store) AppendEvents(ctx context.Context, evs []*events.Event) error {
	return s.AppendEventsAudited(ctx, evs, nil)
}

// AppendEventsAudited implements events.AuditedAppender: the events and
// the records are appended under one lock hold, so a reader sees both or
// neither.
func (s *Store) AppendEventsAudited(ctx context.Context, evs []*events.Event, recs []*audit.Record) error {
	docs := make([]map[string]any, len(evs))
	for i, e := range evs {
		dec := json.NewDecoder(bytes.NewReader(e.Body))
		dec.UseNumber()
		if err := dec.Decode(&docs[i]); err != nil || docs[i] == nil {
			return fault.E(fault.Internal, "event body is not a JSON object", err)
		}
	}
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		for i, e := range evs {
			l := s.eventLogLocked(e.TenantID)
			l.head++
			e.Seq, e.ID = l.head, ids.NewGUID()
			if e.ReceivedAt.Before(l.at) {
				e.ReceivedAt = l.at
			}
			l.at = e.ReceivedAt
			l.evs = append(l.evs, storedEvent{ev: cloneEvent(*e), doc: docs[i]})
		}
		s.appendAuditLocked(recs)
		return nil
	})
}

// QueryEvents implements events.Store.
func (s *Store) QueryEvents(ctx context.Context, tenantID string, q events.Query) ([]events.Event, int, error) {
	defer s.lock()()
	l := s.eventLogs[tenantID]
	if l == nil {
		return nil, 0, nil
	}
	var out []events.Event
	matched := 0
	for i := len(l.evs) - 1; i >= 0; i-- {
		se := l.evs[i]
		if q.UserID != "" && !slices.Contains(se.ev.UserIDs, q.UserID) {
			continue
		}
		if q.Filter != nil && !filter.Match(q.Filter, se.doc) {
			continue
		}
		matched++
		if matched > q.Offset && len(out) < q.Limit {
			out = append(out, cloneEvent(se.ev))
		}
		if len(out) == q.Limit && matched >= q.CountLimit {
			break
		}
	}
	return out, min(matched, q.CountLimit), nil
}

// ListEventsAfter implements events.Store.
func (s *Store) ListEventsAfter(ctx context.Context, tenantID string, afterSeq int64, typeIDs []string, notBefore time.Time, limit int) ([]events.Event, error) {
	defer s.lock()()
	wanted := func(e events.Event) bool {
		return !e.ReceivedAt.Before(notBefore) && (len(typeIDs) == 0 || slices.Contains(typeIDs, e.TypeID))
	}
	return firstEvents(s.eventLogs[tenantID].after(afterSeq), limit, wanted), nil
}

// DeleteEventsBefore implements events.Store.
func (s *Store) DeleteEventsBefore(ctx context.Context, tenantID string, cutoff time.Time, limit int) (int, error) {
	defer s.lock()()
	n := 0
	for id, l := range s.eventLogs {
		if tenantID != "" && id != tenantID {
			continue
		}
		l.evs = slices.DeleteFunc(l.evs, func(se storedEvent) bool {
			if n < limit && se.ev.ReceivedAt.Before(cutoff) {
				n++
				return true
			}
			return false
		})
	}
	return n, nil
}
