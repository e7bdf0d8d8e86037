package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/notify"
)

var _ notify.Store = (*Store)(nil)

const (
	subCols    = `tenant_id, id, client_id, event_type_ids, subscribed_by, created_at, page_size, cursor, pages, last_request, ack_deadline_seconds`
	subSelect  = `SELECT ` + subCols + ` FROM notify_subscriptions WHERE tenant_id = $1 AND id = $2`
	subAdvance = `UPDATE notify_subscriptions SET cursor = $3, pages = pages + 1, last_request = $4 WHERE tenant_id = $1 AND id = $2`
	// maxSeqBatches bounds the batches of seqs one retrieval reads when
	// the page comes out short because candidates were older than the
	// retention: past it the page is returned short and the next
	// retrieval goes on from there.
	maxSeqBatches = 8
)

func scanNotifySub(row Row) (notify.Subscription, error) {
	var (
		sub  notify.Subscription
		last *time.Time
		ack  int64
	)
	if err := row.Scan(&sub.TenantID, &sub.ID, &sub.ClientID, &sub.EventTypeIDs, &sub.SubscribedBy, &sub.Created, &sub.PageSize, &sub.Cursor, &sub.Pages, &last, &ack); err != nil {
		return sub, err
	}
	sub.LastRequest = orZero(last)
	sub.AckDeadline = time.Duration(ack) * time.Second
	return sub, nil
}

// CreateNotifySubscription implements notify.Store. The cursor is the head
// committed when the insert runs; an append committing later has larger
// sequence numbers (appends number events under the head row's lock and
// commit before releasing it), so the subscription sees it.
func (s *Store) CreateNotifySubscription(ctx context.Context, sub *notify.Subscription) error {
	return s.c.Tx(ctx, func(q Querier) error {
		var head int64
		if err := q.QueryRow(ctx, eventHeadOf, sub.TenantID).Scan(&head); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err := q.Exec(ctx, `INSERT INTO notify_subscriptions (`+subCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $10)`,
			sub.TenantID, sub.ID, sub.ClientID, sub.EventTypeIDs, sub.SubscribedBy, sub.Created, sub.PageSize, head, (*time.Time)(nil), int64(sub.AckDeadline/time.Second))
		if err != nil {
			return err
		}
		sub.Cursor = head
		return nil
	})
}

// GetNotifySubscription implements notify.Store.
func (s *Store) GetNotifySubscription(ctx context.Context, tenantID, id string) (notify.Subscription, error) {
	sub, err := scanNotifySub(s.c.Read().QueryRow(ctx, subSelect, tenantID, id))
	return sub, s.notFound(err, "subscription")
}

// DeleteNotifySubscription implements notify.Store.
// Its leased pages go with it.
func (s *Store) DeleteNotifySubscription(ctx context.Context, tenantID, id string) error {
	var n int64
	err := s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(func(affected int64) error { n = affected; return nil }, `DELETE FROM notify_subscriptions WHERE tenant_id = $1 AND id = $2`, tenantID, id)
		b.Exec(nil, `DELETE FROM notify_pages WHERE tenant_id = $1 AND subscription_id = $2`, tenantID, id)
		return q.Batch(ctx, b)
	})
	return s.affected(n, err, "subscription")
}

// ConsumeNotifications implements notify.Store: it locks the
// subscription's row (retrievals of one subscription run one after the
// other), reads the head (every event up to it is committed) and the
// oldest lapsed leased page, then either consumes that page (its row is
// deleted) or reads the next page and advances the cursor, then commits.
func (s *Store) ConsumeNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (notify.Subscription, int64, []events.Event, error) {
	return s.retrieveNotifications(ctx, tenantID, id, clientID, notBefore, now, rec, false)
}

// LeaseNotifications implements notify.Store: ConsumeNotifications' steps,
// except that a lapsed page is leased again and a new page with results
// is leased rather than consumed.
func (s *Store) LeaseNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (notify.Subscription, int64, []events.Event, error) {
	return s.retrieveNotifications(ctx, tenantID, id, clientID, notBefore, now, rec, true)
}

func (s *Store) retrieveNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record, ack bool) (notify.Subscription, int64, []events.Event, error) {
	var (
		sub  notify.Subscription
		page int64
		out  []events.Event
	)
	err := s.c.Tx(ctx, func(q Querier) error {
		out = nil
		// One round trip locks the row, then reads the head with a
		// snapshot taken after the lock was granted (READ COMMITTED takes
		// one per statement), and the oldest lapsed leased page: a
		// retrieval of either kind hands that page out before anything
		// newer, and every change to the subscription's pages is made
		// under this lock, so no two retrievals take the same page.
		var (
			head      int64
			lapsed    int64
			lapsedSeq []int64
		)
		b := &Batch{}
		b.QueryRow(func(row Row) (err error) {
			sub, err = scanNotifySub(row)
			return s.notFound(err, "subscription")
		}, subSelect+s.d.ForUpdate, tenantID, id)
		b.QueryRow(func(row Row) error {
			if err := row.Scan(&head); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			return nil
		}, eventHeadOf, tenantID)
		b.QueryRow(func(row Row) error {
			if err := row.Scan(&lapsed, &lapsedSeq); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			return nil
		}, `SELECT page, seqs FROM notify_pages WHERE tenant_id = $1 AND subscription_id = $2 AND lease_until <= $3 ORDER BY page LIMIT 1`, tenantID, id, now)
		if err := q.Batch(ctx, b); err != nil {
			return err
		}
		if sub.ClientID != clientID {
			return fault.E(fault.Forbidden, "the client is not the subscription's client")
		}
		b = &Batch{}
		if lapsed > 0 {
			var err error
			if out, err = s.readEvents(ctx, q, `SELECT `+eventCols+` FROM events e
				WHERE e.tenant_id = $1 AND `+s.d.In("e.seq", 2)+` AND e.received_at >= $3 ORDER BY e.seq`, tenantID, lapsedSeq, notBefore); err != nil {
				return err
			}
			if len(out) == 0 {
				// Every event of the page left retention: nothing is left
				// to hand out again, and an empty page is never confirmed.
				b.Exec(nil, `DELETE FROM notify_pages WHERE tenant_id = $1 AND subscription_id = $2 AND page = $3`, tenantID, id, lapsed)
				lapsed = 0
			}
		}
		if lapsed > 0 {
			// The page goes out again as it was; the cursor stays (it
			// passed the page's events when the page was first leased).
			page = lapsed
			if ack {
				b.Exec(nil, `UPDATE notify_pages SET lease_until = $4 WHERE tenant_id = $1 AND subscription_id = $2 AND page = $3`, tenantID, id, page, sub.LeaseUntil(now))
			} else {
				// A plain retrieval consumes: nobody will confirm the
				// page, so its lease ends with this commit and no
				// retrieval hands it out again.
				b.Exec(nil, `DELETE FROM notify_pages WHERE tenant_id = $1 AND subscription_id = $2 AND page = $3`, tenantID, id, page)
			}
			b.Exec(nil, `UPDATE notify_subscriptions SET last_request = $3 WHERE tenant_id = $1 AND id = $2`, tenantID, id, now)
			sub.LastRequest = now
		} else {
			cursor := head
			if head > sub.Cursor && len(sub.EventTypeIDs) > 0 {
				var err error
				if out, cursor, err = s.readNotifications(ctx, q, sub, head, notBefore); err != nil {
					return err
				}
			}
			cursor = max(cursor, sub.Cursor)
			b.Exec(nil, subAdvance, tenantID, id, cursor, now)
			sub.Cursor, sub.Pages, sub.LastRequest = cursor, sub.Pages+1, now
			page = sub.Pages
			if ack && len(out) > 0 {
				b.Exec(nil, `INSERT INTO notify_pages (tenant_id, subscription_id, page, seqs, lease_until) VALUES ($1, $2, $3, $4, $5)`,
					tenantID, id, page, seqs(out), sub.LeaseUntil(now))
			}
		}
		// The writes and the lock of the audit chain share a round trip;
		// the record is written in the next. The chain is locked after
		// the subscription: an audit append locks only the chain head, so
		// no two transactions take these locks in opposite order.
		var a *auditAppend
		if rec != nil {
			setRetrievalMeta(rec, page, len(out), ack, lapsed > 0)
			a = newAuditAppend([]*audit.Record{rec})
			a.lock(b)
		}
		if err := q.Batch(ctx, b); err != nil {
			return err
		}
		if a == nil {
			return nil
		}
		b = &Batch{}
		a.write(b)
		return q.Batch(ctx, b)
	})
	if err != nil {
		return notify.Subscription{}, 0, nil, err
	}
	return sub, page, out, nil
}

func seqs(evs []events.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// AckNotifications implements notify.Store under the subscription's row
// lock, so a confirmation and a retrieval handing the page out again never
// overlap.
func (s *Store) AckNotifications(ctx context.Context, tenantID, id, clientID string, page int64, now time.Time) error {
	return s.c.Tx(ctx, func(q Querier) error {
		var (
			sub   notify.Subscription
			until *time.Time
		)
		b := &Batch{}
		b.QueryRow(func(row Row) (err error) {
			sub, err = scanNotifySub(row)
			return s.notFound(err, "subscription")
		}, subSelect+s.d.ForUpdate, tenantID, id)
		b.QueryRow(func(row Row) error {
			var t time.Time
			if err := row.Scan(&t); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return nil
				}
				return err
			}
			until = &t
			return nil
		}, `SELECT lease_until FROM notify_pages WHERE tenant_id = $1 AND subscription_id = $2 AND page = $3`, tenantID, id, page)
		if err := q.Batch(ctx, b); err != nil {
			return err
		}
		switch {
		case sub.ClientID != clientID:
			return fault.E(fault.Forbidden, "the client is not the subscription's client")
		case page < 1 || page > sub.Pages:
			return fault.E(fault.NotFound, fault.Field("page"), "the subscription has not handed out that page")
		case until == nil:
			return nil
		case !until.After(now):
			return fault.E(fault.Conflict, "the page's lease lapsed before its confirmation")
		}
		_, err := q.Exec(ctx, `DELETE FROM notify_pages WHERE tenant_id = $1 AND subscription_id = $2 AND page = $3`, tenantID, id, page)
		return err
	})
}

// NextNotifyLapse implements notify.Store.
func (s *Store) NextNotifyLapse(ctx context.Context, tenantID, id string) (time.Time, error) {
	var t time.Time
	err := s.c.Read().QueryRow(ctx, `SELECT lease_until FROM notify_pages WHERE tenant_id = $1 AND subscription_id = $2 ORDER BY lease_until LIMIT 1`, tenantID, id).Scan(&t)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	return t, s.c.MapErr(err)
}

// CountNotifications implements notify.Store: the events of the lapsed
// pages still stored and in retention, then, per type, a range walk of
// events_by_type, stopped at limit rows in all. The retrieval that leased
// a page advanced the cursor past its events, so the two parts do not
// overlap for a sub read after its pages were leased (a page leased and
// lapsed since sub was read could be counted twice: the count is a
// dynamic figure).
func (s *Store) CountNotifications(ctx context.Context, sub notify.Subscription, notBefore, now time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	q := s.c.Read()
	// Each leased page held at least one event, so limit pages are
	// enough unless events left retention; reading no more bounds the
	// count's cost when many pages lapsed.
	pages, err := list(ctx, s, q, func(row Row) ([]int64, error) {
		var seqs []int64
		err := row.Scan(&seqs)
		return seqs, err
	}, `SELECT seqs FROM notify_pages WHERE tenant_id = $1 AND subscription_id = $2 AND lease_until <= $3 ORDER BY page LIMIT $4`, sub.TenantID, sub.ID, now, limit)
	if err != nil {
		return 0, err
	}
	var n int
	if len(pages) > 0 {
		var lapsed []int64
		for _, p := range pages {
			lapsed = append(lapsed, p...)
		}
		if err := q.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM events
			WHERE tenant_id = $1 AND `+s.d.In("seq", 2)+` AND received_at >= $3 LIMIT $4) c`,
			sub.TenantID, lapsed, notBefore, limit).Scan(&n); err != nil {
			return 0, s.c.MapErr(err)
		}
	}
	if len(sub.EventTypeIDs) == 0 || n >= limit {
		return n, nil
	}
	var m int
	err = q.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM events
		WHERE tenant_id = $1 AND `+s.d.In("type_id", 2)+` AND seq > $3 AND received_at >= $4 LIMIT $5) c`,
		sub.TenantID, sub.EventTypeIDs, sub.Cursor, notBefore, limit-n).Scan(&m)
	return n + m, s.c.MapErr(err)
}

// setRetrievalMeta completes the audit record of a retrieval.
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

// readNotifications reads up to sub.PageSize events of sub's types with
// Seq in (sub.Cursor, head] received at or after notBefore, and returns
// them and the cursor after them: the last seq looked at when the page is
// full, else head.
//
// For one type, one walk of events_by_type from the cursor reads the page.
// For several, an IN over that index would sort the whole backlog, and a
// walk of the primary key could pass any number of other events; instead
// each type's stretch of the index is walked for at most a page of seqs,
// the walks are merged (Dialect.NotifySeqs) and the rows read by key: at
// most a page of index entries per type, however long the backlog.
func (s *Store) readNotifications(ctx context.Context, q Querier, sub notify.Subscription, head int64, notBefore time.Time) ([]events.Event, int64, error) {
	if len(sub.EventTypeIDs) == 1 {
		out, err := s.readEvents(ctx, q, `SELECT `+eventCols+` FROM events e
			WHERE e.tenant_id = $1 AND e.type_id = $2 AND e.seq > $3 AND e.seq <= $4 AND e.received_at >= $5
			ORDER BY e.seq LIMIT $6`, sub.TenantID, sub.EventTypeIDs[0], sub.Cursor, head, notBefore, sub.PageSize)
		if err != nil || len(out) < sub.PageSize {
			return out, head, err
		}
		return out, out[len(out)-1].Seq, nil
	}
	var out []events.Event
	cursor := sub.Cursor
	for range maxSeqBatches {
		want := sub.PageSize - len(out)
		query, args := s.d.NotifySeqs(sub.TenantID, sub.EventTypeIDs, cursor, head, notBefore, want)
		seqs, err := list(ctx, s, q, func(row Row) (int64, error) {
			var seq int64
			err := row.Scan(&seq)
			return seq, err
		}, query, args...)
		if err != nil || len(seqs) == 0 {
			return out, head, err
		}
		evs, err := s.readEvents(ctx, q, `SELECT `+eventCols+` FROM events e
			WHERE e.tenant_id = $1 AND `+s.d.In("e.seq", 2)+` AND e.received_at >= $3 ORDER BY e.seq`, sub.TenantID, seqs, notBefore)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, evs...)
		if len(seqs) < want {
			return out, head, nil // every candidate up to head was looked at
		}
		cursor = seqs[len(seqs)-1]
		if len(out) == sub.PageSize {
			break
		}
	}
	return out, cursor, nil
}
