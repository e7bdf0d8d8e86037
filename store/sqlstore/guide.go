package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/audit"
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

// DeleteExpiredGuideSessions implements guide.Store. Without build, one
// statement deletes and returns the rows (SKIP LOCKED where several
// processes sweep), so a session is handed to one sweeper only.
//
// With build, the due rows are read first and built outside the write
// transaction (on SQLite it holds the only writer connection, which the
// recorder may need). The transaction then deletes each of them still due
// (SKIP LOCKED: a row another sweeper holds is its to delete and record)
// and appends the records of the rows it deleted. It locks those rows
// before the audit chain heads, as every transaction taking both does.
func (s *Store) DeleteExpiredGuideSessions(ctx context.Context, now time.Time, limit int, build func(guide.Session) (*audit.Record, error)) ([]guide.Session, error) {
	if build == nil {
		return nonNil(list(ctx, s, s.c.Write(), s.scanGuideSession, `DELETE FROM guide_sessions WHERE id_hash IN
		(SELECT id_hash FROM guide_sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2`+s.d.SkipLocked+`) RETURNING `+guideSessionCols, now, limit))
	}
	due, err := list(ctx, s, s.c.Read(), s.scanGuideSession, `SELECT `+guideSessionCols+` FROM guide_sessions WHERE expires_at <= $1
		ORDER BY expires_at, id_hash LIMIT $2`, now, limit)
	if err != nil || len(due) == 0 {
		return nonNil(due, err)
	}
	recs := make([]*audit.Record, len(due))
	for i, g := range due {
		if recs[i], err = build(g); err != nil {
			return nil, err
		}
	}
	var out []guide.Session
	err = s.c.Tx(ctx, func(q Querier) error {
		out = []guide.Session{}
		deleted := make([][]guide.Session, len(due))
		b := &Batch{}
		for i, g := range due {
			b.Query(func(rows Rows) (err error) {
				deleted[i], err = appendRows(nil, rows, s.scanGuideSession)
				return err
			}, `DELETE FROM guide_sessions WHERE id_hash IN (SELECT id_hash FROM guide_sessions WHERE id_hash = $1 AND expires_at <= $2`+s.d.SkipLocked+`)
				RETURNING `+guideSessionCols, g.IDHash, now)
		}
		if err := q.Batch(ctx, b); err != nil {
			return err
		}
		var chosen []*audit.Record
		for i, d := range deleted {
			if len(d) == 0 {
				continue // deleted meanwhile, by whoever recorded it
			}
			if !guide.SameSession(d[0], due[i]) {
				return fault.E(fault.Conflict, "a guide session changed while it was swept")
			}
			out = append(out, d[0])
			if recs[i] != nil {
				chosen = append(chosen, recs[i])
			}
		}
		if len(chosen) == 0 {
			return nil
		}
		return appendAuditTx(ctx, q, nil, chosen)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
