package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vtoken"
)

var _ vtoken.Store = (*Store)(nil)

// zeroMicros stores the zero time (no lock) as 0.
func zeroMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

func fromZeroMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromMicros(v)
}

// GetExchangeKey implements vtoken.Store.
func (s *Store) GetExchangeKey(ctx context.Context, tenantID string) ([]byte, error) {
	var k []byte
	err := s.queryRow(ctx, `SELECT sealed FROM vtoken_exchange_keys WHERE tenant_id = ?`, tenantID).Scan(&k)
	return k, notFound(err, "exchange key")
}

// PutExchangeKey implements vtoken.Store: INSERT OR IGNORE keeps the
// first key, which is then read back in the same transaction.
func (s *Store) PutExchangeKey(ctx context.Context, tenantID string, sealed []byte) ([]byte, error) {
	var k []byte
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO vtoken_exchange_keys (tenant_id, sealed) VALUES (?, ?)`, tenantID, sealed); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT sealed FROM vtoken_exchange_keys WHERE tenant_id = ?`, tenantID).Scan(&k)
	})
	return k, err
}

const vtokenCols = `tenant_id, user_id, id, label, version, max_key_size, state, user_pin_hash, user_failures, user_locked_until,
	admin_pin_hash, admin_failures, admin_locked_until, created_at, updated_at`

// tokenSelect reads a token and its certificate count.
const tokenSelect = `SELECT ` + vtokenCols + `, (SELECT count(*) FROM vtoken_certificates c WHERE c.tenant_id = t.tenant_id AND c.token_id = t.id)
	FROM vtoken_tokens t`

func scanToken(row interface{ Scan(...any) error }) (vtoken.Token, error) {
	var (
		t                vtoken.Token
		version          string
		ulock, alock     int64
		created, updated int64
	)
	if err := row.Scan(&t.TenantID, &t.UserID, &t.ID, &t.Label, &version, &t.MaxKeySize, &t.State, &t.User.Hash, &t.User.Failures, &ulock,
		&t.Admin.Hash, &t.Admin.Failures, &alock, &created, &updated, &t.CertificateCount); err != nil {
		return vtoken.Token{}, notFound(err, "token")
	}
	t.Version = vtoken.Version(version)
	t.User.LockedUntil, t.Admin.LockedUntil = fromZeroMicros(ulock), fromZeroMicros(alock)
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(updated)
	return t, nil
}

// CreateToken implements vtoken.Store. The count and the insert share the
// write transaction (SQLite has one writer), so the limit holds under
// concurrent creates.
func (s *Store) CreateToken(ctx context.Context, t vtoken.Token, maxPerUser int) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM vtoken_tokens WHERE tenant_id = ? AND user_id = ?`, t.TenantID, t.UserID).Scan(&n); err != nil {
			return err
		}
		if n >= maxPerUser {
			return fault.E(fault.Conflict, "too many tokens")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO vtoken_tokens (`+vtokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.TenantID, t.UserID, t.ID, t.Label, string(t.Version), t.MaxKeySize, t.State, t.User.Hash, t.User.Failures, zeroMicros(t.User.LockedUntil),
			t.Admin.Hash, t.Admin.Failures, zeroMicros(t.Admin.LockedUntil), micros(t.CreatedAt), micros(t.UpdatedAt))
		return err
	})
}

// GetToken implements vtoken.Store.
func (s *Store) GetToken(ctx context.Context, tenantID, userID, id string) (vtoken.Token, error) {
	return scanToken(s.queryRow(ctx, tokenSelect+` WHERE t.tenant_id = ? AND t.user_id = ? AND t.id = ?`, tenantID, userID, id))
}

// ListTokens implements vtoken.Store.
func (s *Store) ListTokens(ctx context.Context, tenantID, userID string) ([]vtoken.Token, error) {
	rows, err := s.query(ctx, tokenSelect+` WHERE t.tenant_id = ? AND t.user_id = ? ORDER BY t.created_at, t.id`, tenantID, userID)
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

// UpdateToken implements vtoken.Store in one write transaction.
func (s *Store) UpdateToken(ctx context.Context, tenantID, userID, id string, fn func(*vtoken.Token) error) (vtoken.Token, error) {
	var out vtoken.Token
	err := s.tx(ctx, func(tx *sql.Tx) error {
		t, err := scanToken(tx.QueryRowContext(ctx, tokenSelect+` WHERE t.tenant_id = ? AND t.user_id = ? AND t.id = ?`, tenantID, userID, id))
		if err != nil {
			return err
		}
		n := t
		if err := fn(&n); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE vtoken_tokens SET label = ?, state = ?, user_pin_hash = ?, user_failures = ?, user_locked_until = ?,
			admin_pin_hash = ?, admin_failures = ?, admin_locked_until = ?, updated_at = ? WHERE tenant_id = ? AND id = ?`,
			n.Label, n.State, n.User.Hash, n.User.Failures, zeroMicros(n.User.LockedUntil), n.Admin.Hash, n.Admin.Failures,
			zeroMicros(n.Admin.LockedUntil), micros(n.UpdatedAt), tenantID, id)
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
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM vtoken_tokens WHERE tenant_id = ? AND user_id = ? AND id = ?`, tenantID, userID, id)
		if err := affected(res, err, "token"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM vtoken_certificates WHERE tenant_id = ? AND token_id = ?`, tenantID, id)
		return err
	})
}

// AddCertificates implements vtoken.Store.
func (s *Store) AddCertificates(ctx context.Context, tenantID, userID, tokenID string, certs []vtoken.Certificate, now time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var state string
		err := tx.QueryRowContext(ctx, `SELECT state FROM vtoken_tokens WHERE tenant_id = ? AND user_id = ? AND id = ?`, tenantID, userID, tokenID).Scan(&state)
		if err != nil {
			return notFound(err, "token")
		}
		if state == vtoken.StateComplete {
			return fault.E(fault.Conflict, "token is complete")
		}
		for _, c := range certs {
			_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO vtoken_certificates (tenant_id, token_id, thumbprint, serial_number, subject, issuer,
				not_before, not_after, key_algorithm, key_size, der, private_key, position, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				tenantID, tokenID, c.Thumbprint, c.SerialNumber, c.Subject, c.Issuer, micros(c.NotBefore), micros(c.NotAfter), c.KeyAlgorithm, c.KeySize,
				c.DER, c.PrivateKey, c.Position, micros(c.CreatedAt))
			if err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE vtoken_tokens SET updated_at = ? WHERE tenant_id = ? AND id = ?`, micros(now), tenantID, tokenID)
		return err
	})
}

// ListCertificates implements vtoken.Store. The token check and the read
// share one read transaction.
func (s *Store) ListCertificates(ctx context.Context, tenantID, userID, tokenID string) ([]vtoken.Certificate, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, mapErr(err)
	}
	defer tx.Rollback()
	var one int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM vtoken_tokens WHERE tenant_id = ? AND user_id = ? AND id = ?`, tenantID, userID, tokenID).Scan(&one); err != nil {
		return nil, notFound(err, "token")
	}
	rows, err := tx.QueryContext(ctx, `SELECT tenant_id, token_id, thumbprint, serial_number, subject, issuer, not_before, not_after, key_algorithm,
		key_size, der, private_key, position, created_at FROM vtoken_certificates WHERE tenant_id = ? AND token_id = ?
		ORDER BY created_at, position, thumbprint`, tenantID, tokenID)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []vtoken.Certificate{}
	for rows.Next() {
		var (
			c               vtoken.Certificate
			nb, na, created int64
		)
		if err := rows.Scan(&c.TenantID, &c.TokenID, &c.Thumbprint, &c.SerialNumber, &c.Subject, &c.Issuer, &nb, &na, &c.KeyAlgorithm,
			&c.KeySize, &c.DER, &c.PrivateKey, &c.Position, &created); err != nil {
			return nil, mapErr(err)
		}
		c.NotBefore, c.NotAfter, c.CreatedAt = fromMicros(nb), fromMicros(na), fromMicros(created)
		out = append(out, c)
	}
	return out, mapErr(rows.Err())
}
