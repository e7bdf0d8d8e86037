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
	warmQueries = append(warmQueries, subSelect, subAdvance, onePage, pageRows)
}

func scanNotifySub(r rowScanner) (notify.Subscription, error) {
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

// CreateNotifySubscription implements notify.Store: the head is read in the
// write transaction that inserts, and SQLite has one writer, so no append
// falls between them.
func (s *Store) CreateNotifySubscription(ctx context.Context, sub *notify.Subscription) error {
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

// GetNotifySubscription implements notify.Store.
func (s *Store) GetNotifySubscription(ctx context.Context, tenantID, id string) (notify.Subscription, error) {
	sub, err := scanNotifySub(s.queryRow(ctx, subSelect, tenantID, id))
	return sub, notFound(err, "subscription")
}

// DeleteNotifySubscription implements notify.Store.
func (s *Store) DeleteNotifySubscription(ctx context.Context, tenantID, id string) error {
	res, err := s.exec(ctx, subDelete, tenantID, id)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fault.E(fault.NotFound, "subscription not found")
	}
	return nil
}

// Reading a page. For one type, one walk of events_by_type (tenant_id,
// type_id, seq) from the cursor reads the page (onePage). For several,
// one IN over that index would have to sort the whole backlog and a walk
// of the primary key could pass over any number of events of other
// types; instead each type's stretch of the index is walked for at most a
// page of seqs, index only, the walks are merged (pageSeqs), and the
// page's rows are then read by primary key (pageRows). A page costs at
// most a page of index entries per type plus a page of rows, however long
// the backlog.
const (
	onePage  = `SELECT ` + eventCols + ` FROM events e WHERE e.tenant_id = ? AND e.type_id = ? AND e.seq > ? AND e.seq <= ? AND e.received_at >= ? ORDER BY e.seq LIMIT ?`
	pageRows = `SELECT ` + eventCols + ` FROM events e WHERE e.tenant_id = ? AND e.seq IN (SELECT value FROM json_each(?)) AND e.received_at >= ? ORDER BY e.seq`
	// maxSeqBatches bounds the batches of seqs one retrieval reads when
	// the page comes out short because candidates were older than the
	// retention: past it, the page is returned short, and the next
	// retrieval goes on from there.
	maxSeqBatches = 8
)

// pageSeqs is the merge of one index-only walk per type, each stopped at
// limit seqs. Args: for each type, tenant, type, after, head, limit; then
// limit.
func pageSeqs(types int) string {
	one := `SELECT * FROM (SELECT seq FROM events WHERE tenant_id = ? AND type_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?)`
	return `SELECT seq FROM (` + strings.Repeat(one+` UNION ALL `, types-1) + one + `) ORDER BY seq LIMIT ?`
}

// readNotifications reads up to sub.PageSize events of sub's types with Seq in
// (sub.Cursor, head] received at or after notBefore, and returns them and
// the cursor after them: the last seq looked at when the page is full,
// else head.
func (s *Store) readNotifications(ctx context.Context, tx *sql.Tx, sub notify.Subscription, head int64, notBefore time.Time) ([]events.Event, int64, error) {
	if len(sub.EventTypeIDs) == 1 {
		st, err := s.txStmt(ctx, tx, onePage)
		if err != nil {
			return nil, 0, err
		}
		rows, err := st.QueryContext(ctx, sub.TenantID, sub.EventTypeIDs[0], sub.Cursor, head, micros(notBefore), sub.PageSize)
		if err != nil {
			return nil, 0, err
		}
		out, err := scanEvents(rows)
		if err != nil || len(out) < sub.PageSize {
			return out, head, err
		}
		return out, out[len(out)-1].Seq, nil
	}
	seqQ := pageSeqs(len(sub.EventTypeIDs))
	rowsQ, err := s.txStmt(ctx, tx, pageRows)
	if err != nil {
		return nil, 0, err
	}
	var out []events.Event
	cursor := sub.Cursor
	for range maxSeqBatches {
		want := sub.PageSize - len(out)
		args := make([]any, 0, 5*len(sub.EventTypeIDs)+1)
		for _, t := range sub.EventTypeIDs {
			args = append(args, sub.TenantID, t, cursor, head, want)
		}
		rows, err := tx.QueryContext(ctx, seqQ, append(args, want)...)
		if err != nil {
			return nil, 0, err
		}
		var seqs []int64
		for rows.Next() {
			var q int64
			if err := rows.Scan(&q); err != nil {
				rows.Close()
				return nil, 0, err
			}
			seqs = append(seqs, q)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, err
		}
		if len(seqs) == 0 {
			return out, head, nil
		}
		list, err := json.Marshal(seqs)
		if err != nil {
			return nil, 0, fault.E(fault.Internal, err)
		}
		r, err := rowsQ.QueryContext(ctx, sub.TenantID, string(list), micros(notBefore))
		if err != nil {
			return nil, 0, err
		}
		evs, err := scanEvents(r)
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
		if sub, err = scanNotifySub(sel.QueryRowContext(ctx, tenantID, id)); err != nil {
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
			if out, cursor, err = s.readNotifications(ctx, tx, sub, head, notBefore); err != nil {
				return err
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
