package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
)

var _ eventstream.Store = (*Store)(nil)

const esSubCols = `tenant_id, id, kind, endpoint, config, auth_sealed, created_at, updated_at, done_seq, status, lease_owner, lease_until`

func scanSub(row rowScanner) (eventstream.Subscription, error) {
	var (
		sub                          eventstream.Subscription
		config, status               string
		created, updated, leaseUntil int64
	)
	if err := row.Scan(&sub.TenantID, &sub.ID, &sub.Kind, &sub.Endpoint, &config, &sub.Auth.Sealed, &created, &updated, &sub.Cursor, &status, &sub.LeaseOwner, &leaseUntil); err != nil {
		return sub, err
	}
	if err := eventstream.UnmarshalConfig([]byte(config), &sub); err != nil {
		return sub, err
	}
	if err := eventstream.UnmarshalStatus([]byte(status), &sub.Status); err != nil {
		return sub, err
	}
	sub.CreatedAt, sub.UpdatedAt, sub.LeaseUntil = fromMicros(created), fromMicros(updated), optTime(leaseUntil)
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
	_, err = s.exec(ctx, `INSERT INTO eventstream_subscriptions (`+esSubCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sub.TenantID, sub.ID, sub.Kind, sub.Endpoint, string(config), sub.Auth.Sealed, micros(sub.CreatedAt), micros(sub.UpdatedAt),
		sub.Cursor, string(status), sub.LeaseOwner, optMicros(sub.LeaseUntil))
	return mapErr(err)
}

// GetSubscription implements eventstream.Store.
func (s *Store) GetSubscription(ctx context.Context, tenantID, id string) (eventstream.Subscription, error) {
	sub, err := scanSub(s.queryRow(ctx, `SELECT `+esSubCols+` FROM eventstream_subscriptions WHERE tenant_id = ? AND id = ?`, tenantID, id))
	if err != nil {
		return eventstream.Subscription{}, notFound(err, "subscription")
	}
	return sub, nil
}

func collectSubs(rows *sql.Rows, err error) ([]eventstream.Subscription, error) {
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []eventstream.Subscription
	for rows.Next() {
		sub, err := scanSub(rows)
		if err != nil {
			return nil, mapErr(err)
		}
		out = append(out, sub)
	}
	return out, mapErr(rows.Err())
}

// ListSubscriptions implements eventstream.Store.
func (s *Store) ListSubscriptions(ctx context.Context, tenantID, kind, afterID string, limit int) ([]eventstream.Subscription, error) {
	return collectSubs(s.query(ctx, `SELECT `+esSubCols+` FROM eventstream_subscriptions
		WHERE tenant_id = ? AND kind = ? AND id > ? ORDER BY id LIMIT ?`, tenantID, kind, afterID, limit))
}

// UpdateSubscription implements eventstream.Store.
func (s *Store) UpdateSubscription(ctx context.Context, sub eventstream.Subscription, resume bool) error {
	config, err := eventstream.MarshalConfig(sub)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		var status string
		if err := tx.QueryRowContext(ctx, `SELECT status FROM eventstream_subscriptions WHERE tenant_id = ? AND id = ?`, sub.TenantID, sub.ID).Scan(&status); err != nil {
			return notFound(err, "subscription")
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
		_, err := tx.ExecContext(ctx, `UPDATE eventstream_subscriptions SET config = ?, auth_sealed = ?, updated_at = ?, status = ?
			WHERE tenant_id = ? AND id = ?`, string(config), sub.Auth.Sealed, micros(sub.UpdatedAt), status, sub.TenantID, sub.ID)
		return err
	})
}

// DeleteSubscription implements eventstream.Store.
func (s *Store) DeleteSubscription(ctx context.Context, tenantID, kind, id string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM eventstream_subscriptions WHERE tenant_id = ? AND kind = ? AND id = ?`, tenantID, kind, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fault.E(fault.NotFound, "subscription not found")
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM eventstream_dead_letters WHERE tenant_id = ? AND subscription_id = ?`, tenantID, id)
		return err
	})
}

// ClaimSubscriptions implements eventstream.Store. The single writer
// connection makes the transaction's reads and writes atomic.
func (s *Store) ClaimSubscriptions(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]eventstream.Subscription, error) {
	until, n := micros(now.Add(leaseFor)), micros(now)
	var out []eventstream.Subscription
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE eventstream_subscriptions SET lease_until = ? WHERE lease_owner = ? AND lease_until > ?`, until, owner, n); err != nil {
			return err
		}
		if limit > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE eventstream_subscriptions SET lease_owner = ?, lease_until = ?
				WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM eventstream_subscriptions WHERE lease_until <= ? ORDER BY tenant_id, id LIMIT ?)`,
				owner, until, n, limit); err != nil {
				return err
			}
		}
		var err error
		out, err = collectSubs(tx.QueryContext(ctx, `SELECT `+esSubCols+` FROM eventstream_subscriptions WHERE lease_owner = ? AND lease_until > ? ORDER BY tenant_id, id`, owner, n))
		return err
	})
	return out, err
}

// ReleaseSubscription implements eventstream.Store.
func (s *Store) ReleaseSubscription(ctx context.Context, tenantID, id, owner string) error {
	_, err := s.exec(ctx, `UPDATE eventstream_subscriptions SET lease_until = 0 WHERE tenant_id = ? AND id = ? AND lease_owner = ?`, tenantID, id, owner)
	return mapErr(err)
}

// RecordDelivery implements eventstream.Store.
func (s *Store) RecordDelivery(ctx context.Context, u eventstream.DeliveryUpdate) error {
	status, err := eventstream.MarshalStatus(u.Status)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		var (
			owner string
			until int64
		)
		if err := tx.QueryRowContext(ctx, `SELECT lease_owner, lease_until FROM eventstream_subscriptions WHERE tenant_id = ? AND id = ?`, u.TenantID, u.SubscriptionID).Scan(&owner, &until); err != nil {
			return notFound(err, "subscription")
		}
		if owner != u.Owner || until <= micros(u.Now) {
			return fault.E(fault.Conflict, "the delivery lease is not held")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE eventstream_subscriptions SET done_seq = MAX(done_seq, ?), status = ? WHERE tenant_id = ? AND id = ?`,
			u.Cursor, string(status), u.TenantID, u.SubscriptionID); err != nil {
			return err
		}
		for _, d := range u.NewDeadLetters {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO eventstream_dead_letters
				(tenant_id, subscription_id, id, event_seq, event_type, body, attempts, last_error, created_at, requeued) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
				u.TenantID, u.SubscriptionID, d.ID, d.EventSeq, d.EventType, d.Body, d.Attempts, d.LastError, micros(d.CreatedAt)); err != nil {
				return err
			}
		}
		for _, id := range u.Redelivered {
			if _, err := tx.ExecContext(ctx, `DELETE FROM eventstream_dead_letters WHERE tenant_id = ? AND subscription_id = ? AND id = ?`, u.TenantID, u.SubscriptionID, id); err != nil {
				return err
			}
		}
		for _, d := range u.Redead {
			if _, err := tx.ExecContext(ctx, `UPDATE eventstream_dead_letters SET attempts = ?, last_error = ?, requeued = 0
				WHERE tenant_id = ? AND subscription_id = ? AND id = ?`, d.Attempts, d.LastError, u.TenantID, u.SubscriptionID, d.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListDeadLetters implements eventstream.Store.
func (s *Store) ListDeadLetters(ctx context.Context, tenantID, subscriptionID, afterID string, requeuedOnly bool, limit int) ([]eventstream.DeadLetter, error) {
	q := `SELECT tenant_id, subscription_id, id, event_seq, event_type, body, attempts, last_error, created_at, requeued
		FROM eventstream_dead_letters WHERE tenant_id = ? AND subscription_id = ? AND id > ?`
	if requeuedOnly {
		q += ` AND requeued = 1`
	}
	rows, err := s.query(ctx, q+` ORDER BY id LIMIT ?`, tenantID, subscriptionID, afterID, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []eventstream.DeadLetter
	for rows.Next() {
		var (
			d       eventstream.DeadLetter
			created int64
		)
		if err := rows.Scan(&d.TenantID, &d.SubscriptionID, &d.ID, &d.EventSeq, &d.EventType, &d.Body, &d.Attempts, &d.LastError, &created, &d.Requeued); err != nil {
			return nil, mapErr(err)
		}
		d.CreatedAt = fromMicros(created)
		out = append(out, d)
	}
	return out, mapErr(rows.Err())
}

// RequeueDeadLetters implements eventstream.Store.
func (s *Store) RequeueDeadLetters(ctx context.Context, tenantID, subscriptionID string, ids []string) (int, error) {
	q := `UPDATE eventstream_dead_letters SET requeued = 1 WHERE tenant_id = ? AND subscription_id = ?`
	args := []any{tenantID, subscriptionID}
	if len(ids) > 0 {
		q += ` AND id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	}
	res, err := s.exec(ctx, q, args...)
	if err != nil {
		return 0, mapErr(err)
	}
	n, err := res.RowsAffected()
	return int(n), mapErr(err)
}
