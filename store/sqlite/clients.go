package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/clients"
)

var _ clients.Store = (*Store)(nil)

// CreateClientCA implements clients.Store. The table holds at most one row
// (id = 1), so a second CA is a primary key violation: Conflict.
func (s *Store) CreateClientCA(ctx context.Context, ca clients.CA) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO client_ca (id, cert_pem, sealed_key, created_at) VALUES (1, ?, ?, ?)`,
		ca.CertPEM, ca.SealedKey, micros(ca.CreatedAt))
	return mapErr(err)
}

// GetClientCA implements clients.Store.
func (s *Store) GetClientCA(ctx context.Context) (clients.CA, error) {
	var (
		ca      clients.CA
		created int64
	)
	err := s.r.QueryRowContext(ctx, `SELECT cert_pem, sealed_key, created_at FROM client_ca WHERE id = 1`).Scan(&ca.CertPEM, &ca.SealedKey, &created)
	if err != nil {
		return clients.CA{}, notFound(err, "client CA")
	}
	ca.CreatedAt = fromMicros(created)
	return ca, nil
}

// CreateProfile implements clients.Store.
func (s *Store) CreateProfile(ctx context.Context, p clients.Profile) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO client_profiles (id, tenant_id, name, subject_field, cert_lifetime_days, role, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.TenantID, p.Name, p.SubjectField, p.CertLifetimeDays, p.Role, micros(p.CreatedAt))
	return mapErr(err)
}

const profileCols = `id, tenant_id, name, subject_field, cert_lifetime_days, role, created_at`

func scanProfile(row *sql.Row) (clients.Profile, error) {
	var (
		p       clients.Profile
		created int64
	)
	if err := row.Scan(&p.ID, &p.TenantID, &p.Name, &p.SubjectField, &p.CertLifetimeDays, &p.Role, &created); err != nil {
		return clients.Profile{}, notFound(err, "profile")
	}
	p.CreatedAt = fromMicros(created)
	return p, nil
}

// GetProfile implements clients.Store.
func (s *Store) GetProfile(ctx context.Context, tenantID, id string) (clients.Profile, error) {
	return scanProfile(s.r.QueryRowContext(ctx, `SELECT `+profileCols+` FROM client_profiles WHERE tenant_id = ? AND id = ?`, tenantID, id))
}

// GetProfileByName implements clients.Store.
func (s *Store) GetProfileByName(ctx context.Context, tenantID, name string) (clients.Profile, error) {
	return scanProfile(s.r.QueryRowContext(ctx, `SELECT `+profileCols+` FROM client_profiles WHERE tenant_id = ? AND name = ?`, tenantID, name))
}

// CreateRegistrationToken implements clients.Store.
func (s *Store) CreateRegistrationToken(ctx context.Context, t clients.RegistrationToken) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO registration_tokens (id, tenant_id, profile_id, hash, max_clients, used, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.TenantID, t.ProfileID, t.Hash, t.MaxClients, t.Used, micros(t.ExpiresAt), micros(t.CreatedAt))
	return mapErr(err)
}

const regTokenCols = `id, tenant_id, profile_id, hash, max_clients, used, expires_at, created_at`

func scanRegToken(row interface{ Scan(...any) error }) (clients.RegistrationToken, error) {
	var (
		t                clients.RegistrationToken
		expires, created int64
	)
	if err := row.Scan(&t.ID, &t.TenantID, &t.ProfileID, &t.Hash, &t.MaxClients, &t.Used, &expires, &created); err != nil {
		return clients.RegistrationToken{}, notFound(err, "registration token")
	}
	t.ExpiresAt, t.CreatedAt = fromMicros(expires), fromMicros(created)
	return t, nil
}

// GetRegistrationTokenByHash implements clients.Store.
func (s *Store) GetRegistrationTokenByHash(ctx context.Context, hash []byte) (clients.RegistrationToken, error) {
	return scanRegToken(s.r.QueryRowContext(ctx, `SELECT `+regTokenCols+` FROM registration_tokens WHERE hash = ?`, hash))
}

// UseRegistrationToken implements clients.Store. One conditional UPDATE
// checks and increments, so it is atomic without a read-modify-write; when
// it matches nothing, a read in the same transaction says why.
func (s *Store) UseRegistrationToken(ctx context.Context, hash []byte, now time.Time) (clients.RegistrationToken, error) {
	var t clients.RegistrationToken
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		t, err = scanRegToken(tx.QueryRowContext(ctx, `UPDATE registration_tokens SET used = used + 1
			WHERE hash = ? AND used < max_clients AND expires_at > ? RETURNING `+regTokenCols, hash, micros(now)))
		if !fault.Is(fault.NotFound, err) {
			return err
		}
		cur, err := scanRegToken(tx.QueryRowContext(ctx, `SELECT `+regTokenCols+` FROM registration_tokens WHERE hash = ?`, hash))
		switch {
		case err != nil:
			return err
		case !now.Before(cur.ExpiresAt):
			return fault.E(fault.Expired, "registration token expired")
		default:
			return fault.E(fault.Conflict, "registration token used up")
		}
	})
	if err != nil {
		return clients.RegistrationToken{}, err
	}
	return t, nil
}

// CreateClient implements clients.Store.
func (s *Store) CreateClient(ctx context.Context, c clients.Client) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO registered_clients (id, tenant_id, name, profile_id, registration_token_id, role, subject_dn,
		certificate_pem, fingerprint, serial, not_before, not_after, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.TenantID, c.Name, c.ProfileID, c.RegistrationTokenID, c.Role, c.SubjectDN, c.CertificatePEM, c.Fingerprint, c.Serial,
		micros(c.NotBefore), micros(c.NotAfter), micros(c.CreatedAt))
	return mapErr(err)
}

const clientCols = `id, tenant_id, name, profile_id, registration_token_id, role, subject_dn, certificate_pem, fingerprint, serial, not_before, not_after, created_at`

func scanClient(row interface{ Scan(...any) error }) (clients.Client, error) {
	var (
		c                   clients.Client
		nb, na, createdTime int64
	)
	if err := row.Scan(&c.ID, &c.TenantID, &c.Name, &c.ProfileID, &c.RegistrationTokenID, &c.Role, &c.SubjectDN, &c.CertificatePEM,
		&c.Fingerprint, &c.Serial, &nb, &na, &createdTime); err != nil {
		return clients.Client{}, notFound(err, "client")
	}
	c.NotBefore, c.NotAfter, c.CreatedAt = fromMicros(nb), fromMicros(na), fromMicros(createdTime)
	return c, nil
}

// GetClient implements clients.Store.
func (s *Store) GetClient(ctx context.Context, tenantID, id string) (clients.Client, error) {
	return scanClient(s.r.QueryRowContext(ctx, `SELECT `+clientCols+` FROM registered_clients WHERE tenant_id = ? AND id = ?`, tenantID, id))
}

// LookupClient implements clients.Store.
func (s *Store) LookupClient(ctx context.Context, id string) (clients.Client, error) {
	return scanClient(s.r.QueryRowContext(ctx, `SELECT `+clientCols+` FROM registered_clients WHERE id = ?`, id))
}

// ListClients implements clients.Store.
func (s *Store) ListClients(ctx context.Context, tenantID string) ([]clients.Client, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+clientCols+` FROM registered_clients WHERE tenant_id = ? ORDER BY created_at, id`, tenantID)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []clients.Client{}
	for rows.Next() {
		c, err := scanClient(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, mapErr(rows.Err())
}

// DeleteClient implements clients.Store.
func (s *Store) DeleteClient(ctx context.Context, tenantID, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM registered_clients WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return affected(res, err, "client")
}
