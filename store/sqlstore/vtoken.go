package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vtoken"
)

var _ vtoken.Store = (*Store)(nil)

// GetExchangeKey implements vtoken.Store.
func (s *Store) GetExchangeKey(ctx context.Context, tenantID string) ([]byte, error) {
	var k []byte
	err := s.c.Read().QueryRow(ctx, `SELECT sealed FROM vtoken_exchange_keys WHERE tenant_id = $1`, tenantID).Scan(&k)
	return k, s.notFound(err, "exchange key")
}

// PutExchangeKey implements vtoken.Store: ON CONFLICT DO NOTHING keeps the
// first key, read back afterwards (a row once stored never changes).
func (s *Store) PutExchangeKey(ctx context.Context, tenantID string, sealed []byte) ([]byte, error) {
	if err := s.exec(ctx, `INSERT INTO vtoken_exchange_keys (tenant_id, sealed) VALUES ($1, $2) ON CONFLICT (tenant_id) DO NOTHING`, tenantID, sealed); err != nil {
		return nil, err
	}
	return s.GetExchangeKey(ctx, tenantID)
}

const (
	vtokenCols = `tenant_id, user_id, id, label, version, max_key_size, state, user_pin_hash, user_failures, user_locked_until,
	admin_pin_hash, admin_failures, admin_locked_until, created_at, updated_at`
	// tokenSelect reads a token and its certificate count.
	tokenSelect = `SELECT ` + vtokenCols + `, (SELECT count(*) FROM vtoken_certificates c WHERE c.tenant_id = t.tenant_id AND c.token_id = t.id)
	FROM vtoken_tokens t`
	certCols = `tenant_id, token_id, thumbprint, serial_number, subject, issuer, not_before, not_after, key_algorithm, key_size, der, private_key, position, created_at`
)

func (s *Store) scanToken(row Row) (vtoken.Token, error) {
	var (
		t            vtoken.Token
		version      string
		ulock, alock *time.Time
	)
	if err := row.Scan(&t.TenantID, &t.UserID, &t.ID, &t.Label, &version, &t.MaxKeySize, &t.State, &t.User.Hash, &t.User.Failures, &ulock,
		&t.Admin.Hash, &t.Admin.Failures, &alock, &t.CreatedAt, &t.UpdatedAt, &t.CertificateCount); err != nil {
		return vtoken.Token{}, s.notFound(err, "token")
	}
	t.Version = vtoken.Version(version)
	t.User.LockedUntil, t.Admin.LockedUntil = orZero(ulock), orZero(alock)
	return t, nil
}

// CreateToken implements vtoken.Store. Concurrent creates for one user are
// serialised (Dialect.LockKey; SQLite has one writer), so the count and
// the insert agree and the limit holds.
func (s *Store) CreateToken(ctx context.Context, t vtoken.Token, maxPerUser int) error {
	return s.c.Tx(ctx, func(q Querier) error {
		if s.d.LockKey != "" {
			if _, err := q.Exec(ctx, s.d.LockKey, "vtoken:"+t.TenantID+"/"+t.UserID); err != nil {
				return err
			}
		}
		var n int
		if err := q.QueryRow(ctx, `SELECT count(*) FROM vtoken_tokens WHERE tenant_id = $1 AND user_id = $2`, t.TenantID, t.UserID).Scan(&n); err != nil {
			return err
		}
		if n >= maxPerUser {
			return fault.E(fault.Conflict, "too many tokens")
		}
		_, err := q.Exec(ctx, `INSERT INTO vtoken_tokens (`+vtokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			t.TenantID, t.UserID, t.ID, t.Label, string(t.Version), t.MaxKeySize, t.State, t.User.Hash, t.User.Failures, optTime(t.User.LockedUntil),
			t.Admin.Hash, t.Admin.Failures, optTime(t.Admin.LockedUntil), t.CreatedAt, t.UpdatedAt)
		return err
	})
}

// GetToken implements vtoken.Store.
func (s *Store) GetToken(ctx context.Context, tenantID, userID, id string) (vtoken.Token, error) {
	return s.scanToken(s.c.Read().QueryRow(ctx, tokenSelect+` WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.id = $3`, tenantID, userID, id))
}

// ListTokens implements vtoken.Store.
func (s *Store) ListTokens(ctx context.Context, tenantID, userID string) ([]vtoken.Token, error) {
	return nonNil(list(ctx, s, s.c.Read(), s.scanToken, tokenSelect+` WHERE t.tenant_id = $1 AND t.user_id = $2 ORDER BY t.created_at, t.id`, tenantID, userID))
}

// UpdateToken implements vtoken.Store: the row is locked from the read to
// the write.
func (s *Store) UpdateToken(ctx context.Context, tenantID, userID, id string, fn func(*vtoken.Token) error) (vtoken.Token, error) {
	var out vtoken.Token
	err := s.c.Tx(ctx, func(q Querier) error {
		lock := ""
		if s.d.ForUpdate != "" {
			lock = s.d.ForUpdate + ` OF t`
		}
		t, err := s.scanToken(q.QueryRow(ctx, tokenSelect+` WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.id = $3`+lock, tenantID, userID, id))
		if err != nil {
			return err
		}
		n := t
		if err := fn(&n); err != nil {
			return err
		}
		_, err = q.Exec(ctx, `UPDATE vtoken_tokens SET label = $1, state = $2, user_pin_hash = $3, user_failures = $4, user_locked_until = $5,
			admin_pin_hash = $6, admin_failures = $7, admin_locked_until = $8, updated_at = $9 WHERE tenant_id = $10 AND id = $11`,
			n.Label, n.State, n.User.Hash, n.User.Failures, optTime(n.User.LockedUntil), n.Admin.Hash, n.Admin.Failures,
			optTime(n.Admin.LockedUntil), n.UpdatedAt, tenantID, id)
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
	return s.deleteWith(ctx, "token", `DELETE FROM vtoken_tokens WHERE tenant_id = $1 AND user_id = $2 AND id = $3`, []any{tenantID, userID, id},
		`DELETE FROM vtoken_certificates WHERE tenant_id = $1 AND token_id = $2`, tenantID, id)
}

// AddCertificates implements vtoken.Store; the token row is locked so a
// concurrent Complete cannot slip between the check and the inserts.
func (s *Store) AddCertificates(ctx context.Context, tenantID, userID, tokenID string, certs []vtoken.Certificate, now time.Time) error {
	return s.c.Tx(ctx, func(q Querier) error {
		var state string
		err := q.QueryRow(ctx, `SELECT state FROM vtoken_tokens WHERE tenant_id = $1 AND user_id = $2 AND id = $3`+s.d.ForUpdate, tenantID, userID, tokenID).Scan(&state)
		if err != nil {
			return s.notFound(err, "token")
		}
		if state == vtoken.StateComplete {
			return fault.E(fault.Conflict, "token is complete")
		}
		b := &Batch{}
		for _, c := range certs {
			b.Exec(nil, `INSERT INTO vtoken_certificates (`+certCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
				ON CONFLICT (tenant_id, token_id, thumbprint) DO UPDATE SET serial_number = excluded.serial_number, subject = excluded.subject,
				issuer = excluded.issuer, not_before = excluded.not_before, not_after = excluded.not_after, key_algorithm = excluded.key_algorithm,
				key_size = excluded.key_size, der = excluded.der, private_key = excluded.private_key, position = excluded.position,
				created_at = excluded.created_at`,
				tenantID, tokenID, c.Thumbprint, c.SerialNumber, c.Subject, c.Issuer, c.NotBefore, c.NotAfter, c.KeyAlgorithm, c.KeySize,
				c.DER, c.PrivateKey, c.Position, c.CreatedAt)
		}
		b.Exec(nil, `UPDATE vtoken_tokens SET updated_at = $1 WHERE tenant_id = $2 AND id = $3`, now, tenantID, tokenID)
		return q.Batch(ctx, b)
	})
}

// ListCertificates implements vtoken.Store: the token check and the read
// in one snapshot.
func (s *Store) ListCertificates(ctx context.Context, tenantID, userID, tokenID string) ([]vtoken.Certificate, error) {
	var out []vtoken.Certificate
	b := &Batch{}
	b.QueryRow(func(row Row) error {
		var one int
		return s.notFound(row.Scan(&one), "token")
	}, `SELECT 1 FROM vtoken_tokens WHERE tenant_id = $1 AND user_id = $2 AND id = $3`, tenantID, userID, tokenID)
	b.Query(func(rows Rows) (err error) {
		out, err = appendRows(nil, rows, func(row Row) (vtoken.Certificate, error) {
			var c vtoken.Certificate
			err := row.Scan(&c.TenantID, &c.TokenID, &c.Thumbprint, &c.SerialNumber, &c.Subject, &c.Issuer, &c.NotBefore, &c.NotAfter,
				&c.KeyAlgorithm, &c.KeySize, &c.DER, &c.PrivateKey, &c.Position, &c.CreatedAt)
			return c, err
		})
		return err
	}, `SELECT `+certCols+` FROM vtoken_certificates WHERE tenant_id = $1 AND token_id = $2 ORDER BY created_at, position, thumbprint`, tenantID, tokenID)
	if err := s.c.Read().Batch(ctx, b); err != nil {
		return nil, s.c.MapErr(err)
	}
	return nonNil(out, nil)
}
