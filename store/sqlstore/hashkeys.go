package sqlstore

import (
	"context"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// UpdatePasswordHash implements identity.Store: a compare-and-swap on the
// stored hash, then, when it changed nothing, a read to tell a user gone
// (NotFound) from a hash changed meanwhile (Conflict).
func (s *Store) UpdatePasswordHash(ctx context.Context, tenantID string, id identity.ObjectID, old, newHash, scheme string) error {
	n, err := s.c.Write().Exec(ctx, `UPDATE users SET password_hash = $1, password_scheme = $2 WHERE tenant_id = $3 AND id = $4 AND password_hash = $5`,
		newHash, scheme, tenantID, id[:], old)
	if err != nil {
		return s.c.MapErr(err)
	}
	if n > 0 {
		return nil
	}
	if _, err := s.GetUser(ctx, tenantID, id); err != nil {
		return err
	}
	return fault.E(fault.Conflict, "the password hash changed meanwhile")
}

const hashKeyCols = `tenant_id, name, algorithm, signer_key, salt_separator, rounds, mem_cost, created_at`

func scanHashKey(row Row) (identity.PasswordHashKey, error) {
	var k identity.PasswordHashKey
	err := row.Scan(&k.TenantID, &k.Name, &k.Algorithm, &k.SealedSignerKey, &k.SaltSeparator, &k.Rounds, &k.MemCost, &k.CreatedAt)
	if len(k.SaltSeparator) == 0 {
		k.SaltSeparator = nil
	}
	return k, err
}

// PutPasswordHashKey implements identity.Store.
func (s *Store) PutPasswordHashKey(ctx context.Context, k identity.PasswordHashKey) error {
	return s.exec(ctx, `INSERT INTO password_hash_keys (`+hashKeyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (tenant_id, name) DO UPDATE SET algorithm = excluded.algorithm, signer_key = excluded.signer_key,
		salt_separator = excluded.salt_separator, rounds = excluded.rounds, mem_cost = excluded.mem_cost, created_at = excluded.created_at`,
		k.TenantID, k.Name, k.Algorithm, k.SealedSignerKey, append([]byte{}, k.SaltSeparator...), k.Rounds, k.MemCost, k.CreatedAt)
}

// GetPasswordHashKey implements identity.Store.
func (s *Store) GetPasswordHashKey(ctx context.Context, tenantID, name string) (identity.PasswordHashKey, error) {
	k, err := scanHashKey(s.c.Read().QueryRow(ctx, `SELECT `+hashKeyCols+` FROM password_hash_keys WHERE tenant_id = $1 AND name = $2`, tenantID, name))
	if err != nil {
		return identity.PasswordHashKey{}, s.notFound(err, "password-hash key")
	}
	return k, nil
}

// ListPasswordHashKeys implements identity.Store.
func (s *Store) ListPasswordHashKeys(ctx context.Context, tenantID string) ([]identity.PasswordHashKey, error) {
	return nonNil(list(ctx, s, s.c.Read(), scanHashKey, `SELECT `+hashKeyCols+` FROM password_hash_keys WHERE tenant_id = $1 ORDER BY name`, tenantID))
}

// DeletePasswordHashKey implements identity.Store.
func (s *Store) DeletePasswordHashKey(ctx context.Context, tenantID, name string) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM password_hash_keys WHERE tenant_id = $1 AND name = $2`, tenantID, name)
	return s.affected(n, err, "password-hash key")
}
