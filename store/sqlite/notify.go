package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/notify"
)

var _ notify.Store = (*Store)(nil)

const (
	subCols    = `tenant_id, id, client_id, event_type_ids, subscribed_by, created_at, page_size, cursor, pages, last_request`
	subInsert  = `INSERT INTO notify_subscriptions (` + subCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0)`
	subSelect  = `SELECT ` + subCols + ` FROM notify_subscriptions WHERE tenant_id = ? AND id = ?`
	subDelete  = `DELETE FROM notify_subscriptions WHERE tenant_id = ? AND id = ?`
	subAdvance = `UPDATE notify_subscriptions SET cursor = ?, pages = pages + 1, last_request = ? WHERE tenant_id = ? AND id = ?`
)

func init() {
	warmQueries = append(warmQueries, subSelect, subAdvance)
}

func scanSub(r rowScanner) (notify.Subscription, error) {
	var (
		sub           notify.Subscription
		types         string
		created, last int64
	)
	if err := r.Scan(&sub.TenantID, &sub.ID, &sub.ClientID, &types, &sub.SubscribedBy, &created, &sub.PageSize, &sub.Cursor, &sub.Pages, &last); err != nil {
		return sub, err
	}
	if err := json.Unmarshal([]byte(types), &sub.EventTypeIDs); err != nil {
		return sub, fault.E(fault.Internal, err)
	}
	sub.Created = fromMicros(created)
	if last != 0 {
		sub.LastRequest = fromMicros(last)
	}
	return sub, nil
}

// CreateSubscription implements notify.Store: the head is read in the
// write transaction that inserts, and SQLite has one writer, so no append
// falls between them.
func (s *Store) CreateSubscription(ctx context.Context, sub *notify.Subscription) error {
	types, err := json.Marshal(sub.EventTypeIDs)
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		var head int64
		if err := tx.QueryRowContext(ctx, eventHead, sub.TenantID).Scan(&head); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, subInsert, sub.TenantID, sub.ID, sub.ClientID, string(types), sub.SubscribedBy, micros(sub.Created), sub.PageSize, head); err != nil {
			return err
		}
		sub.Cursor = head
		return nil
	})
}

// GetSubscription implements notify.Store.
func (s *Store) GetSubscription(ctx context.Context, tenantID, id string) (notify.Subscription, error) {
	sub, err := scanSub(s.queryRow(ctx, subSelect, tenantID, id))
	return sub, notFound(err, "subscription")
}

// DeleteSubscription implements notify.Store.
func (s *Store) DeleteSubscription(ctx context.Context, tenantID, id string) error {
	res, err := s.exec(ctx, subDelete, tenantID, id)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fault.E(fault.NotFound, "subscription not found")
	}
	return nil
}

// pageQuery reads up to limit events of the given types after a cursor,
// up to a head, oldest first. Each type walks its own stretch of
// events_by_type (tenant_id, type_id, seq) for at most limit rows, and the
// walks are merged: a page costs at most limit rows per type however long
// the backlog, where one IN over the index would have to sort the whole
// backlog and a walk of the primary key could pass over every event of
// other types. Args: for each type, tenant, type, after, head, notBefore,
// limit; then limit.
func pageQuery(types int) string {
	one := `SELECT * FROM (SELECT ` + eventCols + ` FROM events e WHERE e.tenant_id = ? AND e.type_id = ? AND e.seq > ? AND e.seq <= ? AND e.received_at >= ? ORDER BY e.seq LIMIT ?)`
	if types == 1 {
		return one
	}
	return `SELECT * FROM (` + strings.Repeat(one+` UNION ALL `, types-1) + one + `) ORDER BY seq LIMIT ?`
}

// ConsumeNotifications implements notify.Store in one write transaction:
// SQLite has one writer, so retrievals of a subscription (and appends)
// are serialised.
func (s *Store) ConsumeNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (notify.Subscription, []events.Event, error) {
	var (
		sub notify.Subscription
		out []events.Event
	)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		sel, err := s.txStmt(ctx, tx, subSelect)
		if err != nil {
			return err
		}
		if sub, err = scanSub(sel.QueryRowContext(ctx, tenantID, id)); err != nil {
			return notFound(err, "subscription")
		}
		if sub.ClientID != clientID {
			return fault.E(fault.Forbidden, "the client is not the subscription's client")
		}
		var head int64
		if err := tx.QueryRowContext(ctx, eventHead, tenantID).Scan(&head); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		cursor := head
		if head > sub.Cursor && len(sub.EventTypeIDs) > 0 {
			args := make([]any, 0, 6*len(sub.EventTypeIDs)+1)
			for _, t := range sub.EventTypeIDs {
				args = append(args, tenantID, t, sub.Cursor, head, micros(notBefore), sub.PageSize)
			}
			if len(sub.EventTypeIDs) > 1 {
				args = append(args, sub.PageSize)
			}
			rows, err := tx.QueryContext(ctx, pageQuery(len(sub.EventTypeIDs)), args...)
			if err != nil {
				return err
			}
			if out, err = scanEvents(rows); err != nil {
				return err
			}
			if len(out) == sub.PageSize {
				cursor = out[len(out)-1].Seq
			}
		}
		if cursor < sub.Cursor {
			cursor = sub.Cursor
		}
		adv, err := s.txStmt(ctx, tx, subAdvance)
		if err != nil {
			return err
		}
		if _, err := adv.ExecContext(ctx, cursor, micros(now), tenantID, id); err != nil {
			return err
		}
		sub.Cursor, sub.Pages, sub.LastRequest = cursor, sub.Pages+1, now
		if rec != nil {
			setRetrievalMeta(rec, sub, len(out))
			return s.appendAudit(ctx, tx, []*audit.Record{rec})
		}
		return nil
	})
	if err != nil {
		return notify.Subscription{}, nil, err
	}
	return sub, out, nil
}

// CountNotifications implements notify.Store: one range walk of
// events_by_type per type, stopped at limit rows in all.
func (s *Store) CountNotifications(ctx context.Context, sub notify.Subscription, notBefore time.Time, limit int) (int, error) {
	if len(sub.EventTypeIDs) == 0 || limit <= 0 {
		return 0, nil
	}
	q := `SELECT count(*) FROM (SELECT 1 FROM events WHERE tenant_id = ? AND type_id IN (?` + strings.Repeat(", ?", len(sub.EventTypeIDs)-1) +
		`) AND seq > ? AND received_at >= ? LIMIT ?)`
	args := []any{sub.TenantID}
	for _, t := range sub.EventTypeIDs {
		args = append(args, t)
	}
	args = append(args, sub.Cursor, micros(notBefore), limit)
	var n int
	if err := s.queryRowShaped(ctx, q, args...).Scan(&n); err != nil {
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
