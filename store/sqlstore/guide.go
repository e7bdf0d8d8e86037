package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/guide"
)

var _ guide.Store = (*Store)(nil)

const guideSessionCols = `id_hash, tenant_id, user_id, user_name, method, csrf_token, login_at, last_activity, last_seen, expires_at, amr`

// CreateGuideSession implements guide.Store; the primary key id_hash makes a
// duplicate a Conflict.
func (s *Store) CreateGuideSession(ctx context.Context, g guide.Session) error {
	return s.exec(ctx, `INSERT INTO guide_sessions (`+guideSessionCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		g.IDHash, g.TenantID, g.UserID[:], g.UserName, g.Method, g.CSRFToken, g.LoginAt, g.LastActivity, g.LastSeen, g.ExpiresAt, append([]string{}, g.AMR...))
}

func (s *Store) scanGuideSession(row Row) (guide.Session, error) {
	var (
		g   guide.Session
		uid []byte
	)
	if err := row.Scan(&g.IDHash, &g.TenantID, &uid, &g.UserName, &g.Method, &g.CSRFToken, &g.LoginAt, &g.LastActivity, &g.LastSeen, &g.ExpiresAt, &g.AMR); err != nil {
		return guide.Session{}, s.notFound(err, "guide session")
	}
	if len(g.AMR) == 0 {
		g.AMR = nil // stored before it was kept, or kept empty
	}
	if len(uid) != len(g.UserID) {
		return guide.Session{}, fault.E(fault.Internal, "stored guide session has a malformed user id")
	}
	copy(g.UserID[:], uid)
	return g, nil
}

// GetGuideSession implements guide.Store.
func (s *Store) GetGuideSession(ctx context.Context, idHash []byte) (guide.Session, error) {
	return s.scanGuideSession(s.c.Read().QueryRow(ctx, `SELECT `+guideSessionCols+` FROM guide_sessions WHERE id_hash = $1`, idHash))
}

// TouchGuideSession implements guide.Store.
func (s *Store) TouchGuideSession(ctx context.Context, g guide.Session) error {
	n, err := s.c.Write().Exec(ctx, `UPDATE guide_sessions SET last_activity = $1, last_seen = $2, expires_at = $3 WHERE id_hash = $4`,
		g.LastActivity, g.LastSeen, g.ExpiresAt, g.IDHash)
	return s.affected(n, err, "guide session")
}

// DeleteGuideSession implements guide.Store.
func (s *Store) DeleteGuideSession(ctx context.Context, idHash []byte) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM guide_sessions WHERE id_hash = $1`, idHash)
	return s.affected(n, err, "guide session")
}

// DeleteExpiredGuideSessions implements guide.Store. One statement deletes
// and returns the rows (SKIP LOCKED where several processes sweep), so a
// session is handed to one sweeper only.
func (s *Store) DeleteExpiredGuideSessions(ctx context.Context, now time.Time, limit int) ([]guide.Session, error) {
	return nonNil(list(ctx, s, s.c.Write(), s.scanGuideSession, `DELETE FROM guide_sessions WHERE id_hash IN
		(SELECT id_hash FROM guide_sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2`+s.d.SkipLocked+`) RETURNING `+guideSessionCols, now, limit))
}

// PutGuideSSO implements guide.Store.
func (s *Store) PutGuideSSO(ctx context.Context, c guide.SSOSettings) error {
	return s.exec(ctx, `INSERT INTO guide_sso (tenant_id, issuer, client_id, client_secret, allowed_domains, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id,
		client_secret = excluded.client_secret, allowed_domains = excluded.allowed_domains, updated_at = excluded.updated_at`,
		c.TenantID, c.Issuer, c.ClientID, c.ClientSecret, append([]string{}, c.AllowedDomains...), c.UpdatedAt)
}

// GetGuideSSO implements guide.Store.
func (s *Store) GetGuideSSO(ctx context.Context, tenantID string) (guide.SSOSettings, error) {
	var c guide.SSOSettings
	err := s.c.Read().QueryRow(ctx, `SELECT tenant_id, issuer, client_id, client_secret, allowed_domains, updated_at FROM guide_sso WHERE tenant_id = $1`, tenantID).
		Scan(&c.TenantID, &c.Issuer, &c.ClientID, &c.ClientSecret, &c.AllowedDomains, &c.UpdatedAt)
	if err != nil {
		return guide.SSOSettings{}, s.notFound(err, "single sign-on settings")
	}
	return c, nil
}

// DeleteGuideSSO implements guide.Store.
func (s *Store) DeleteGuideSSO(ctx context.Context, tenantID string) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM guide_sso WHERE tenant_id = $1`, tenantID)
	return s.affected(n, err, "single sign-on settings")
}
