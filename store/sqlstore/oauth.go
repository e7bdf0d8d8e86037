package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// The OAuth state beyond clients: revoked tokens (RFC 7009) and used DPoP
// proofs (RFC 9449), the replay guard shared by every process on the
// database.

// RevokeToken implements identity.Store.
func (s *Store) RevokeToken(ctx context.Context, t identity.RevokedToken) error {
	if err := s.exec(ctx, `DELETE FROM revoked_tokens WHERE expires_at < $1`, t.RevokedAt); err != nil {
		return err
	}
	return s.exec(ctx, `INSERT INTO revoked_tokens (jti, tenant_id, expires_at, revoked_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
		t.JTI, t.TenantID, t.ExpiresAt, t.RevokedAt)
}

// ListRevokedTokens implements identity.Store.
func (s *Store) ListRevokedTokens(ctx context.Context, since time.Time) ([]identity.RevokedToken, error) {
	return list(ctx, s, s.c.Read(), func(row Row) (identity.RevokedToken, error) {
		var t identity.RevokedToken
		err := row.Scan(&t.JTI, &t.TenantID, &t.ExpiresAt, &t.RevokedAt)
		return t, err
	}, `SELECT jti, tenant_id, expires_at, revoked_at FROM revoked_tokens WHERE revoked_at > $1 ORDER BY revoked_at, jti`, since)
}

// UseDPoPProof implements identity.Store. One upsert: of concurrent
// callers with the same hash (in any process) exactly one inserts the row
// or takes over an expired one; the others change nothing and get
// Conflict.
func (s *Store) UseDPoPProof(ctx context.Context, p identity.DPoPProofUse, now time.Time) error {
	n, err := s.c.Write().Exec(ctx, `INSERT INTO dpop_proofs (hash, expires_at) VALUES ($1, $2)
		ON CONFLICT (hash) DO UPDATE SET expires_at = excluded.expires_at WHERE dpop_proofs.expires_at <= $3`,
		p.Hash, p.ExpiresAt, now)
	if err != nil {
		return s.c.MapErr(err)
	}
	if n == 0 {
		return fault.E(fault.Conflict, "DPoP proof already used")
	}
	return nil
}

// PurgeDPoPProofs implements identity.Store.
func (s *Store) PurgeDPoPProofs(ctx context.Context, now time.Time) error {
	return s.exec(ctx, `DELETE FROM dpop_proofs WHERE expires_at <= $1`, now)
}
