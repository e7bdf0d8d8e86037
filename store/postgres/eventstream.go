package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
)

var _ eventstream.Store = (*Store)(nil)

const esSubCols = `tenant_id, id, kind, endpoint, config, auth_sealed, created_at, updated_at, done_seq, status, lease_owner, lease_until`

// esZero is the lease_until of a subscription nobody holds.
var esZero = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

func scanSub(row pgx.Row) (eventstream.Subscription, error) {
	var (
		sub            eventstream.Subscription
		config, status string
	)
	if err := row.Scan(&sub.TenantID, &sub.ID, &sub.Kind, &sub.Endpoint, &config, &sub.Auth.Sealed, &sub.CreatedAt, &sub.UpdatedAt, &sub.Cursor, &status, &sub.LeaseOwner, &sub.LeaseUntil); err != nil {
		return sub, err
	}
	if err := eventstream.UnmarshalConfig([]byte(config), &sub); err != nil {
		return sub, err
	}
	if err := eventstream.UnmarshalStatus([]byte(status), &sub.Status); err != nil {
		return sub, err
	}
	sub.CreatedAt, sub.UpdatedAt, sub.LeaseUntil = sub.CreatedAt.UTC(), sub.UpdatedAt.UTC(), sub.LeaseUntil.UTC()
	if sub.LeaseUntil.Equal(esZero) {
		sub.LeaseUntil = time.Time{}
	}
	if len(sub.Auth.Sealed) == 0 {
		sub.Auth.Sealed = nil
	}
	return sub, nil
}

func leaseTime(t time.Time) time.Time {
	if t.IsZero() {
		return esZero
	}
	return t
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
	_, err = s.pool.Exec(ctx, `INSERT INTO eventstream_subscriptions (`+esSubCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		sub.TenantID, sub.ID, sub.Kind, sub.Endpoint, string(config), sub.Auth.Sealed, sub.CreatedAt, sub.UpdatedAt,
		sub.Cursor, string(status), sub.LeaseOwner, leaseTime(sub.LeaseUntil))
	return mapErr(err)
}

// GetSubscription implements eventstream.Store.
func (s *Store) GetSubscription(ctx context.Context, tenantID, id string) (eventstream.Subscription, error) {
	sub, err := scanSub(s.pool.QueryRow(ctx, `SELECT `+esSubCols+` FROM eventstream_subscriptions WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return eventstream.Subscription{}, notFound(err, "subscription")
	}
	return sub, nil
}

func collectSubs(rows pgx.Rows, err error) ([]eventstream.Subscription, error) {
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
	return collectSubs(s.pool.Query(ctx, `SELECT `+esSubCols+` FROM eventstream_subscriptions
		WHERE tenant_id = $1 AND kind = $2 AND id > $3 ORDER BY id LIMIT $4`, tenantID, kind, afterID, limit))
}

// UpdateSubscription implements eventstream.Store.
func (s *Store) UpdateSubscription(ctx context.Context, sub eventstream.Subscription, resume bool) error {
	config, err := eventstream.MarshalConfig(sub)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		var status string
		if err := tx.QueryRow(ctx, `SELECT status FROM eventstream_subscriptions WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, sub.TenantID, sub.ID).Scan(&status); err != nil {
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
		_, err := tx.Exec(ctx, `UPDATE eventstream_subscriptions SET config = $1, auth_sealed = $2, updated_at = $3, status = $4
			WHERE tenant_id = $5 AND id = $6`, string(config), sub.Auth.Sealed, sub.UpdatedAt, status, sub.TenantID, sub.ID)
		return err
	})
}

// DeleteSubscription implements eventstream.Store.
func (s *Store) DeleteSubscription(ctx context.Context, tenantID, kind, id string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM eventstream_subscriptions WHERE tenant_id = $1 AND kind = $2 AND id = $3`, tenantID, kind, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.E(fault.NotFound, "subscription not found")
		}
		_, err = tx.Exec(ctx, `DELETE FROM eventstream_dead_letters WHERE tenant_id = $1 AND subscription_id = $2`, tenantID, id)
		return err
	})
}

// ClaimSubscriptions implements eventstream.Store. Lapsed rows are locked
// with SKIP LOCKED, so concurrent claimers take disjoint sets.
func (s *Store) ClaimSubscriptions(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]eventstream.Subscription, error) {
	until := now.Add(leaseFor)
	var out []eventstream.Subscription
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE eventstream_subscriptions SET lease_until = $1 WHERE lease_owner = $2 AND lease_until > $3`, until, owner, now); err != nil {
			return err
		}
		if limit > 0 {
			if _, err := tx.Exec(ctx, `UPDATE eventstream_subscriptions SET lease_owner = $1, lease_until = $2
				WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM eventstream_subscriptions WHERE lease_until <= $3
					ORDER BY tenant_id, id LIMIT $4 FOR UPDATE SKIP LOCKED)`, owner, until, now, limit); err != nil {
				return err
			}
		}
		var err error
		out, err = collectSubs(tx.Query(ctx, `SELECT `+esSubCols+` FROM eventstream_subscriptions WHERE lease_owner = $1 AND lease_until > $2 ORDER BY tenant_id, id`, owner, now))
		return err
	})
	return out, err
}

// ReleaseSubscription implements eventstream.Store.
func (s *Store) ReleaseSubscription(ctx context.Context, tenantID, id, owner string) error {
	_, err := s.pool.Exec(ctx, `UPDATE eventstream_subscriptions SET lease_until = $1 WHERE tenant_id = $2 AND id = $3 AND lease_owner = $4`, esZero, tenantID, id, owner)
	return mapErr(err)
}

// RecordDelivery implements eventstream.Store.
func (s *Store) RecordDelivery(ctx context.Context, u eventstream.DeliveryUpdate) error {
	status, err := eventstream.MarshalStatus(u.Status)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		var (
			owner string
			until time.Time
		)
		if err := tx.QueryRow(ctx, `SELECT lease_owner, lease_until FROM eventstream_subscriptions WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, u.TenantID, u.SubscriptionID).Scan(&owner, &until); err != nil {
			return notFound(err, "subscription")
		}
		if owner != u.Owner || !until.After(u.Now) {
			return fault.E(fault.Conflict, "the delivery lease is not held")
		}
		if _, err := tx.Exec(ctx, `UPDATE eventstream_subscriptions SET done_seq = GREATEST(done_seq, $1), status = $2 WHERE tenant_id = $3 AND id = $4`,
			u.Cursor, string(status), u.TenantID, u.SubscriptionID); err != nil {
			return err
		}
		for _, d := range u.NewDeadLetters {
			if _, err := tx.Exec(ctx, `INSERT INTO eventstream_dead_letters
				(tenant_id, subscription_id, id, event_seq, event_type, body, attempts, last_error, created_at, requeued) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, false)
				ON CONFLICT (tenant_id, subscription_id, id) DO UPDATE SET event_seq = EXCLUDED.event_seq, event_type = EXCLUDED.event_type, body = EXCLUDED.body,
					attempts = EXCLUDED.attempts, last_error = EXCLUDED.last_error, created_at = EXCLUDED.created_at, requeued = false`,
				u.TenantID, u.SubscriptionID, d.ID, d.EventSeq, d.EventType, d.Body, d.Attempts, d.LastError, d.CreatedAt); err != nil {
				return err
			}
		}
		for _, id := range u.Redelivered {
			if _, err := tx.Exec(ctx, `DELETE FROM eventstream_dead_letters WHERE tenant_id = $1 AND subscription_id = $2 AND id = $3`, u.TenantID, u.SubscriptionID, id); err != nil {
				return err
			}
		}
		for _, d := range u.Redead {
			if _, err := tx.Exec(ctx, `UPDATE eventstream_dead_letters SET attempts = $1, last_error = $2, requeued = false
				WHERE tenant_id = $3 AND subscription_id = $4 AND id = $5`, d.Attempts, d.LastError, u.TenantID, u.SubscriptionID, d.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListDeadLetters implements eventstream.Store.
func (s *Store) ListDeadLetters(ctx context.Context, tenantID, subscriptionID, afterID string, requeuedOnly bool, limit int) ([]eventstream.DeadLetter, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, subscription_id, id, event_seq, event_type, body, attempts, last_error, created_at, requeued
		FROM eventstream_dead_letters WHERE tenant_id = $1 AND subscription_id = $2 AND id > $3 AND (requeued OR NOT $4)
		ORDER BY id LIMIT $5`, tenantID, subscriptionID, afterID, requeuedOnly, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []eventstream.DeadLetter
	for rows.Next() {
		var d eventstream.DeadLetter
		if err := rows.Scan(&d.TenantID, &d.SubscriptionID, &d.ID, &d.EventSeq, &d.EventType, &d.Body, &d.Attempts, &d.LastError, &d.CreatedAt, &d.Requeued); err != nil {
			return nil, mapErr(err)
		}
		d.CreatedAt = d.CreatedAt.UTC()
		out = append(out, d)
	}
	return out, mapErr(rows.Err())
}

// RequeueDeadLetters implements eventstream.Store.
func (s *Store) RequeueDeadLetters(ctx context.Context, tenantID, subscriptionID string, ids []string) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE eventstream_dead_letters SET requeued = true
		WHERE tenant_id = $1 AND subscription_id = $2 AND (coalesce(cardinality($3::text[]), 0) = 0 OR id = ANY($3))`, tenantID, subscriptionID, ids)
	if err != nil {
		return 0, mapErr(err)
	}
	return int(tag.RowsAffected()), nil
}
