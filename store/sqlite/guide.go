package sqlite

import (
	"context"
	"encoding/json"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/guide"
)

var _ guide.Store = (*Store)(nil)

const guideSessionCols = `id_hash, tenant_id, user_id, user_name, method, csrf_token, login_at, last_activity, last_seen, expires_at`

// CreateGuideSession implements guide.Store; the primary key id_hash makes a
// duplicate a Conflict.
func (s *Store) CreateGuideSession(ctx context.Context, g guide.Session) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO guide_sessions (`+guideSessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		g.IDHash, g.TenantID, g.UserID[:], g.UserName, g.Method, g.CSRFToken,
		micros(g.LoginAt), micros(g.LastActivity), micros(g.LastSeen), micros(g.ExpiresAt))
	return mapErr(err)
}

func scanGuideSession(row interface{ Scan(...any) error }) (guide.Session, error) {
	var (
		g                              guide.Session
		uid                            []byte
		login, activity, seen, expires int64
	)
	if err := row.Scan(&g.IDHash, &g.TenantID, &uid, &g.UserName, &g.Method, &g.CSRFToken, &login, &activity, &seen, &expires); err != nil {
		return guide.Session{}, notFound(err, "guide session")
	}
	if len(uid) != len(g.UserID) {
		return guide.Session{}, fault.E(fault.Internal, "stored guide session has a malformed user id")
	}
	copy(g.UserID[:], uid)
	g.LoginAt, g.LastActivity, g.LastSeen, g.ExpiresAt = fromMicros(login), fromMicros(activity), fromMicros(seen), fromMicros(expires)
	return g, nil
}

// GetGuideSession implements guide.Store.
func (s *Store) GetGuideSession(ctx context.Context, idHash []byte) (guide.Session, error) {
	return scanGuideSession(s.queryRow(ctx, `SELECT `+guideSessionCols+` FROM guide_sessions WHERE id_hash = ?`, idHash))
}

// TouchGuideSession implements guide.Store.
func (s *Store) TouchGuideSession(ctx context.Context, g guide.Session) error {
	res, err := s.exec(ctx, `UPDATE guide_sessions SET last_activity = ?, last_seen = ?, expires_at = ? WHERE id_hash = ?`,
		micros(g.LastActivity), micros(g.LastSeen), micros(g.ExpiresAt), g.IDHash)
	return affected(res, err, "guide session")
}

// DeleteGuideSession implements guide.Store.
func (s *Store) DeleteGuideSession(ctx context.Context, idHash []byte) error {
	res, err := s.exec(ctx, `DELETE FROM guide_sessions WHERE id_hash = ?`, idHash)
	return affected(res, err, "guide session")
}

// DeleteExpiredGuideSessions implements guide.Store. One statement deletes
// and returns the rows, so a session is handed to one sweeper only.
func (s *Store) DeleteExpiredGuideSessions(ctx context.Context, now time.Time, limit int) ([]guide.Session, error) {
	rows, err := s.w.QueryContext(ctx, `DELETE FROM guide_sessions WHERE id_hash IN
		(SELECT id_hash FROM guide_sessions WHERE expires_at <= ? ORDER BY expires_at LIMIT ?) RETURNING `+guideSessionCols, micros(now), limit)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []guide.Session{}
	for rows.Next() {
		g, err := scanGuideSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, mapErr(rows.Err())
}

// PutGuideSSO implements guide.Store.
func (s *Store) PutGuideSSO(ctx context.Context, c guide.SSOSettings) error {
	domains, err := json.Marshal(append([]string{}, c.AllowedDomains...))
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO guide_sso (tenant_id, issuer, client_id, client_secret, allowed_domains, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id,
		client_secret = excluded.client_secret, allowed_domains = excluded.allowed_domains, updated_at = excluded.updated_at`,
		c.TenantID, c.Issuer, c.ClientID, c.ClientSecret, string(domains), micros(c.UpdatedAt))
	return mapErr(err)
}

// GetGuideSSO implements guide.Store.
func (s *Store) GetGuideSSO(ctx context.Context, tenantID string) (guide.SSOSettings, error) {
	var (
		c       guide.SSOSettings
		domains string
		updated int64
	)
	err := s.queryRow(ctx, `SELECT tenant_id, issuer, client_id, client_secret, allowed_domains, updated_at FROM guide_sso WHERE tenant_id = ?`, tenantID).
		Scan(&c.TenantID, &c.Issuer, &c.ClientID, &c.ClientSecret, &domains, &updated)
	if err != nil {
		return guide.SSOSettings{}, notFound(err, "single sign-on settings")
	}
	if err := json.Unmarshal([]byte(domains), &c.AllowedDomains); err != nil {
		return guide.SSOSettings{}, fault.E(fault.Internal, err)
	}
	c.UpdatedAt = fromMicros(updated)
	return c, nil
}

// DeleteGuideSSO implements guide.Store.
func (s *Store) DeleteGuideSSO(ctx context.Context, tenantID string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM guide_sso WHERE tenant_id = ?`, tenantID)
	return affected(res, err, "single sign-on settings")
}
