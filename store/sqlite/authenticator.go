package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var _ authenticator.Store = (*Store)(nil)

const authnCols = `tenant_id, id, user_id, type, state, last_used_at, last_success_at, created_at, updated_at, aaguid,
	friendly_name, rp_id, sign_count, cose_alg, provenance, public_key, attestation_format, attestation_type`

func nullMicros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return micros(*t)
}

func fromNullMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// CreateAuthenticator implements authenticator.Store. The primary key
// (tenant_id, id) makes a duplicate credential a Conflict.
func (s *Store) CreateAuthenticator(ctx context.Context, a authenticator.Authenticator) error {
	_, err := s.exec(ctx, `INSERT INTO authenticators (`+authnCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.TenantID, a.ID, a.UserID[:], a.Type, a.State, nullMicros(a.LastUsedAt), nullMicros(a.LastSuccessAt), micros(a.CreatedAt),
		micros(a.UpdatedAt), a.AAGUID, a.FriendlyName, a.RPID, a.SignCount, a.COSEAlg, a.Provenance, a.PublicKey,
		a.AttestationFormat, a.AttestationType)
	return mapErr(err)
}

func scanAuthenticator(row interface{ Scan(...any) error }) (authenticator.Authenticator, error) {
	var (
		a                authenticator.Authenticator
		uid              []byte
		used, success    sql.NullInt64
		created, updated int64
	)
	if err := row.Scan(&a.TenantID, &a.ID, &uid, &a.Type, &a.State, &used, &success, &created, &updated, &a.AAGUID,
		&a.FriendlyName, &a.RPID, &a.SignCount, &a.COSEAlg, &a.Provenance, &a.PublicKey, &a.AttestationFormat, &a.AttestationType); err != nil {
		return authenticator.Authenticator{}, notFound(err, "authenticator")
	}
	copy(a.UserID[:], uid)
	a.LastUsedAt, a.LastSuccessAt = fromNullMicros(used), fromNullMicros(success)
	a.CreatedAt, a.UpdatedAt = fromMicros(created), fromMicros(updated)
	return a, nil
}

// GetAuthenticator implements authenticator.Store.
func (s *Store) GetAuthenticator(ctx context.Context, tenantID, id string) (authenticator.Authenticator, error) {
	return scanAuthenticator(s.queryRow(ctx, `SELECT `+authnCols+` FROM authenticators WHERE tenant_id = ? AND id = ?`, tenantID, id))
}

// ListAuthenticators implements authenticator.Store. The page and the
// total are read in one read transaction, so they agree.
func (s *Store) ListAuthenticators(ctx context.Context, tenantID string, userID identity.ObjectID, offset, limit int) ([]authenticator.Authenticator, int, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	defer tx.Rollback()
	var total int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM authenticators WHERE tenant_id = ? AND user_id = ?`, tenantID, userID[:]).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+authnCols+` FROM authenticators WHERE tenant_id = ? AND user_id = ?
		ORDER BY created_at, id LIMIT ? OFFSET ?`, tenantID, userID[:], limit, offset)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	defer rows.Close()
	out := []authenticator.Authenticator{}
	for rows.Next() {
		a, err := scanAuthenticator(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, a)
	}
	return out, total, mapErr(rows.Err())
}

// UpdateAuthenticator implements authenticator.Store: the UPDATE matches
// only the row still at prevUpdatedAt; when none matched, the row is
// looked up to tell NotFound from Conflict.
func (s *Store) UpdateAuthenticator(ctx context.Context, a authenticator.Authenticator, prevUpdatedAt time.Time) error {
	res, err := s.exec(ctx, `UPDATE authenticators SET state = ?, friendly_name = ?, sign_count = ?, last_used_at = ?, last_success_at = ?,
		updated_at = ? WHERE tenant_id = ? AND id = ? AND updated_at = ?`,
		a.State, a.FriendlyName, a.SignCount, nullMicros(a.LastUsedAt), nullMicros(a.LastSuccessAt), micros(a.UpdatedAt),
		a.TenantID, a.ID, micros(prevUpdatedAt))
	if err := affected(res, err, "authenticator"); !fault.Is(fault.NotFound, err) {
		return err
	}
	if _, err := s.GetAuthenticator(ctx, a.TenantID, a.ID); err != nil {
		return err
	}
	return fault.E(fault.Conflict, "authenticator changed")
}

// DeleteAuthenticator implements authenticator.Store.
func (s *Store) DeleteAuthenticator(ctx context.Context, tenantID, id string) error {
	res, err := s.exec(ctx, `DELETE FROM authenticators WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return affected(res, err, "authenticator")
}

// CreateChallenge implements authenticator.Store.
func (s *Store) CreateChallenge(ctx context.Context, c authenticator.Challenge) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM webauthn_challenges WHERE expires_at < ?`, micros(c.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO webauthn_challenges (tenant_id, value, user_id, ceremony, user_verification, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, c.TenantID, c.Value, c.UserID[:], c.Ceremony, c.UserVerification, micros(c.CreatedAt), micros(c.ExpiresAt))
		return err
	})
}

// TakeChallenge implements authenticator.Store: DELETE ... RETURNING takes
// the row once, whoever else tries at the same time.
func (s *Store) TakeChallenge(ctx context.Context, tenantID, value string) (authenticator.Challenge, error) {
	c := authenticator.Challenge{TenantID: tenantID, Value: value}
	var (
		uid              []byte
		created, expires int64
	)
	err := s.w.QueryRowContext(ctx, `DELETE FROM webauthn_challenges WHERE tenant_id = ? AND value = ?
		RETURNING user_id, ceremony, user_verification, created_at, expires_at`, tenantID, value).
		Scan(&uid, &c.Ceremony, &c.UserVerification, &created, &expires)
	if err != nil {
		return authenticator.Challenge{}, notFound(err, "challenge")
	}
	copy(c.UserID[:], uid)
	c.CreatedAt, c.ExpiresAt = fromMicros(created), fromMicros(expires)
	return c, nil
}

var _ authenticator.BatchStore = (*Store)(nil)

// CreateAuthenticators implements authenticator.BatchStore: one write
// transaction, each row inserted unless its key exists (ON CONFLICT DO
// NOTHING), so a duplicate fails alone.
func (s *Store) CreateAuthenticators(ctx context.Context, as []authenticator.Authenticator) ([]error, error) {
	return s.CreateAuthenticatorsAudited(ctx, as, make([]*audit.Record, len(as)), make([]*audit.Record, len(as)))
}

var _ authenticator.AuditedBatchStore = (*Store)(nil)

// CreateAuthenticatorsAudited implements authenticator.AuditedBatchStore:
// CreateAuthenticators plus the chosen audit records, in one transaction.
func (s *Store) CreateAuthenticatorsAudited(ctx context.Context, as []authenticator.Authenticator, ok, conflict []*audit.Record) ([]error, error) {
	errs := make([]error, len(as))
	err := s.tx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO authenticators (`+authnCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant_id, id) DO NOTHING`)
		if err != nil {
			return err
		}
		defer st.Close()
		var recs []*audit.Record
		for i, a := range as {
			res, err := st.ExecContext(ctx, a.TenantID, a.ID, a.UserID[:], a.Type, a.State, nullMicros(a.LastUsedAt), nullMicros(a.LastSuccessAt),
				micros(a.CreatedAt), micros(a.UpdatedAt), a.AAGUID, a.FriendlyName, a.RPID, a.SignCount, a.COSEAlg, a.Provenance, a.PublicKey,
				a.AttestationFormat, a.AttestationType)
			if err != nil {
				return err
			}
			rec := ok[i]
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				errs[i], rec = fault.E(fault.Conflict, "authenticator exists"), conflict[i]
			}
			if rec != nil {
				recs = append(recs, rec)
			}
		}
		if len(recs) > 0 {
			return s.appendAudit(ctx, tx, recs)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}
