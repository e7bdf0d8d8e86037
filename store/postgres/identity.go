package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.Store = (*Store)(nil)

// jsonText encodes v for a jsonb parameter. A string is sent as JSON text
// as is; a Go nil slice would otherwise become SQL NULL rather than the
// JSON null the SQLite store keeps.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with plain structs and string slices
	}
	return string(b)
}

func unmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fault.E(fault.Internal, err)
	}
	return nil
}

// CreateTenant implements identity.Store.
func (s *Store) CreateTenant(ctx context.Context, t identity.Tenant) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO tenants (id, code, name, settings, exchange_key, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		t.ID, t.Code, t.Name, jsonText(t.Settings), t.ExchangeKey, t.CreatedAt)
	return mapErr(err)
}

const tenantCols = `id, code, name, settings, exchange_key, created_at`

func scanTenant(row pgx.Row) (identity.Tenant, error) {
	var (
		t        identity.Tenant
		settings []byte
	)
	if err := row.Scan(&t.ID, &t.Code, &t.Name, &settings, &t.ExchangeKey, &t.CreatedAt); err != nil {
		return identity.Tenant{}, notFound(err, "tenant")
	}
	if err := unmarshal(settings, &t.Settings); err != nil {
		return identity.Tenant{}, err
	}
	return t, nil
}

// GetTenant implements identity.Store.
func (s *Store) GetTenant(ctx context.Context, id string) (identity.Tenant, error) {
	return scanTenant(s.pool.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE id = $1`, id))
}

// GetTenantByCode implements identity.Store.
func (s *Store) GetTenantByCode(ctx context.Context, code string) (identity.Tenant, error) {
	return scanTenant(s.pool.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE code = $1`, code))
}

// UpdateTenantSettings implements identity.Store.
func (s *Store) UpdateTenantSettings(ctx context.Context, id string, st identity.Settings) error {
	tag, err := s.pool.Exec(ctx, `UPDATE tenants SET settings = $1 WHERE id = $2`, jsonText(st), id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return fault.E(fault.NotFound, "tenant not found")
	}
	return nil
}

// CreateUser implements identity.Store.
func (s *Store) CreateUser(ctx context.Context, u identity.User) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO users (id, tenant_id, name, password_hash, roles, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		u.ID[:], u.TenantID, u.Name, u.PasswordHash, jsonText(u.Roles), u.CreatedAt)
	return mapErr(err)
}

const userCols = `id, tenant_id, name, password_hash, roles, created_at`

func scanUser(row pgx.Row) (identity.User, error) {
	var (
		u         identity.User
		id, roles []byte
	)
	if err := row.Scan(&id, &u.TenantID, &u.Name, &u.PasswordHash, &roles, &u.CreatedAt); err != nil {
		return identity.User{}, notFound(err, "user")
	}
	copy(u.ID[:], id)
	if err := unmarshal(roles, &u.Roles); err != nil {
		return identity.User{}, err
	}
	return u, nil
}

// GetUser implements identity.Store.
func (s *Store) GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error) {
	return scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = $1 AND tenant_id = $2`, id[:], tenantID))
}

// GetUserByName implements identity.Store.
func (s *Store) GetUserByName(ctx context.Context, tenantID, name string) (identity.User, error) {
	return scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE tenant_id = $1 AND name = $2`, tenantID, name))
}

// CreateOAuthClient implements identity.Store.
func (s *Store) CreateOAuthClient(ctx context.Context, c identity.OAuthClient) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO oauth_clients (id, tenant_id, name, secret_hash, scopes, role, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		c.ID, c.TenantID, c.Name, c.SecretHash, jsonText(c.Scopes), c.Role, c.CreatedAt)
	return mapErr(err)
}

// GetOAuthClient implements identity.Store.
func (s *Store) GetOAuthClient(ctx context.Context, id string) (identity.OAuthClient, error) {
	var (
		c      identity.OAuthClient
		scopes []byte
	)
	err := s.pool.QueryRow(ctx, `SELECT id, tenant_id, name, secret_hash, scopes, role, created_at FROM oauth_clients WHERE id = $1`, id).
		Scan(&c.ID, &c.TenantID, &c.Name, &c.SecretHash, &scopes, &c.Role, &c.CreatedAt)
	if err != nil {
		return identity.OAuthClient{}, notFound(err, "client")
	}
	if err := unmarshal(scopes, &c.Scopes); err != nil {
		return identity.OAuthClient{}, err
	}
	return c, nil
}

// CreateAPIKey implements identity.Store.
func (s *Store) CreateAPIKey(ctx context.Context, k identity.APIKey) error {
	var uid []byte // nil: SQL NULL, an unbound key
	if k.UserID != nil {
		uid = k.UserID[:]
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO api_keys (id, hash, tenant_id, name, user_id, areas, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		k.ID, k.Hash, k.TenantID, k.Name, uid, jsonText(k.Areas), k.CreatedAt, k.RevokedAt)
	return mapErr(err)
}

// GetAPIKeyByHash implements identity.Store.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (identity.APIKey, error) {
	var (
		k          identity.APIKey
		uid, areas []byte
	)
	err := s.pool.QueryRow(ctx, `SELECT id, hash, tenant_id, name, user_id, areas, created_at, revoked_at FROM api_keys WHERE hash = $1`, hash).
		Scan(&k.ID, &k.Hash, &k.TenantID, &k.Name, &uid, &areas, &k.CreatedAt, &k.RevokedAt)
	if err != nil {
		return identity.APIKey{}, notFound(err, "api key")
	}
	if len(uid) == len(identity.ObjectID{}) {
		var id identity.ObjectID
		copy(id[:], uid)
		k.UserID = &id
	}
	if err := unmarshal(areas, &k.Areas); err != nil {
		return identity.APIKey{}, err
	}
	return k, nil
}

// CreateSigningKey implements identity.Store.
func (s *Store) CreateSigningKey(ctx context.Context, k identity.SigningKey) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO signing_keys (id, algorithm, private, public, created_at) VALUES ($1, $2, $3, $4, $5)`,
		k.ID, k.Algorithm, k.Private, k.Public, k.CreatedAt)
	return mapErr(err)
}

// ListSigningKeys implements identity.Store.
func (s *Store) ListSigningKeys(ctx context.Context) ([]identity.SigningKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, algorithm, private, public, created_at FROM signing_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, mapErr(err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (identity.SigningKey, error) {
		var k identity.SigningKey
		err := row.Scan(&k.ID, &k.Algorithm, &k.Private, &k.Public, &k.CreatedAt)
		return k, err
	})
	return keys, mapErr(err)
}

// CreateRefreshToken implements identity.Store.
func (s *Store) CreateRefreshToken(ctx context.Context, t identity.RefreshToken) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO refresh_tokens (hash, tenant_id, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)`,
		t.Hash, t.TenantID, t.UserID[:], t.ExpiresAt, t.CreatedAt)
	return mapErr(err)
}

// UseRefreshToken implements identity.Store. One DELETE ... RETURNING
// statement: of concurrent callers (in any process) exactly one gets the
// row. An expired token is deleted too, since it can never be used again.
func (s *Store) UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (identity.RefreshToken, error) {
	var (
		t   identity.RefreshToken
		uid []byte
	)
	err := s.pool.QueryRow(ctx, `DELETE FROM refresh_tokens WHERE hash = $1 RETURNING hash, tenant_id, user_id, expires_at, created_at`, hash).
		Scan(&t.Hash, &t.TenantID, &uid, &t.ExpiresAt, &t.CreatedAt)
	if err != nil {
		return identity.RefreshToken{}, notFound(err, "refresh token")
	}
	copy(t.UserID[:], uid)
	if !now.Before(t.ExpiresAt) {
		return identity.RefreshToken{}, fault.E(fault.NotFound, "refresh token expired")
	}
	return t, nil
}

// RevokeSubject implements identity.Store.
func (s *Store) RevokeSubject(ctx context.Context, r identity.Revocation) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM revocations WHERE until < $1`, r.At); err != nil {
		return mapErr(err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO revocations (tenant_id, subject, at, until) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
		r.TenantID, r.Subject, r.At, r.Until)
	return mapErr(err)
}

// ListRevocations implements identity.Store.
func (s *Store) ListRevocations(ctx context.Context, since time.Time) ([]identity.Revocation, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, subject, at, until FROM revocations WHERE at > $1 ORDER BY at, tenant_id, subject`, since)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []identity.Revocation
	for rows.Next() {
		var r identity.Revocation
		if err := rows.Scan(&r.TenantID, &r.Subject, &r.At, &r.Until); err != nil {
			return nil, mapErr(err)
		}
		r.At, r.Until = r.At.UTC(), r.Until.UTC()
		out = append(out, r)
	}
	return out, mapErr(rows.Err())
}
