package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/oidc"
)

var _ oidc.Store = (*Store)(nil)

// noTime is "no time" as a bound argument: NULL on PostgreSQL, 0 where a
// Conn stores none as 0 (SQLite), so "IS NULL OR = noTime" means unset
// on both.
var noTime *time.Time

// The OpenID Provider's codes, refresh tokens and browser sessions. Each
// create also sweeps the expired rows of its table (an index on
// expires_at keeps that cheap), so no worker is needed.

const oidcCodeCols = `hash, grant_id, client_id, tenant_id, user_id, redirect_uri, challenge, scope, nonce, sid, amr, auth_time, created_at, expires_at, used_at, acr, dpop_jkt, idp`

// CreateAuthCode implements oidc.Store.
func (s *Store) CreateAuthCode(ctx context.Context, c oidc.AuthCode) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM oidc_codes WHERE expires_at < $1`, c.CreatedAt.Add(-oidc.CodeRetention))
		b.Exec(nil, `INSERT INTO oidc_codes (`+oidcCodeCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
			c.Hash, c.GrantID, c.ClientID, c.TenantID, c.UserID[:], c.RedirectURI, c.Challenge, c.Scope, c.Nonce, c.SID,
			append([]string{}, c.AMR...), c.AuthTime, c.CreatedAt, c.ExpiresAt, c.UsedAt, c.ACR, c.DPoPJKT, c.IDP)
		return q.Batch(ctx, b)
	})
}

func (s *Store) scanAuthCode(row Row) (oidc.AuthCode, error) {
	var (
		c   oidc.AuthCode
		uid []byte
	)
	err := row.Scan(&c.Hash, &c.GrantID, &c.ClientID, &c.TenantID, &uid, &c.RedirectURI, &c.Challenge, &c.Scope, &c.Nonce, &c.SID,
		&c.AMR, &c.AuthTime, &c.CreatedAt, &c.ExpiresAt, &c.UsedAt, &c.ACR, &c.DPoPJKT, &c.IDP)
	if err != nil {
		return oidc.AuthCode{}, s.notFound(err, "authorization code")
	}
	copy(c.UserID[:], uid)
	return c, nil
}

// TakeAuthCode implements oidc.Store. The first use is one UPDATE ...
// RETURNING that only an unused row matches, so of concurrent callers
// (in any process) exactly one gets the row; the others, and every later
// caller, read it used.
func (s *Store) TakeAuthCode(ctx context.Context, hash []byte, now time.Time) (oidc.AuthCode, error) {
	return takeOnce(ctx, s, s.scanAuthCode, "oidc_codes", oidcCodeCols, hash, now, func(c *oidc.AuthCode) { c.UsedAt = nil })
}

// takeOnce marks the row of table with hash used at now and returns it as
// it was, unused, to the one caller whose UPDATE matched it; every other
// caller gets the row as stored, used. unused empties the used time of a
// scanned row.
func takeOnce[T any](ctx context.Context, s *Store, scan func(Row) (T, error), table, cols string, hash []byte, now time.Time, unused func(*T)) (T, error) {
	v, err := scan(s.c.Write().QueryRow(ctx, `UPDATE `+table+` SET used_at = $1 WHERE hash = $2 AND (used_at IS NULL OR used_at = $3)
		RETURNING `+cols, now, hash, noTime))
	if err == nil {
		unused(&v) // as it was before this call
		return v, nil
	}
	if !fault.Is(fault.NotFound, err) {
		return v, err
	}
	return scan(s.c.Read().QueryRow(ctx, `SELECT `+cols+` FROM `+table+` WHERE hash = $1`, hash))
}

const oidcRefreshCols = `hash, grant_id, client_id, tenant_id, user_id, scope, sid, amr, auth_time, access_jti, created_at, expires_at, used_at, acr, dpop_jkt, idp`

// CreateOIDCRefreshToken implements oidc.Store.
func (s *Store) CreateOIDCRefreshToken(ctx context.Context, t oidc.RefreshToken) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM oidc_refresh_tokens WHERE expires_at < $1`, t.CreatedAt)
		b.Exec(nil, `INSERT INTO oidc_refresh_tokens (`+oidcRefreshCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
			t.Hash, t.GrantID, t.ClientID, t.TenantID, t.UserID[:], t.Scope, t.SID, append([]string{}, t.AMR...), t.AuthTime, t.AccessJTI,
			t.CreatedAt, t.ExpiresAt, t.UsedAt, t.ACR, t.DPoPJKT, t.IDP)
		return q.Batch(ctx, b)
	})
}

func (s *Store) scanOIDCRefresh(row Row) (oidc.RefreshToken, error) {
	var (
		t   oidc.RefreshToken
		uid []byte
	)
	err := row.Scan(&t.Hash, &t.GrantID, &t.ClientID, &t.TenantID, &uid, &t.Scope, &t.SID, &t.AMR, &t.AuthTime, &t.AccessJTI,
		&t.CreatedAt, &t.ExpiresAt, &t.UsedAt, &t.ACR, &t.DPoPJKT, &t.IDP)
	if err != nil {
		return oidc.RefreshToken{}, s.notFound(err, "refresh token")
	}
	copy(t.UserID[:], uid)
	return t, nil
}

// TakeOIDCRefreshToken implements oidc.Store, as TakeAuthCode.
func (s *Store) TakeOIDCRefreshToken(ctx context.Context, hash []byte, now time.Time) (oidc.RefreshToken, error) {
	return takeOnce(ctx, s, s.scanOIDCRefresh, "oidc_refresh_tokens", oidcRefreshCols, hash, now, func(t *oidc.RefreshToken) { t.UsedAt = nil })
}

// GetOIDCRefreshToken implements oidc.Store.
func (s *Store) GetOIDCRefreshToken(ctx context.Context, hash []byte) (oidc.RefreshToken, error) {
	return s.scanOIDCRefresh(s.c.Read().QueryRow(ctx, `SELECT `+oidcRefreshCols+` FROM oidc_refresh_tokens WHERE hash = $1`, hash))
}

// RevokeOIDCGrant implements oidc.Store.
func (s *Store) RevokeOIDCGrant(ctx context.Context, grantID string, now time.Time) ([]oidc.RefreshToken, error) {
	var out []oidc.RefreshToken
	err := s.c.Tx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `UPDATE oidc_refresh_tokens SET used_at = $1 WHERE grant_id = $2 AND (used_at IS NULL OR used_at = $3)`, now, grantID, noTime); err != nil {
			return err
		}
		var err error
		out, err = list(ctx, s, q, s.scanOIDCRefresh, `SELECT `+oidcRefreshCols+` FROM oidc_refresh_tokens WHERE grant_id = $1 ORDER BY created_at, hash`, grantID)
		return err
	})
	return out, s.c.MapErr(err)
}

const oidcSessionCols = `id_hash, sid, tenant_id, user_id, user_name, amr, auth_time, created_at, expires_at, acr, idp`

// CreateOIDCSession implements oidc.Store.
func (s *Store) CreateOIDCSession(ctx context.Context, o oidc.Session) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM oidc_sessions WHERE expires_at < $1`, o.CreatedAt)
		b.Exec(nil, `INSERT INTO oidc_sessions (`+oidcSessionCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			o.IDHash, o.SID, o.TenantID, o.UserID[:], o.UserName, append([]string{}, o.AMR...), o.AuthTime, o.CreatedAt, o.ExpiresAt, o.ACR, o.IDP)
		return q.Batch(ctx, b)
	})
}

// GetOIDCSession implements oidc.Store.
func (s *Store) GetOIDCSession(ctx context.Context, idHash []byte) (oidc.Session, error) {
	var (
		o   oidc.Session
		uid []byte
	)
	err := s.c.Read().QueryRow(ctx, `SELECT `+oidcSessionCols+` FROM oidc_sessions WHERE id_hash = $1`, idHash).
		Scan(&o.IDHash, &o.SID, &o.TenantID, &uid, &o.UserName, &o.AMR, &o.AuthTime, &o.CreatedAt, &o.ExpiresAt, &o.ACR, &o.IDP)
	if err != nil {
		return oidc.Session{}, s.notFound(err, "session")
	}
	copy(o.UserID[:], uid)
	return o, nil
}

// DeleteOIDCSession implements oidc.Store.
func (s *Store) DeleteOIDCSession(ctx context.Context, idHash []byte) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM oidc_sessions WHERE id_hash = $1`, idHash)
	return s.affected(n, err, "session")
}
