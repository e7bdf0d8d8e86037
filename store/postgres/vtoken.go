package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vtoken"
)

var _ vtoken.Store = (*Store)(nil)

// nullTime stores the zero time (no lock) as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// GetExchangeKey implements vtoken.Store.
func (s *Store) GetExchangeKey(ctx context.Context, tenantID string) ([]byte, error) {
	var k []byte
	err := s.pool.QueryRow(ctx, `SELECT sealed FROM vtoken_exchange_keys WHERE tenant_id = $1`, tenantID).Scan(&k)
	return k, notFound(err, "exchange key")
}

// PutExchangeKey implements vtoken.Store: ON CONFLICT DO NOTHING keeps the
// first key, read back afterwards (a row once stored never changes).
func (s *Store) PutExchangeKey(ctx context.Context, tenantID string, sealed []byte) ([]byte, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO vtoken_exchange_keys (tenant_id, sealed) VALUES ($1, $2) ON CONFLICT (tenant_id) DO NOTHING`, tenantID, sealed); err != nil {
		return nil, mapErr(err)
	}
	return s.GetExchangeKey(ctx, tenantID)
}

const vtokenCols = `tenant_id, user_id, id, label, version, max_key_size, state, user_pin_hash, user_failures, user_locked_until,
	admin_pin_hash, admin_failures, admin_locked_until, created_at, updated_at`

const tokenSelect = `SELECT ` + vtokenCols + `, (SELECT count(*) FROM vtoken_certificates c WHERE c.tenant_id = t.tenant_id AND c.token_id = t.id)
	FROM vtoken_tokens t`

func scanToken(row pgx.Row) (vtoken.Token, error) {
	var (
		t            vtoken.Token
		version      string
		ulock, alock *time.Time
		count        int64
	)
	if err := row.Scan(&t.TenantID, &t.UserID, &t.ID, &t.Label, &version, &t.MaxKeySize, &t.State, &t.User.Hash, &t.User.Failures, &ulock,
		&t.Admin.Hash, &t.Admin.Failures, &alock, &t.CreatedAt, &t.UpdatedAt, &count); err != nil {
		return vtoken.Token{}, notFound(err, "token")
	}
	t.Version = vtoken.Version(version)
	t.User.LockedUntil, t.Admin.LockedUntil = fromNullTime(ulock), fromNullTime(alock)
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	t.CertificateCount = int(count)
	return t, nil
}

// CreateToken implements vtoken.Store. A transaction-scoped advisory lock
// on the user serialises concurrent creates, so the limit holds.
func (s *Store) CreateToken(ctx context.Context, t vtoken.Token, maxPerUser int) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "vtoken:"+t.TenantID+"/"+t.UserID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM vtoken_tokens WHERE tenant_id = $1 AND user_id = $2`, t.TenantID, t.UserID).Scan(&n); err != nil {
			return err
		}
		if n >= maxPerUser {
			return fault.E(fault.Conflict, "too many tokens")
		}
		_, err := tx.Exec(ctx, `INSERT INTO vtoken_tokens (`+vtokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			t.TenantID, t.UserID, t.ID, t.Label, string(t.Version), t.MaxKeySize, t.State, t.User.Hash, t.User.Failures, nullTime(t.User.LockedUntil),
			t.Admin.Hash, t.Admin.Failures, nullTime(t.Admin.LockedUntil), t.CreatedAt, t.UpdatedAt)
		return err
	})
}

// GetToken implements vtoken.Store.
func (s *Store) GetToken(ctx context.Context, tenantID, userID, id string) (vtoken.Token, error) {
	return scanToken(s.pool.QueryRow(ctx, tokenSelect+` WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.id = $3`, tenantID, userID, id))
}

// ListTokens implements vtoken.Store.
func (s *Store) ListTokens(ctx context.Context, tenantID, userID string) ([]vtoken.Token, error) {
	rows, err := s.pool.Query(ctx, tokenSelect+` WHERE t.tenant_id = $1 AND t.user_id = $2 ORDER BY t.created_at, t.id`, tenantID, userID)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []vtoken.Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, mapErr(rows.Err())
}

// UpdateToken implements vtoken.Store: the row is locked (FOR UPDATE)
// from the read to the write.
func (s *Store) UpdateToken(ctx context.Context, tenantID, userID, id string, fn func(*vtoken.Token) error) (vtoken.Token, error) {
	var out vtoken.Token
	err := s.tx(ctx, func(tx pgx.Tx) error {
		t, err := scanToken(tx.QueryRow(ctx, tokenSelect+` WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.id = $3 FOR UPDATE OF t`, tenantID, userID, id))
		if err != nil {
			return err
		}
		n := t
		if err := fn(&n); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE vtoken_tokens SET label = $1, state = $2, user_pin_hash = $3, user_failures = $4, user_locked_until = $5,
			admin_pin_hash = $6, admin_failures = $7, admin_locked_until = $8, updated_at = $9 WHERE tenant_id = $10 AND id = $11`,
			n.Label, n.State, n.User.Hash, n.User.Failures, nullTime(n.User.LockedUntil), n.Admin.Hash, n.Admin.Failures,
			nullTime(n.Admin.LockedUntil), n.UpdatedAt, tenantID, id)
		t.Label, t.State, t.User, t.Admin, t.UpdatedAt = n.Label, n.State, n.User, n.Admin, n.UpdatedAt
		out = t
		return err
	})
	if err != nil {
		return vtoken.Token{}, err
	}
	return out, nil
}

// DeleteToken implements vtoken.Store.
func (s *Store) DeleteToken(ctx context.Context, tenantID, userID, id string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM vtoken_tokens WHERE tenant_id = $1 AND user_id = $2 AND id = $3`, tenantID, userID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.E(fault.NotFound, "token not found")
		}
		_, err = tx.Exec(ctx, `DELETE FROM vtoken_certificates WHERE tenant_id = $1 AND token_id = $2`, tenantID, id)
		return err
	})
}

// AddCertificates implements vtoken.Store; the token row is locked so a
// concurrent Complete cannot slip between the check and the inserts.
func (s *Store) AddCertificates(ctx context.Context, tenantID, userID, tokenID string, certs []vtoken.Certificate, now time.Time) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		var state string
		err := tx.QueryRow(ctx, `SELECT state FROM vtoken_tokens WHERE tenant_id = $1 AND user_id = $2 AND id = $3 FOR UPDATE`, tenantID, userID, tokenID).Scan(&state)
		if err != nil {
			return notFound(err, "token")
		}
		if state == vtoken.StateComplete {
			return fault.E(fault.Conflict, "token is complete")
		}
		for _, c := range certs {
			_, err := tx.Exec(ctx, `INSERT INTO vtoken_certificates (tenant_id, token_id, thumbprint, serial_number, subject, issuer,
				not_before, not_after, key_algorithm, key_size, der, private_key, position, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
				ON CONFLICT (tenant_id, token_id, thumbprint) DO UPDATE SET serial_number = EXCLUDED.serial_number, subject = EXCLUDED.subject,
				issuer = EXCLUDED.issuer, not_before = EXCLUDED.not_before, not_after = EXCLUDED.not_after, key_algorithm = EXCLUDED.key_algorithm,
				key_size = EXCLUDED.key_size, der = EXCLUDED.der, private_key = EXCLUDED.private_key, position = EXCLUDED.position,
				created_at = EXCLUDED.created_at`,
				tenantID, tokenID, c.Thumbprint, c.SerialNumber, c.Subject, c.Issuer, c.NotBefore, c.NotAfter, c.KeyAlgorithm, c.KeySize,
				c.DER, c.PrivateKey, c.Position, c.CreatedAt)
			if err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE vtoken_tokens SET updated_at = $1 WHERE tenant_id = $2 AND id = $3`, now, tenantID, tokenID)
		return err
	})
}

// ListCertificates implements vtoken.Store, in one read-only snapshot.
func (s *Store) ListCertificates(ctx context.Context, tenantID, userID, tokenID string) ([]vtoken.Certificate, error) {
	var out []vtoken.Certificate
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM vtoken_tokens WHERE tenant_id = $1 AND user_id = $2 AND id = $3`, tenantID, userID, tokenID).Scan(&one); err != nil {
			return notFound(err, "token")
		}
		rows, err := tx.Query(ctx, `SELECT tenant_id, token_id, thumbprint, serial_number, subject, issuer, not_before, not_after, key_algorithm,
			key_size, der, private_key, position, created_at FROM vtoken_certificates WHERE tenant_id = $1 AND token_id = $2
			ORDER BY created_at, position, thumbprint`, tenantID, tokenID)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []vtoken.Certificate{}
		for rows.Next() {
			var c vtoken.Certificate
			if err := rows.Scan(&c.TenantID, &c.TokenID, &c.Thumbprint, &c.SerialNumber, &c.Subject, &c.Issuer, &c.NotBefore, &c.NotAfter,
				&c.KeyAlgorithm, &c.KeySize, &c.DER, &c.PrivateKey, &c.Position, &c.CreatedAt); err != nil {
				return err
			}
			c.NotBefore, c.NotAfter, c.CreatedAt = c.NotBefore.UTC(), c.NotAfter.UTC(), c.CreatedAt.UTC()
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}
