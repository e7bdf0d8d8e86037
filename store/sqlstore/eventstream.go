package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
)

var _ eventstream.Store = (*Store)(nil)

// The lease_until of a subscription nobody holds is the zero time (year 1
// on PostgreSQL, 0 on SQLite): before every now. done_received_at is the
// cursor's CursorAt, NULL for none (see migration 20).
const esSubCols = `tenant_id, id, kind, endpoint, config, auth_sealed, created_at, updated_at, done_seq, done_received_at, status, lease_owner, lease_until`

func scanSub(row Row) (eventstream.Subscription, error) {
	var (
		sub            eventstream.Subscription
		config, status string
		doneAt         *time.Time
	)
	if err := row.Scan(&sub.TenantID, &sub.ID, &sub.Kind, &sub.Endpoint, &config, &sub.Auth.Sealed, &sub.CreatedAt, &sub.UpdatedAt, &sub.Cursor, &doneAt, &status, &sub.LeaseOwner, &sub.LeaseUntil); err != nil {
		return sub, err
	}
	sub.CursorAt = orZero(doneAt)
	if err := eventstream.UnmarshalConfig([]byte(config), &sub); err != nil {
		return sub, err
	}
	if err := eventstream.UnmarshalStatus([]byte(status), &sub.Status); err != nil {
		return sub, err
	}
	if sub.LeaseUntil.IsZero() {
		sub.LeaseUntil = time.Time{}
	}
	if len(sub.Auth.Sealed) == 0 {
		sub.Auth.Sealed = nil
	}
	return sub, nil
}

// CreateSubscription implements eventstream.Store.
func (s *Store) CreateSubscription(ctx context.Context, sub eventstream.Subscription) error {
	config, err := eventstream.MarshalConfig(sub)
	if err != nil {
		return err
	}
	status, err := eventstream.MarshalStatus(sub.Status)
	if err != nil {
		return err
	}
	return s.exec(ctx, `INSERT INTO eventstream_subscriptions (`+esSubCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		sub.TenantID, sub.ID, sub.Kind, sub.Endpoint, string(config), sub.Auth.Sealed, sub.CreatedAt, sub.UpdatedAt,
		sub.Cursor, optTime(sub.CursorAt), string(status), sub.LeaseOwner, sub.LeaseUntil)
}

// GetSubscription implements eventstream.Store.
func (s *Store) GetSubscription(ctx context.Context, tenantID, id string) (eventstream.Subscription, error) {
	sub, err := scanSub(s.c.Read().QueryRow(ctx, `SELECT `+esSubCols+` FROM eventstream_subscriptions WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return eventstream.Subscription{}, s.notFound(err, "subscription")
	}
	return sub, nil
}

// ListSubscriptions implements eventstream.Store.
func (s *Store) ListSubscriptions(ctx context.Context, tenantID, kind, afterID string, limit int) ([]eventstream.Subscription, error) {
	return list(ctx, s, s.c.Read(), scanSub, `SELECT `+esSubCols+` FROM eventstream_subscriptions
		WHERE tenant_id = $1 AND kind = $2 AND id > $3 ORDER BY id LIMIT $4`, tenantID, kind, afterID, limit)
}

// UpdateSubscription implements eventstream.Store.
func (s *Store) UpdateSubscription(ctx context.Context, sub eventstream.Subscription, resume bool) error {
	config, err := eventstream.MarshalConfig(sub)
	if err != nil {
		return err
	}
	return s.c.Tx(ctx, func(q Querier) error {
		var status string
		if err := q.QueryRow(ctx, `SELECT status FROM eventstream_subscriptions WHERE tenant_id = $1 AND id = $2`+s.d.ForUpdate, sub.TenantID, sub.ID).Scan(&status); err != nil {
			return s.notFound(err, "subscription")
		}
		if resume {
			var st eventstream.Status
			if err := eventstream.UnmarshalStatus([]byte(status), &st); err != nil {
				return err
			}
			st.Paused, st.PausedAt, st.FailingSince = false, time.Time{}, time.Time{}
			b, err := eventstream.MarshalStatus(st)
			if err != nil {
				return err
			}
			status = string(b)
		}
		_, err := q.Exec(ctx, `UPDATE eventstream_subscriptions SET config = $1, auth_sealed = $2, updated_at = $3, status = $4
			WHERE tenant_id = $5 AND id = $6`, string(config), sub.Auth.Sealed, sub.UpdatedAt, status, sub.TenantID, sub.ID)
		return err
	})
}

// DeleteSubscription implements eventstream.Store.
func (s *Store) DeleteSubscription(ctx context.Context, tenantID, kind, id string) error {
	return s.deleteWith(ctx, "subscription", `DELETE FROM eventstream_subscriptions WHERE tenant_id = $1 AND kind = $2 AND id = $3`, []any{tenantID, kind, id},
		`DELETE FROM eventstream_dead_letters WHERE tenant_id = $1 AND subscription_id = $2`, tenantID, id)
}

// ClaimSubscriptions implements eventstream.Store: it renews owner's live
// leases and takes up to limit lapsed ones, in one transaction. Lapsed rows
// are locked with SKIP LOCKED where the database locks rows, so concurrent
// claimers take disjoint sets.
func (s *Store) ClaimSubscriptions(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]eventstream.Subscription, error) {
	until := now.Add(leaseFor)
	var out []eventstream.Subscription
	err := s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `UPDATE eventstream_subscriptions SET lease_until = $1 WHERE lease_owner = $2 AND lease_until > $3`, until, owner, now)
		if limit > 0 {
			b.Exec(nil, `UPDATE eventstream_subscriptions SET lease_owner = $1, lease_until = $2
				WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM eventstream_subscriptions WHERE lease_until <= $3
					ORDER BY tenant_id, id LIMIT $4`+s.d.SkipLocked+`)`, owner, until, now, limit)
		}
		b.Query(func(rows Rows) (err error) {
			out, err = appendRows(nil, rows, scanSub)
			return err
		}, `SELECT `+esSubCols+` FROM eventstream_subscriptions WHERE lease_owner = $1 AND lease_until > $2 ORDER BY tenant_id, id`, owner, now)
		return q.Batch(ctx, b)
	})
	return out, err
}

// ReleaseSubscription implements eventstream.Store.
func (s *Store) ReleaseSubscription(ctx context.Context, tenantID, id, owner string) error {
	return s.exec(ctx, `UPDATE eventstream_subscriptions SET lease_until = $1 WHERE tenant_id = $2 AND id = $3 AND lease_owner = $4`,
		time.Time{}, tenantID, id, owner)
}

// RecordDelivery implements eventstream.Store. The cursor and its bound
// are read and written under the row's lock, so they move together: the
// bound stored with a seq is always one of that seq or an earlier one.
//
// bound_from_seq is the tenant's last seq when migration 20 ran (0 for a
// subscription created since): the events up to it may have been stored
// out of received_at order (SQLite before that migration, PostgreSQL
// before its migration 18), so the ReceivedAt of one of them bounds
// nothing after it. From there on every event after the cursor was
// appended with the order kept, at or after every event stored before it.
//
// u.Audit is appended after the lease check and the writes: the
// subscription's row is locked before the audit chain heads, as in every
// transaction taking both, and a refused update appends nothing.
func (s *Store) RecordDelivery(ctx context.Context, u eventstream.DeliveryUpdate) error {
	status, err := eventstream.MarshalStatus(u.Status)
	if err != nil {
		return err
	}
	return s.c.Tx(ctx, func(q Querier) error {
		var (
			owner     string
			until     time.Time
			seq, from int64
			at        *time.Time
		)
		if err := q.QueryRow(ctx, `SELECT lease_owner, lease_until, done_seq, done_received_at, bound_from_seq FROM eventstream_subscriptions
			WHERE tenant_id = $1 AND id = $2`+s.d.ForUpdate, u.TenantID, u.SubscriptionID).Scan(&owner, &until, &seq, &at, &from); err != nil {
			return s.notFound(err, "subscription")
		}
		if owner != u.Owner || !until.After(u.Now) {
			return fault.E(fault.Conflict, "the delivery lease is not held")
		}
		if u.Cursor >= seq {
			seq = u.Cursor
			if u.Cursor >= from && u.CursorAt.After(orZero(at)) {
				at = &u.CursorAt
			}
		}
		b := &Batch{}
		b.Exec(nil, `UPDATE eventstream_subscriptions SET done_seq = $1, done_received_at = $2, status = $3
			WHERE tenant_id = $4 AND id = $5`, seq, at, string(status), u.TenantID, u.SubscriptionID)
		for _, d := range u.NewDeadLetters {
			b.Exec(nil, `INSERT INTO eventstream_dead_letters
				(tenant_id, subscription_id, id, event_seq, event_type, body, attempts, last_error, created_at, requeued) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
				ON CONFLICT (tenant_id, subscription_id, id) DO UPDATE SET event_seq = excluded.event_seq, event_type = excluded.event_type, body = excluded.body,
					attempts = excluded.attempts, last_error = excluded.last_error, created_at = excluded.created_at, requeued = excluded.requeued`,
				u.TenantID, u.SubscriptionID, d.ID, d.EventSeq, d.EventType, d.Body, d.Attempts, d.LastError, d.CreatedAt, false)
		}
		for _, id := range u.Redelivered {
			b.Exec(nil, `DELETE FROM eventstream_dead_letters WHERE tenant_id = $1 AND subscription_id = $2 AND id = $3`, u.TenantID, u.SubscriptionID, id)
		}
		for _, d := range u.Redead {
			b.Exec(nil, `UPDATE eventstream_dead_letters SET attempts = $1, last_error = $2, requeued = $3
				WHERE tenant_id = $4 AND subscription_id = $5 AND id = $6`, d.Attempts, d.LastError, false, u.TenantID, u.SubscriptionID, d.ID)
		}
		return appendAuditTx(ctx, q, b, u.Audit)
	})
}

// ListDeadLetters implements eventstream.Store.
func (s *Store) ListDeadLetters(ctx context.Context, tenantID, subscriptionID, afterID string, requeuedOnly bool, limit int) ([]eventstream.DeadLetter, error) {
	return list(ctx, s, s.c.Read(), func(row Row) (eventstream.DeadLetter, error) {
		var d eventstream.DeadLetter
		err := row.Scan(&d.TenantID, &d.SubscriptionID, &d.ID, &d.EventSeq, &d.EventType, &d.Body, &d.Attempts, &d.LastError, &d.CreatedAt, &d.Requeued)
		return d, err
	}, `SELECT tenant_id, subscription_id, id, event_seq, event_type, body, attempts, last_error, created_at, requeued
		FROM eventstream_dead_letters WHERE tenant_id = $1 AND subscription_id = $2 AND id > $3 AND (requeued OR NOT $4)
		ORDER BY id LIMIT $5`, tenantID, subscriptionID, afterID, requeuedOnly, limit)
}

// RequeueDeadLetters implements eventstream.Store: ids, or every dead
// letter of the subscription when ids is empty.
func (s *Store) RequeueDeadLetters(ctx context.Context, tenantID, subscriptionID string, ids []string) (int, error) {
	q, args := `UPDATE eventstream_dead_letters SET requeued = $3 WHERE tenant_id = $1 AND subscription_id = $2`, []any{tenantID, subscriptionID, true}
	if len(ids) > 0 {
		q += ` AND ` + s.d.In("id", 4)
		args = append(args, ids)
	}
	n, err := s.c.Write().Exec(ctx, q, args...)
	return int(n), s.c.MapErr(err)
}
