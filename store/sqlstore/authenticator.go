package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var _ authenticator.Store = (*Store)(nil)

const (
	authnCols = `tenant_id, id, user_id, type, state, last_used_at, last_success_at, created_at, updated_at, aaguid,
	friendly_name, rp_id, sign_count, cose_alg, provenance, public_key, attestation_format, attestation_type`
	insertAuthn = `INSERT INTO authenticators (` + authnCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`
)

func authnArgs(a authenticator.Authenticator) []any {
	return []any{a.TenantID, a.ID, a.UserID[:], a.Type, a.State, a.LastUsedAt, a.LastSuccessAt, a.CreatedAt, a.UpdatedAt, a.AAGUID,
		a.FriendlyName, a.RPID, a.SignCount, a.COSEAlg, a.Provenance, a.PublicKey, a.AttestationFormat, a.AttestationType}
}

// CreateAuthenticator implements authenticator.Store. The primary key
// (tenant_id, id) makes a duplicate credential a Conflict.
func (s *Store) CreateAuthenticator(ctx context.Context, a authenticator.Authenticator) error {
	return s.exec(ctx, insertAuthn, authnArgs(a)...)
}

func (s *Store) scanAuthenticator(row Row) (authenticator.Authenticator, error) {
	var (
		a   authenticator.Authenticator
		uid []byte
	)
	if err := row.Scan(&a.TenantID, &a.ID, &uid, &a.Type, &a.State, &a.LastUsedAt, &a.LastSuccessAt, &a.CreatedAt, &a.UpdatedAt, &a.AAGUID,
		&a.FriendlyName, &a.RPID, &a.SignCount, &a.COSEAlg, &a.Provenance, &a.PublicKey, &a.AttestationFormat, &a.AttestationType); err != nil {
		return authenticator.Authenticator{}, s.notFound(err, "authenticator")
	}
	copy(a.UserID[:], uid)
	if a.Provenance == authenticator.ProvenanceSelf { // a passkey stored before passkeys were inline
		a.Provenance = authenticator.ProvenanceInline
	}
	return a, nil
}

// GetAuthenticator implements authenticator.Store.
func (s *Store) GetAuthenticator(ctx context.Context, tenantID, id string) (authenticator.Authenticator, error) {
	return s.scanAuthenticator(s.c.Read().QueryRow(ctx, `SELECT `+authnCols+` FROM authenticators WHERE tenant_id = $1 AND id = $2`, tenantID, id))
}

// ListAuthenticators implements authenticator.Store: the page and the
// total in one snapshot.
func (s *Store) ListAuthenticators(ctx context.Context, tenantID string, userID identity.ObjectID, offset, limit int) ([]authenticator.Authenticator, int, error) {
	return countedPage(ctx, s, s.scanAuthenticator, `SELECT count(*) FROM authenticators WHERE tenant_id = $1 AND user_id = $2`, []any{tenantID, userID[:]},
		`SELECT `+authnCols+` FROM authenticators WHERE tenant_id = $1 AND user_id = $2 ORDER BY created_at, id LIMIT $3 OFFSET $4`,
		tenantID, userID[:], limit, offset)
}

// UpdateAuthenticator implements authenticator.Store: the UPDATE matches
// only the row still at prevUpdatedAt; when none matched, the row is
// looked up to tell NotFound from Conflict.
func (s *Store) UpdateAuthenticator(ctx context.Context, a authenticator.Authenticator, prevUpdatedAt time.Time) error {
	n, err := s.c.Write().Exec(ctx, `UPDATE authenticators SET state = $1, friendly_name = $2, sign_count = $3, last_used_at = $4,
		last_success_at = $5, updated_at = $6 WHERE tenant_id = $7 AND id = $8 AND updated_at = $9`,
		a.State, a.FriendlyName, a.SignCount, a.LastUsedAt, a.LastSuccessAt, a.UpdatedAt, a.TenantID, a.ID, prevUpdatedAt)
	if err := s.affected(n, err, "authenticator"); !fault.Is(fault.NotFound, err) {
		return err
	}
	if _, err := s.GetAuthenticator(ctx, a.TenantID, a.ID); err != nil {
		return err
	}
	return fault.E(fault.Conflict, "authenticator changed")
}

// DeleteAuthenticator implements authenticator.Store.
func (s *Store) DeleteAuthenticator(ctx context.Context, tenantID, id string) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM authenticators WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	return s.affected(n, err, "authenticator")
}

// CreateChallenge implements authenticator.Store; it also sweeps expired
// challenges.
func (s *Store) CreateChallenge(ctx context.Context, c authenticator.Challenge) error {
	return s.c.Tx(ctx, func(q Querier) error {
		b := &Batch{}
		b.Exec(nil, `DELETE FROM webauthn_challenges WHERE expires_at < $1`, c.CreatedAt)
		b.Exec(nil, `INSERT INTO webauthn_challenges (tenant_id, value, user_id, ceremony, user_verification, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, c.TenantID, c.Value, c.UserID[:], c.Ceremony, c.UserVerification, c.CreatedAt, c.ExpiresAt)
		return q.Batch(ctx, b)
	})
}

// TakeChallenge implements authenticator.Store: DELETE ... RETURNING takes
// the row once, whoever else tries at the same time.
func (s *Store) TakeChallenge(ctx context.Context, tenantID, value string) (authenticator.Challenge, error) {
	c := authenticator.Challenge{TenantID: tenantID, Value: value}
	var uid []byte
	err := s.c.Write().QueryRow(ctx, `DELETE FROM webauthn_challenges WHERE tenant_id = $1 AND value = $2
		RETURNING user_id, ceremony, user_verification, created_at, expires_at`, tenantID, value).
		Scan(&uid, &c.Ceremony, &c.UserVerification, &c.CreatedAt, &c.ExpiresAt)
	if err != nil {
		return authenticator.Challenge{}, s.notFound(err, "challenge")
	}
	copy(c.UserID[:], uid)
	return c, nil
}

var _ authenticator.BatchStore = (*Store)(nil)

// CreateAuthenticators implements authenticator.BatchStore: one
// transaction, each row inserted unless its key exists (ON CONFLICT DO
// NOTHING), so a duplicate fails alone.
func (s *Store) CreateAuthenticators(ctx context.Context, as []authenticator.Authenticator) ([]error, error) {
	return s.CreateAuthenticatorsAudited(ctx, as, make([]*audit.Record, len(as)), make([]*audit.Record, len(as)))
}

var _ authenticator.AuditedBatchStore = (*Store)(nil)

// CreateAuthenticatorsAudited implements authenticator.AuditedBatchStore in
// one pipelined transaction: the inserts and the locks of the audit heads
// first, then the records chosen by each insert's outcome.
func (s *Store) CreateAuthenticatorsAudited(ctx context.Context, as []authenticator.Authenticator, ok, conflict []*audit.Record) ([]error, error) {
	// Every candidate record's tenant is locked; the records written are
	// picked among them by each insert's outcome.
	var all []*audit.Record
	okAt, conflictAt := make([]int, len(as)), make([]int, len(as))
	for i := range as {
		okAt[i], conflictAt[i] = -1, -1
		if ok[i] != nil {
			okAt[i] = len(all)
			all = append(all, ok[i])
		}
		if conflict[i] != nil {
			conflictAt[i] = len(all)
			all = append(all, conflict[i])
		}
	}
	full := newAuditAppend(all)
	var errs []error
	err := s.c.Pipeline(ctx, func(b *Batch) {
		errs = make([]error, len(as))
		for i, a := range as {
			b.Exec(func(n int64) error {
				if n == 0 {
					errs[i] = fault.E(fault.Conflict, "authenticator exists")
				}
				return nil
			}, insertAuthn+` ON CONFLICT (tenant_id, id) DO NOTHING`, authnArgs(a)...)
		}
		full.lock(b)
	}, func(b *Batch) {
		chosen := &auditAppend{tenants: full.tenants, heads: full.heads}
		for i := range as {
			at := okAt[i]
			if errs[i] != nil {
				at = conflictAt[i]
			}
			if at >= 0 {
				chosen.recs = append(chosen.recs, full.recs[at])
			}
		}
		chosen.write(b)
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}
