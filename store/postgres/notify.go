package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/notify"
)

var _ notify.Store = (*Store)(nil)

const (
	subCols   = `tenant_id, id, client_id, event_type_ids, subscribed_by, created_at, page_size, cursor, pages, last_request`
	subSelect = `SELECT ` + subCols + ` FROM notify_subscriptions WHERE tenant_id = $1 AND id = $2`
	// subLock locks the subscription's row for the rest of the
	// transaction: concurrent retrievals of one subscription, in any
	// process, run one after the other, each reading the cursor the
	// previous one committed (READ COMMITTED re-reads a row it waited for).
	subLock     = subSelect + ` FOR UPDATE`
	subAdvance  = `UPDATE notify_subscriptions SET cursor = $3, pages = pages + 1, last_request = $4 WHERE tenant_id = $1 AND id = $2`
	eventHeadOf = `SELECT seq FROM event_heads WHERE tenant_id = $1`
	// Reading a page: for one type, one walk of events_by_type
	// (tenant_id, type_id, seq) from the cursor reads the page
	// (notifyOneType). For several, type_id = ANY(...) ORDER BY seq could
	// sort the whole backlog and a walk of the primary key pass over any
	// number of other events; instead each type's stretch of the index is
	// walked for at most a page of seqs (an index-only scan), the walks are
	// merged (notifySeqs), and the page's rows are read by key
	// (notifyRows). A page costs at most a page of index entries per type
	// plus a page of rows, however long the backlog.
	notifyOneType = `SELECT ` + eventColumns + ` FROM events e
		WHERE e.tenant_id = $1 AND e.type_id = $2 AND e.seq > $3 AND e.seq <= $4 AND e.received_at >= $5
		ORDER BY e.seq LIMIT $6`
	notifySeqs = `SELECT s.seq FROM unnest($2::text[]) AS t(type_id)
		CROSS JOIN LATERAL (
			SELECT x.seq FROM events x
			WHERE x.tenant_id = $1 AND x.type_id = t.type_id AND x.seq > $3 AND x.seq <= $4
			ORDER BY x.seq LIMIT $5
		) s
		ORDER BY s.seq LIMIT $5`
	notifyRows = `SELECT ` + eventColumns + ` FROM events e
		WHERE e.tenant_id = $1 AND e.seq = ANY($2::bigint[]) AND e.received_at >= $3 ORDER BY e.seq`
	// maxSeqBatches bounds the batches of seqs one retrieval reads when
	// the page comes out short because candidates were older than the
	// retention: past it the page is returned short and the next
	// retrieval goes on from there.
	maxSeqBatches = 8
	notifyCount   = `SELECT count(*) FROM (SELECT 1 FROM events
		WHERE tenant_id = $1 AND type_id = ANY($2) AND seq > $3 AND received_at >= $4 LIMIT $5) c`
)

func scanNotifySub(row pgx.Row) (notify.Subscription, error) {
	var (
		sub  notify.Subscription
		last *time.Time
	)
	if err := row.Scan(&sub.TenantID, &sub.ID, &sub.ClientID, &sub.EventTypeIDs, &sub.SubscribedBy, &sub.Created, &sub.PageSize, &sub.Cursor, &sub.Pages, &last); err != nil {
		return sub, err
	}
	sub.Created = sub.Created.UTC()
	if last != nil {
		sub.LastRequest = last.UTC()
	}
	return sub, nil
}

// CreateNotifySubscription implements notify.Store. The cursor is the head
// committed when the insert runs; an append committing later has larger
// sequence numbers (appends number events under the head row's lock and
// commit before releasing it), so the subscription sees it.
func (s *Store) CreateNotifySubscription(ctx context.Context, sub *notify.Subscription) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		var head int64
		if err := tx.QueryRow(ctx, eventHeadOf, sub.TenantID).Scan(&head); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO notify_subscriptions (`+subCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, NULL)`,
			sub.TenantID, sub.ID, sub.ClientID, sub.EventTypeIDs, sub.SubscribedBy, sub.Created, sub.PageSize, head)
		if err != nil {
			return err
		}
		sub.Cursor = head
		return nil
	})
}

// GetNotifySubscription implements notify.Store.
func (s *Store) GetNotifySubscription(ctx context.Context, tenantID, id string) (notify.Subscription, error) {
	sub, err := scanNotifySub(s.pool.QueryRow(ctx, subSelect, tenantID, id))
	return sub, notFound(err, "subscription")
}

// DeleteNotifySubscription implements notify.Store.
func (s *Store) DeleteNotifySubscription(ctx context.Context, tenantID, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM notify_subscriptions WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return fault.E(fault.NotFound, "subscription not found")
	}
	return nil
}

// ConsumeNotifications implements notify.Store: it locks the
// subscription's row, reads the head (every event up to it is committed:
// an append advances the head in the transaction of its events), reads
// the page and advances the cursor, then commits.
func (s *Store) ConsumeNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (notify.Subscription, []events.Event, error) {
	var (
		sub notify.Subscription
		out []events.Event
	)
	err := s.tx(ctx, func(tx pgx.Tx) error {
		out = nil
		// One round trip locks the row, then reads the head with a
		// snapshot taken after the lock was granted (READ COMMITTED takes
		// one per statement).
		b := &pgx.Batch{}
		b.Queue(subLock, tenantID, id)
		b.Queue(eventHeadOf, tenantID)
		br := tx.SendBatch(ctx, b)
		var err error
		sub, err = scanNotifySub(br.QueryRow())
		if err != nil {
			br.Close()
			return notFound(err, "subscription")
		}
		var head int64
		if err := br.QueryRow().Scan(&head); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		if sub.ClientID != clientID {
			return fault.E(fault.Forbidden, "the client is not the subscription's client")
		}
		cursor := head
		if head > sub.Cursor && len(sub.EventTypeIDs) > 0 {
			if out, cursor, err = readNotifications(ctx, tx, sub, head, notBefore); err != nil {
				return err
			}
		}
		cursor = max(cursor, sub.Cursor)
		// The cursor's advance and the lock of the audit chain share a
		// round trip; the record is written in the next. The chain is
		// locked after the subscription: an audit append locks only the
		// chain head, so no two transactions take these locks in
		// opposite order.
		b = &pgx.Batch{}
		b.Queue(subAdvance, tenantID, id, cursor, now)
		var a *auditAppend
		if rec != nil {
			next := sub
			next.Pages++
			setRetrievalMeta(rec, next, len(out))
			if a, err = newAuditAppend([]*audit.Record{rec}); err != nil {
				return err
			}
			a.lock(b)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		sub.Cursor, sub.Pages, sub.LastRequest = cursor, sub.Pages+1, now
		if a == nil {
			return nil
		}
		b = &pgx.Batch{}
		a.write(b)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return notify.Subscription{}, nil, err
	}
	return sub, out, nil
}

// CountNotifications implements notify.Store: per type, a range walk of
// events_by_type, stopped at limit rows in all.
func (s *Store) CountNotifications(ctx context.Context, sub notify.Subscription, notBefore time.Time, limit int) (int, error) {
	if len(sub.EventTypeIDs) == 0 || limit <= 0 {
		return 0, nil
	}
	var n int
	if err := s.pool.QueryRow(ctx, notifyCount, sub.TenantID, sub.EventTypeIDs, sub.Cursor, notBefore, limit).Scan(&n); err != nil {
		return 0, mapErr(err)
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

// readNotifications reads up to sub.PageSize events of sub's types with
// Seq in (sub.Cursor, head] received at or after notBefore, and returns
// them and the cursor after them: the last seq looked at when the page is
// full, else head.
func readNotifications(ctx context.Context, tx pgx.Tx, sub notify.Subscription, head int64, notBefore time.Time) ([]events.Event, int64, error) {
	if len(sub.EventTypeIDs) == 1 {
		rows, err := tx.Query(ctx, notifyOneType, sub.TenantID, sub.EventTypeIDs[0], sub.Cursor, head, notBefore, sub.PageSize)
		if err != nil {
			return nil, 0, err
		}
		out, err := collectEvents(rows)
		if err != nil || len(out) < sub.PageSize {
			return out, head, err
		}
		return out, out[len(out)-1].Seq, nil
	}
	var out []events.Event
	cursor := sub.Cursor
	for range maxSeqBatches {
		want := sub.PageSize - len(out)
		rows, err := tx.Query(ctx, notifySeqs, sub.TenantID, sub.EventTypeIDs, cursor, head, want)
		if err != nil {
			return nil, 0, err
		}
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, 0, err
		}
		if len(seqs) == 0 {
			return out, head, nil
		}
		r, err := tx.Query(ctx, notifyRows, sub.TenantID, seqs, notBefore)
		if err != nil {
			return nil, 0, err
		}
		evs, err := collectEvents(r)
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
